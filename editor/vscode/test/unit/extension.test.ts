import "../support/install-vscode-stub";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import * as ext from "../../src/extension";
import { fakeOsprey, isAlive, waitFor } from "../support/fake-osprey";
import { FIXTURES, ROOT } from "../support/paths";
import * as vscode from "../stubs/vscode";

const { recorded, testing } = vscode;
const posix = process.platform !== "win32";

// A workspace with a real source file, opened in a visible editor.
const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "osprey-ext-")));
const source = path.join(work, "demo.osp");
fs.writeFileSync(source, Array.from({ length: 24 }, (_, i) => `line ${i + 1}`).join("\n"));
const doc = new vscode.FakeDocument(vscode.Uri.file(source), fs.readFileSync(source, "utf8"));
const editor = new vscode.FakeEditor(doc);

/**
 * Shell lines of a fake CLI that write the running example's exports at its `-o` stem, with
 * `/w/demo.osp` replaced by the source; it records its argv, cwd and OSPREY_PROFILE_HZ beside them.
 */
const WRITE_EXPORTS = [
  'src="$1"; out=""; printf "%s|" "$@" > "$TMPDIR/argv.txt"; pwd > "$TMPDIR/cwd.txt"; echo "${OSPREY_PROFILE_HZ-unset}" > "$TMPDIR/hz.txt"',
  'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done',
  `write() { sed "s#/w/demo.osp#$src#g" "${FIXTURES}/demo.profile.json" > "$out.profile.json"; sed "s#/w/demo.osp#$src#g" "${FIXTURES}/demo.speedscope.json" > "$out.speedscope.json"; }`,
];

/** A fake CLI writing the running example's exports, then running `extra`. */
function exportingOsprey(extra = ""): string {
  return fakeOsprey([...WRITE_EXPORTS, "write", "echo program output", extra].join("\n"));
}

/** Runs the command and remembers the run directory it made (removed after the tests). */
const runDirs = new Set<string>();
async function profile(): Promise<Awaited<ReturnType<typeof api.profileCurrentFile>>> {
  const r = await api.profileCurrentFile();
  if ("dir" in r && r.dir) runDirs.add(r.dir);
  return r;
}

const context = { subscriptions: [] as { dispose(): unknown }[], extensionUri: vscode.Uri.file(ROOT) };
const api = ext.activate(context as never);

function heatOf(e: vscode.FakeEditor): { line: number; text: string | undefined; tier: number }[] {
  const out: { line: number; text: string | undefined; tier: number }[] = [];
  recorded.decorationTypes.forEach((t, tier) => {
    for (const d of e.decorations.get(t) ?? []) out.push({ line: d.range.start.line, text: d.renderOptions?.after?.contentText, tier });
  });
  return out.sort((a, b) => a.line - b.line);
}

