import "../support/install-vscode-stub";
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { ARTIFACTS, ROOT } from "../support/paths";
import * as vscode from "../stubs/vscode";

const VSIX = path.join(ARTIFACTS, "osprey-profiler.vsix");

test("vsce packages the extension into a .vsix without prompting", { timeout: 300_000 }, () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.rmSync(VSIX, { force: true });
  const vsce = path.join(ROOT, "node_modules", "@vscode", "vsce", "vsce");
  const r = spawnSync(
    process.execPath,
    // No --skip-license, no --allow-missing-repository: the package is fit to publish.
    [vsce, "package", "--no-dependencies", "-o", VSIX],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8", timeout: 280_000 },
  );
  assert.equal(r.status, 0, `vsce failed:\n${r.stdout}\n${r.stderr}`);
  assert.doesNotMatch(`${r.stdout}\n${r.stderr}`, /WARNING/, "vsce has nothing to warn about");
  assert.ok(fs.existsSync(VSIX));
  const list = spawnSync("python3", ["-c", "import json,sys,zipfile; print(json.dumps(zipfile.ZipFile(sys.argv[1]).namelist()))", VSIX], {
    encoding: "utf8",
  });
  assert.equal(list.status, 0, list.stderr);
  const names: string[] = JSON.parse(list.stdout);
  // vsce 2 keeps README.md as written, vsce 3 lower-cases it: compare without case
  const lower = names.map((n) => n.toLowerCase());
  for (const n of [
    "extension.vsixmanifest",
    "[content_types].xml",
    "extension/package.json",
    "extension/readme.md",
    "extension/license.txt",
    "extension/images/icon.png",
    "extension/syntaxes/osprey.tmlanguage.json",
    "extension/language-configuration.json",
    "extension/dist/extension.js",
    "extension/dist/webview.js",
  ]) {
    assert.ok(lower.includes(n), `${n} in ${names.join(", ")}`);
  }
  assert.deepEqual(
    names.filter((n) => /^extension\/(node_modules|src|test|out|fixtures|scripts)\//.test(n)),
    [],
    "no sources, tests or dependencies in the package",
  );
});

test("the bundled extension activates and registers its commands", () => {
  const bundle = path.join(ROOT, "dist", "extension.js");
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ext = require(bundle) as { activate(c: unknown): unknown; deactivate(): void };
  const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: vscode.Uri.file(ROOT) };
  vscode.recorded.commands.clear();
  ext.activate(context);
  assert.deepEqual([...vscode.recorded.commands.keys()].sort(), ["osprey.profileCurrentFile", "osprey.profiler.openFile", "osprey.profiler.openLast"]);
  assert.deepEqual([...vscode.recorded.customEditors.keys()], ["osprey.profileViewer"]);
  for (const d of context.subscriptions) d.dispose();
  ext.deactivate();
  // The webview bundle has no Node-only imports left in it.
  const web = fs.readFileSync(path.join(ROOT, "dist", "webview.js"), "utf8");
  assert.ok(!/require\(["'](fs|path|child_process|vscode)["']\)/.test(web));
});
