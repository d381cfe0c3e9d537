// Runs every test of the extension with node's test runner: unit tests, the extension with a
// stubbed vscode module, the webview in headless Chromium, and packaging. Expects `npm run
// build` and `npm run compile` to have run (npm test does both). Exits non-zero on any failure,
// and when the tests leave anything in their temporary area.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dirs = ["out/test/unit", "out/test/browser", "out/test/package"];
const files = [];
for (const d of dirs) {
  const abs = path.join(root, d);
  if (!fs.existsSync(abs)) continue;
  for (const f of fs.readdirSync(abs).sort()) if (f.endsWith(".test.js")) files.push(path.join(d, f));
}
if (files.length === 0) {
  console.error("run-tests: no compiled tests found under out/test (run `npm run compile` first)");
  process.exit(1);
}
fs.mkdirSync(path.join(root, "test-artifacts"), { recursive: true });
// The tests get a private temporary area (TMPDIR): whatever a test leaves there is a leak
// (fake CLIs, page files, run directories) and fails the run; it is removed in any case.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "osprey-vscode-tests-"));
// One file at a time: the browser and packaging tests are heavy and the machine is shared.
const r = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...files], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, TMPDIR: tmp },
});
const left = fs.readdirSync(tmp);
fs.rmSync(tmp, { recursive: true, force: true });
if (left.length > 0) {
  console.error(`run-tests: the tests left ${left.length} entries in the temporary area: ${left.sort().join(" ")}`);
  process.exit(1);
}
process.exit(r.status ?? 1);