test("contributions match the editor contract", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const c = pkg.contributes;
  const cmd = (id: string) => c.commands.find((x: { command: string }) => x.command === id);
  assert.equal(`${cmd("osprey.profileCurrentFile").category}: ${cmd("osprey.profileCurrentFile").title}`, "Osprey: Profile Current File");
  assert.equal(`${cmd("osprey.profiler.openLast").category}: ${cmd("osprey.profiler.openLast").title}`, "Osprey: Show Last Profile");
  assert.ok(cmd("osprey.profiler.openFile"));
  const title = c.menus["editor/title"][0];
  assert.equal(title.command, "osprey.profileCurrentFile");
  assert.match(title.when, /resourceLangId == osprey\b/);
  assert.match(title.when, /resourceLangId == osprey-ml\b/);
  const explorer = c.menus["explorer/context"][0];
  assert.equal(explorer.command, "osprey.profiler.openFile");
  assert.ok(new RegExp(explorer.when.match(/=~ \/(.*)\/$/)[1]).test("demo.speedscope.json"));
  assert.deepEqual(
    c.languages.map((l: { id: string; extensions: string[] }) => [l.id, l.extensions]),
    [["osprey", [".osp"]], ["osprey-ml", [".ospml"]]],
  );
  const props = c.configuration.properties;
  assert.deepEqual([props["osprey.path"].type, props["osprey.path"].default], ["string", "osprey"]);
  assert.deepEqual([props["osprey.profiler.args"].type, props["osprey.profiler.args"].default], ["array", []]);
  assert.deepEqual([props["osprey.profiler.cwd"].type, props["osprey.profiler.cwd"].default], ["string", ""]);
  assert.deepEqual([props["osprey.profiler.rateHz"].minimum, props["osprey.profiler.rateHz"].maximum, props["osprey.profiler.rateHz"].default], [10, 10000, null]);
  // Workspace trust: limited support, the CLI path (and what the program runs with) restricted.
  const trust = pkg.capabilities.untrustedWorkspaces;
  assert.equal(trust.supported, "limited");
  assert.ok(trust.restrictedConfigurations.includes("osprey.path"));
  assert.ok(typeof trust.description === "string" && trust.description.length > 20);
  assert.match(title.when, /isWorkspaceTrusted/);
  // The custom editor for the three kinds of profile file.
  const ed = c.customEditors[0];
  assert.equal(ed.viewType, "osprey.profileViewer");
  assert.deepEqual(ed.selector.map((x: { filenamePattern: string }) => x.filenamePattern), ["*.speedscope.json", "*.profile.json", "*.diff.folded"]);
  assert.ok(recorded.customEditors.has("osprey.profileViewer"), "the provider is registered");
  for (const f of ["LICENSE", "README.md", pkg.icon]) assert.ok(fs.existsSync(path.join(ROOT, f)), f);
  assert.equal(pkg.license, "MIT");
  assert.ok(pkg.repository && pkg.repository.url);
  assert.deepEqual([props["osprey.profiler.inlineHeat"].type, props["osprey.profiler.inlineHeat"].default], ["boolean", true]);
  assert.deepEqual([...recorded.commands.keys()].sort(), ["osprey.profileCurrentFile", "osprey.profiler.openFile", "osprey.profiler.openLast"]);
  // Four decoration types, one per tier, styled as specified.
  assert.deepEqual(recorded.decorationTypes.map((t) => t.options.overviewRulerColor), ["#e8500a", "#f97316", "#fbbf24", "#88888899"]);
  for (const t of recorded.decorationTypes) {
    assert.equal(t.options.isWholeLine, true);
    assert.equal(t.options.overviewRulerLane, vscode.OverviewRulerLane.Right);
    assert.deepEqual(t.options.after, { color: t.options.overviewRulerColor, fontStyle: "italic", margin: "0 0 0 1em" });
  }
});

test("without an Osprey editor the command only informs", async () => {
  testing.reset();
  vscode.window.activeTextEditor = undefined;
  assert.deepEqual(await profile(), { outcome: "no-editor" });
  const other = new vscode.FakeEditor(new vscode.FakeDocument(vscode.Uri.file(path.join(work, "x.c")), ""));
  vscode.window.activeTextEditor = other;
  assert.deepEqual(await profile(), { outcome: "not-osprey" });
  assert.equal(recorded.info.length, 2);
  assert.equal(recorded.progress.length, 0);
  assert.equal(recorded.panels.length, 0);
});

test("openLast before any run informs", async () => {
  testing.reset();
  await api.openLast();
  assert.equal(recorded.info.length, 1);
  assert.equal(recorded.panels.length, 0);
});

