/**
 * Makes `require("vscode")` resolve to test/stubs/vscode. Import this before any module that
 * imports vscode.
 */
import Module = require("module");
import * as path from "path";

const stub = path.resolve(__dirname, "..", "stubs", "vscode.js");
const M = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
const original = M._resolveFilename;
M._resolveFilename = function (request: string, ...rest: unknown[]): string {
  if (request === "vscode") return stub;
  return original.call(this, request, ...rest);
};
