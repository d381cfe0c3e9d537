// Bundles the extension (Node, CommonJS, `vscode` external) and the webview page script
// (browser IIFE) into dist/. Usage: node scripts/build.mjs
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";
import * as path from "node:path";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const common = { bundle: true, logLevel: "warning", absWorkingDir: root, legalComments: "none" };

await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node18",
    external: ["vscode"],
  }),
  esbuild.build({
    ...common,
    entryPoints: ["src/webview/main.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "es2020",
  }),
]);