test("a successful run shows the profile, keeps the artifacts and decorates hot lines", { skip: !posix }, async () => {
  testing.reset();
  recorded.settings.set("osprey.path", exportingOsprey());
  vscode.window.activeTextEditor = editor;
  testing.setVisibleEditors([editor]);
  const r = await profile();
  assert.equal(r.outcome, "shown", JSON.stringify({ r, errors: recorded.errors }));
  assert.equal(r.status, 0);
  assert.equal(doc.saved, 1, "the document is saved first");
  assert.ok(r.dir && path.basename(r.dir).startsWith("osprey-profile-") && path.dirname(r.dir) === os.tmpdir());
  assert.ok(fs.existsSync(path.join(r.dir, "demo.speedscope.json")), "artifacts are kept");
  // The program ran in the source's folder (no workspace folder here) with no arguments; the
  // exports went to the run directory.
  assert.equal(fs.readFileSync(path.join(r.dir, "cwd.txt"), "utf8").trim(), work);
  assert.equal(fs.readFileSync(path.join(r.dir, "argv.txt"), "utf8"), `${source}|--run|--profile|-o|${path.join(r.dir, "demo")}|`);
  assert.equal(fs.readFileSync(path.join(r.dir, "hz.txt"), "utf8").trim(), process.env.OSPREY_PROFILE_HZ ?? "unset");
  assert.deepEqual(fs.readdirSync(work).sort(), ["demo.osp"], "nothing written next to the source");
  assert.deepEqual(recorded.progress.map((p) => (p.options as { cancellable: boolean }).cancellable), [true]);
  const out = recorded.output.join("");
  assert.ok(out.includes("--run --profile -o"), out);
  assert.ok(out.includes("program output\n"), out);
  assert.ok(out.includes("[exit status 0]"), out);
  assert.ok(recorded.outputShown > 0);
  assert.deepEqual(recorded.warnings, []);
  assert.deepEqual(recorded.errors, []);
  // The panel.
  assert.equal(recorded.panels.length, 1);
  const panel = recorded.panels[0];
  assert.equal(panel.viewType, "ospreyProfiler");
  assert.equal(panel.title, "Profile: demo.osp");
  assert.equal((panel.options as { enableScripts: boolean }).enableScripts, true);
  assert.match(panel.webview.html.replace(/&#39;/g, "'"), /default-src 'none'; script-src 'nonce-[A-Za-z0-9]{32}'; style-src 'nonce-[A-Za-z0-9]{32}'/);
  assert.ok(!panel.webview.html.includes("crunch"), "no profile data in the HTML");
  assert.equal(panel.posted.length, 0, "nothing is posted before the page is ready");
  panel.fromPage({ type: "ready" });
  assert.equal(panel.posted.length, 1);
  const m = panel.posted[0] as { type: string; title: string; summary: { hotLines: { file: string }[] }; speedscope: unknown };
  assert.equal(m.type, "profile");
  assert.equal(m.summary.hotLines[0].file, source);
  assert.ok(m.speedscope);
  assert.equal(api.last?.title, "demo.osp");
  // Heat on the visible editor.
  assert.deepEqual(heatOf(editor), [
    { line: 6, text: " ▍ 66.7% · 2 samples", tier: 0 },
    { line: 7, text: " ▍ 33.3% · 1 samples", tier: 0 },
  ]);
  // An editor opened later on the same file (through a symlinked directory) gets them too.
  const link = path.join(os.tmpdir(), `osprey-ext-link-${process.pid}`);
  fs.symlinkSync(work, link);
  try {
    const viaLink = new vscode.FakeEditor(new vscode.FakeDocument(vscode.Uri.file(path.join(link, "demo.osp")), fs.readFileSync(source, "utf8")));
    testing.setVisibleEditors([editor, viaLink]);
    assert.equal(heatOf(viaLink).length, 2);
  } finally {
    fs.unlinkSync(link);
  }
  testing.setVisibleEditors([editor]);
});

test("inlineHeat=false hides the decorations and keeps the state", async () => {
  testing.setSetting("osprey.profiler.inlineHeat", false);
  assert.deepEqual(heatOf(editor), []);
  assert.equal(api.heat.hasHotLines, true);
  testing.setSetting("osprey.profiler.inlineHeat", true);
  assert.equal(heatOf(editor).length, 2);
});

test("click-to-source opens, clamps, centres and selects; bad messages are ignored", async () => {
  const panel = recorded.panels[0];
  testing.reset();
  panel.fromPage({ type: "select", file: source, line: 7 });
  await waitFor(() => recorded.shown.length === 1, 2000);
  assert.equal(recorded.shown.length, 1);
  assert.equal(recorded.shown[0].document.uri.fsPath, source);
  assert.equal((recorded.shown[0].options as { viewColumn: number }).viewColumn, vscode.ViewColumn.One);
  panel.fromPage({ type: "select", file: source, line: 999 });
  await waitFor(() => recorded.shown.length === 2, 2000);
  panel.fromPage({ type: "select", file: source, line: "3" });
  panel.fromPage({ type: "select", file: "", line: 3 });
  panel.fromPage({ type: "open", file: source, line: 3 });
  panel.fromPage({ type: "select", file: path.join(work, "missing.osp"), line: 3 });
  await waitFor(() => recorded.warnings.length === 1, 2000);
  assert.equal(recorded.shown.length, 2);
  assert.equal(recorded.warnings.length, 1);
  assert.match(recorded.warnings[0], /cannot open .*missing\.osp/);
});

test("click-to-source selection lands on the clamped line", async () => {
  // Observe the editor the stub returns through a wrapped showTextDocument.
  const original = vscode.window.showTextDocument;
  const editors: vscode.FakeEditor[] = [];
  vscode.window.showTextDocument = async (d: vscode.FakeDocument, o: unknown) => {
    const e = await original(d, o);
    editors.push(e);
    return e;
  };
  try {
    const panel = recorded.panels[0];
    panel.fromPage({ type: "select", file: source, line: 7 });
    panel.fromPage({ type: "select", file: source, line: 999 });
    panel.fromPage({ type: "select", file: source, line: -4 });
    await waitFor(() => editors.length === 3 && editors.every((e) => e.selection), 2000);
    const sel = editors.map((e) => [e.selection?.start.line, e.selection?.start.character, e.selection?.end.character]);
    assert.deepEqual(sel, [[6, 0, 6], [23, 0, 7], [0, 0, 6]]);
    assert.deepEqual(editors.map((e) => e.revealed[0].type), [2, 2, 2]);
  } finally {
    vscode.window.showTextDocument = original;
  }
});

test("a non-zero status still shows the profile, with a warning", { skip: !posix }, async () => {
  testing.reset();
  recorded.settings.set("osprey.path", exportingOsprey("exit 3"));
  const r = await profile();
  assert.equal(r.outcome, "shown");
  assert.deepEqual(recorded.warnings, ["The program exited with status 3; showing its profile."]);
  assert.equal(recorded.panels.length, 1, "the one panel is re-used");
  assert.equal(recorded.panels[0].posted.length, 2, "the ready page gets the new profile at once");
});

test("a failed run shows the last 12 non-empty stderr lines and clears the heat", { skip: !posix }, async () => {
  testing.reset();
  const lines = Array.from({ length: 20 }, (_, i) => `echo "err ${i}" >&2\necho >&2`).join("\n");
  recorded.settings.set("osprey.path", fakeOsprey(`${lines}\nexit 1`));
  const before = api.last;
  const r = await profile();
  assert.equal(r.outcome, "failed");
  assert.equal(recorded.errors.length, 1);
  const expected = Array.from({ length: 12 }, (_, i) => `err ${i + 8}`).join("\n");
  assert.equal(recorded.errors[0], `Osprey: profiling demo.osp failed (status 1):\n${expected}`);
  assert.equal(fs.existsSync(r.dir as string), false, "the failed run's directory is removed");
  assert.deepEqual(heatOf(editor), [], "heat is cleared when a new run starts");
  assert.equal(api.last, before, "openLast still has the last good profile");
});

test("a malformed export is reported with its load error", { skip: !posix }, async () => {
  testing.reset();
  recorded.settings.set("osprey.path", exportingOsprey(`echo '{"version":1}' > "$out.profile.json"\necho warning text >&2`));
  const r = await profile();
  assert.equal(r.outcome, "failed");
  assert.match(recorded.errors[0], /demo\.profile\.json: profile summary: "wallSeconds" must be a number, got missing/);
});

test("a missing CLI points at the osprey.path setting", async () => {
  testing.reset();
  recorded.settings.set("osprey.path", path.join(work, "no-such-osprey"));
  const r = await profile();
  assert.equal(r.outcome, "failed");
  assert.match(recorded.errors[0], /cannot run .*no-such-osprey.*ENOENT.*osprey\.path/);
});

test("cancelling sends SIGINT; the profile the CLI keeps is shown", { skip: !posix }, async () => {
  testing.reset();
  // Like osprey: a scratch directory under TMPDIR; on SIGINT it writes the exports and exits 130.
  recorded.settings.set(
    "osprey.path",
    fakeOsprey([...WRITE_EXPORTS, 's=$(mktemp -d "${TMPDIR:-/tmp}/osprey-XXXXXX")', "trap 'write; exit 130' INT", 'echo $$ > "$TMPDIR/child.pid"', "while :; do sleep 0.05; done"].join("\n")),
  );
  const running = profile();
  assert.ok(await waitFor(() => recorded.progress.length === 1, 5000));
  let runDir = "";
  assert.ok(await waitFor(() => (runDir = findRunDir("child.pid")) !== "", 10_000));
  const child = Number(fs.readFileSync(path.join(runDir, "child.pid"), "utf8"));
  recorded.progress[0].cancel();
  const r = await running;
  assert.equal(r.outcome, "cancelled");
  assert.equal(r.message, "shown");
  assert.equal(r.status, 130);
  assert.ok(!isAlive(child));
  assert.ok(fs.existsSync(path.join(runDir, "demo.speedscope.json")), "the kept profile stays");
  assert.equal(api.last?.speedscopePath, path.join(runDir, "demo.speedscope.json"));
  assert.match(recorded.info.join("\n"), /cancelled; showing the profile up to that point/);
  assert.ok(recorded.output.join("").includes("[cancelled: SIGINT sent; exit status 130]"));
  assert.deepEqual(recorded.errors, []);
});

test("a cancelled run that ignores SIGINT is killed after 5 s and its directory removed", { skip: !posix, timeout: 30_000 }, async () => {
  testing.reset();
  recorded.settings.set(
    "osprey.path",
    fakeOsprey('s=$(mktemp -d "${TMPDIR:-/tmp}/osprey-XXXXXX")\necho "$s" > "$TMPDIR/scratch.txt"\ntrap "" INT\nsleep 300 &\necho $! > "$TMPDIR/grandchild.pid"\necho $$ > "$TMPDIR/child.pid"\nwait'),
  );
  const running = profile();
  assert.ok(await waitFor(() => recorded.progress.length === 1, 5000));
  let runDir = "";
  assert.ok(await waitFor(() => (runDir = findRunDir("grandchild.pid")) !== "" && fs.existsSync(path.join(runDir, "child.pid")), 10_000));
  const child = Number(fs.readFileSync(path.join(runDir, "child.pid"), "utf8"));
  const grandchild = Number(fs.readFileSync(path.join(runDir, "grandchild.pid"), "utf8"));
  const scratch = fs.readFileSync(path.join(runDir, "scratch.txt"), "utf8").trim();
  const t0 = Date.now();
  recorded.progress[0].cancel();
  const r = await running;
  const elapsed = Date.now() - t0;
  assert.equal(r.outcome, "cancelled");
  assert.ok(elapsed >= 4900 && elapsed < 12_000, `SIGKILL after the 5 s grace period: ${elapsed} ms`);
  assert.ok(await waitFor(() => !isAlive(child) && !isAlive(grandchild), 10_000));
  // SIGKILL cannot be caught: the CLI's scratch is gone only because it was in the run dir.
  assert.ok(scratch.startsWith(runDir + path.sep), `scratch ${scratch} outside the run directory ${runDir}`);
  assert.equal(fs.existsSync(runDir), false);
  assert.deepEqual(recorded.errors, []);
  assert.ok(recorded.output.join("").includes("[cancelled: the run did not stop within 5 s of SIGINT and was killed]"));
});

test("a new run cancels the one in flight", { skip: !posix }, async () => {
  testing.reset();
  recorded.settings.set("osprey.path", fakeOsprey('echo $$ > "$TMPDIR/first.pid"\nsleep 300'));
  const first = profile();
  assert.ok(await waitFor(() => recorded.progress.length === 1, 5000));
  let pid = 0;
  assert.ok(
    await waitFor(() => {
      const d = findRunDir("first.pid");
      pid = d === "" ? 0 : Number(fs.readFileSync(path.join(d, "first.pid"), "utf8"));
      return pid > 0 && isAlive(pid);
    }, 10_000),
  );
  recorded.settings.set("osprey.path", exportingOsprey());
  const second = profile();
  const r1 = await first;
  assert.equal(r1.outcome, "cancelled");
  assert.equal(r1.message, undefined, "a replaced run's profile is not shown");
  assert.equal((await second).outcome, "shown");
  assert.ok(await waitFor(() => !isAlive(pid), 10_000));
});

test("run settings: arguments, working directory and rate reach the CLI; bad values are refused", { skip: !posix }, async () => {
  testing.reset();
  const wsDir = fs.mkdtempSync(path.join(work, "ws-"));
  fs.mkdirSync(path.join(wsDir, "data"));
  const wsSource = path.join(wsDir, "demo.osp");
  fs.copyFileSync(source, wsSource);
  const wsEditor = new vscode.FakeEditor(new vscode.FakeDocument(vscode.Uri.file(wsSource), fs.readFileSync(wsSource, "utf8")));
  vscode.window.activeTextEditor = wsEditor;
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(wsDir), name: "ws", index: 0 }];
  try {
    recorded.settings.set("osprey.path", exportingOsprey());
    recorded.settings.set("osprey.profiler.args", ["--input", "data/in put.txt"]);
    recorded.settings.set("osprey.profiler.rateHz", 4000);
    let r = await profile();
    assert.equal(r.outcome, "shown", JSON.stringify(recorded.errors));
    const dir = r.dir as string;
    assert.equal(fs.readFileSync(path.join(dir, "cwd.txt"), "utf8").trim(), wsDir, "default: the workspace folder");
    assert.equal(fs.readFileSync(path.join(dir, "argv.txt"), "utf8"), `${wsSource}|--run|--profile|-o|${path.join(dir, "demo")}|--|--input|data/in put.txt|`);
    assert.equal(fs.readFileSync(path.join(dir, "hz.txt"), "utf8").trim(), "4000");
    recorded.settings.set("osprey.profiler.cwd", "data");
    r = await profile();
    assert.equal(fs.readFileSync(path.join(r.dir as string, "cwd.txt"), "utf8").trim(), path.join(wsDir, "data"), "relative to the workspace folder");
    recorded.settings.set("osprey.profiler.cwd", "${workspaceFolder}/data");
    r = await profile();
    assert.equal(fs.readFileSync(path.join(r.dir as string, "cwd.txt"), "utf8").trim(), path.join(wsDir, "data"));
    // Bad values: one message naming the setting, nothing run.
    const runs = recorded.progress.length;
    for (const [key, value, pattern] of [
      ["osprey.profiler.cwd", "missing", /"osprey\.profiler\.cwd": .*missing is not a directory/],
      ["osprey.profiler.args", "--x", /"osprey\.profiler\.args" must be an array of strings/],
      ["osprey.profiler.rateHz", 5, /"osprey\.profiler\.rateHz" must be a whole number of Hz from 10 to 10000, got 5/],
    ] as const) {
      const saved = recorded.settings.get(key);
      recorded.settings.set(key, value);
      testing.reset();
      r = await profile();
      assert.equal(r.outcome, "failed");
      assert.match(recorded.errors[0], pattern);
      recorded.settings.set(key, saved);
    }
    assert.equal(recorded.progress.length, 0, `nothing ran (${runs} before)`);
  } finally {
    for (const k of ["osprey.profiler.args", "osprey.profiler.rateHz", "osprey.profiler.cwd"]) recorded.settings.delete(k);
    vscode.workspace.workspaceFolders = [];
    vscode.window.activeTextEditor = editor;
  }
});

test("an untrusted workspace can view profiles but not run one", async () => {
  testing.reset();
  vscode.workspace.isTrusted = false;
  try {
    vscode.window.activeTextEditor = editor;
    assert.deepEqual(await profile(), { outcome: "untrusted" });
    assert.equal(recorded.progress.length, 0);
    assert.match(recorded.info[0], /trust this workspace/);
    await api.openFile(vscode.Uri.file(path.join(FIXTURES, "demo.speedscope.json")) as never);
    assert.deepEqual(recorded.errors, []);
  } finally {
    vscode.workspace.isTrusted = true;
  }
});

test("the custom editor shows profile pairs, lone speedscope files and diffs; problems name the file", async () => {
  testing.reset();
  const { provider } = recorded.customEditors.get("osprey.profileViewer") as {
    provider: { openCustomDocument(u: unknown): { uri: vscode.Uri }; resolveCustomEditor(d: unknown, p: unknown): void };
  };
  const open = (file: string): vscode.FakeWebviewPanel => {
    const panel = new vscode.FakeWebviewPanel("osprey.profileViewer", path.basename(file), null, null);
    provider.resolveCustomEditor(provider.openCustomDocument(vscode.Uri.file(file)), panel);
    assert.match(panel.webview.html.replace(/&#39;/g, "'"), /default-src 'none'; script-src 'nonce-/);
    assert.equal((panel.webview.options as { enableScripts: boolean }).enableScripts, true);
    panel.fromPage({ type: "ready" });
    return panel;
  };
  // A pair, opened from either file.
  for (const f of ["demo.speedscope.json", "demo.profile.json"]) {
    const m = open(path.join(FIXTURES, f)).posted[0] as { type: string; summary: unknown; speedscope: unknown; title: string };
    assert.equal(m.type, "profile");
    assert.ok(m.summary && m.speedscope);
    assert.equal(m.title, "demo.osp");
  }
  assert.equal(api.last?.summaryPath, path.join(FIXTURES, "demo.profile.json"), "remembered for Show Last Profile");
  // A speedscope file alone: shown without a summary.
  const lone = path.join(work, "alone.speedscope.json");
  fs.copyFileSync(path.join(FIXTURES, "demo.speedscope.json"), lone);
  const m1 = open(lone).posted[0] as { type: string; summary: unknown };
  assert.deepEqual([m1.type, m1.summary], ["profile", null]);
  // A summary alone: an error naming the missing file.
  const loneSummary = path.join(work, "only.profile.json");
  fs.copyFileSync(path.join(FIXTURES, "demo.profile.json"), loneSummary);
  const m2 = open(loneSummary).posted[0] as { type: string; message: string };
  assert.equal(m2.type, "error");
  assert.match(m2.message, /only\.speedscope\.json, which does not exist/);
  // A diff: its text goes to the page, which parses it.
  const diff = path.join(work, "cmp.diff.folded");
  fs.writeFileSync(diff, "main;work 1 2\n");
  assert.deepEqual(open(diff).posted[0], { type: "diff", title: "cmp.diff.folded", text: "main;work 1 2\n" });
  // Malformed JSON: the error names the file.
  const bad = path.join(work, "bad.speedscope.json");
  fs.writeFileSync(bad, "{");
  const m3 = open(bad).posted[0] as { type: string; message: string };
  assert.equal(m3.type, "error");
  assert.match(m3.message, /bad\.speedscope\.json: invalid JSON/);
  // Click-to-source from the custom editor opens the file.
  open(path.join(FIXTURES, "demo.speedscope.json")).fromPage({ type: "select", file: source, line: 2 });
  assert.ok(await waitFor(() => recorded.shown.length === 1, 2000));
});

test("a profile written on Windows opened elsewhere is titled by its program's basename", async () => {
  testing.reset();
  // profile.json's "program" is the source path as given to the CLI: backslashes on Windows.
  const dir = fs.mkdtempSync(path.join(work, "win-"));
  const summary = JSON.parse(fs.readFileSync(path.join(FIXTURES, "demo.profile.json"), "utf8"));
  summary.program = "C:\\Users\\me\\proj\\demo.osp";
  fs.writeFileSync(path.join(dir, "demo.profile.json"), JSON.stringify(summary));
  fs.copyFileSync(path.join(FIXTURES, "demo.speedscope.json"), path.join(dir, "demo.speedscope.json"));
  const { provider } = recorded.customEditors.get("osprey.profileViewer") as {
    provider: { openCustomDocument(u: unknown): { uri: vscode.Uri }; resolveCustomEditor(d: unknown, p: unknown): void };
  };
  const panel = new vscode.FakeWebviewPanel("osprey.profileViewer", "demo.speedscope.json", null, null);
  provider.resolveCustomEditor(provider.openCustomDocument(vscode.Uri.file(path.join(dir, "demo.speedscope.json"))), panel);
  panel.fromPage({ type: "ready" });
  assert.equal((panel.posted[0] as { title: string }).title, "demo.osp");
  assert.equal(api.last?.title, "demo.osp", "Show Last Profile titles its panel \"Profile: demo.osp\"");
  assert.deepEqual(recorded.errors, []);
});

test("profile files saved with a UTF-8 byte order mark open like any other", async () => {
  testing.reset();
  // Windows editors and PowerShell write a BOM; JSON.parse rejects it as an invisible "token".
  const dir = fs.mkdtempSync(path.join(work, "bom-"));
  for (const f of ["demo.profile.json", "demo.speedscope.json"]) fs.writeFileSync(path.join(dir, f), "\ufeff" + fs.readFileSync(path.join(FIXTURES, f), "utf8"));
  fs.writeFileSync(path.join(dir, "cmp.diff.folded"), "\ufeffmain;work 1 2\n");
  const { provider } = recorded.customEditors.get("osprey.profileViewer") as {
    provider: { openCustomDocument(u: unknown): { uri: vscode.Uri }; resolveCustomEditor(d: unknown, p: unknown): void };
  };
  const open = (file: string): Record<string, unknown> => {
    const panel = new vscode.FakeWebviewPanel("osprey.profileViewer", path.basename(file), null, null);
    provider.resolveCustomEditor(provider.openCustomDocument(vscode.Uri.file(path.join(dir, file))), panel);
    panel.fromPage({ type: "ready" });
    return panel.posted[0] as Record<string, unknown>;
  };
  const m = open("demo.speedscope.json");
  assert.equal(m.type, "profile", String(m.message));
  assert.ok(m.summary && m.speedscope);
  assert.deepEqual(open("cmp.diff.folded"), { type: "diff", title: "cmp.diff.folded", text: "main;work 1 2\n" }, "the first frame is main, not U+FEFF main");
  await api.openFile(vscode.Uri.file(path.join(dir, "demo.speedscope.json")) as never);
  assert.deepEqual(recorded.errors, []);
});

test("openLast re-shows the last profile; openFile loads a speedscope file and its summary", async () => {
  testing.reset();
  const panel = recorded.panels[0];
  const n = panel.posted.length;
  await api.openLast();
  assert.equal(panel.posted.length, n + 1);
  await api.openFile(vscode.Uri.file(path.join(FIXTURES, "demo.speedscope.json")) as never);
  assert.deepEqual(recorded.errors, []);
  assert.equal(panel.title, "Profile: demo.osp");
  assert.equal(api.last?.summaryPath, path.join(FIXTURES, "demo.profile.json"));
  // A speedscope file without its summary.
  const lone = path.join(work, "lone.speedscope.json");
  fs.copyFileSync(path.join(FIXTURES, "demo.speedscope.json"), lone);
  await api.openFile(vscode.Uri.file(lone) as never);
  assert.match(recorded.errors[0], /lone\.profile\.json was not written|lone\.profile\.json/);
  await api.openFile(vscode.Uri.file(path.join(work, "demo.osp")) as never);
  assert.match(recorded.errors[1], /not a <stem>\.speedscope\.json file/);
});

test("closing the panel and showing again creates a new one", async () => {
  recorded.panels[0].dispose();
  await api.openLast();
  assert.equal(recorded.panels.length, 2);
});

/** The run directory (in the temporary area) that holds `file`, or "". */
function findRunDir(file: string): string {
  return (
    fs
      .readdirSync(os.tmpdir())
      .filter((d) => d.startsWith("osprey-profile-"))
      .map((d) => path.join(os.tmpdir(), d))
      .find((d) => fs.existsSync(path.join(d, file))) ?? ""
  );
}

test.after(() => {
  for (const d of context.subscriptions) d.dispose();
  fs.rmSync(work, { recursive: true, force: true });
  for (const d of runDirs) fs.rmSync(d, { recursive: true, force: true });
});
