import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { exportStem, lastLines, makeRunDir, profileArgs, runProfile } from "../../src/runner";
import { fakeOsprey, isAlive, waitFor } from "../support/fake-osprey";

const posix = process.platform !== "win32";

test("argv, stem, tail helpers", () => {
  assert.deepEqual(profileArgs("/w/demo.osp"), ["/w/demo.osp", "--run", "--profile"]);
  assert.equal(exportStem("/w/demo.osp"), "demo");
  assert.equal(exportStem("/w/a.b.ospml"), "a.b");
  assert.equal(exportStem("/w/noext"), "noext");
  assert.deepEqual(lastLines("a\n\n  \nb\r\nc\n", 2), ["b", "c"]);
  assert.deepEqual(lastLines("", 12), []);
  const many = Array.from({ length: 30 }, (_, i) => `line ${i}`).join("\n");
  assert.deepEqual(lastLines(many, 12), Array.from({ length: 12 }, (_, i) => `line ${i + 18}`));
  const dir = makeRunDir();
  try {
    assert.ok(path.basename(dir).startsWith("osprey-profile-"));
    assert.equal(path.dirname(dir), os.tmpdir());
    assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
  } finally {
    fs.rmdirSync(dir);
  }
});

test("runs the CLI as an argv in the run directory with stdin closed", { skip: !posix }, async () => {
  const osprey = fakeOsprey(
    [
      'printf "%s|" "$@" > args.txt',
      "pwd > cwd.txt",
      "if read -r line; then echo data > stdin.txt; else echo eof > stdin.txt; fi",
      "cut -d' ' -f5 /proc/$$/stat > pgid.txt",
      "echo to-stdout",
      "echo to-stderr >&2",
    ].join("\n"),
  );
  const dir = makeRunDir();
  let out = "";
  let err = "";
  const source = "/w/my dir/it's $(x).osp";
  const r = await runProfile({ osprey, source, cwd: dir, onStdout: (t) => (out += t), onStderr: (t) => (err += t) });
  assert.equal(r.outcome, "exited");
  assert.equal(r.status, 0);
  assert.equal(fs.readFileSync(path.join(dir, "args.txt"), "utf8"), `${source}|--run|--profile|`);
  assert.equal(fs.realpathSync(fs.readFileSync(path.join(dir, "cwd.txt"), "utf8").trim()), fs.realpathSync(dir));
  assert.equal(fs.readFileSync(path.join(dir, "stdin.txt"), "utf8").trim(), "eof");
  // Its own process group: the group id is the child's pid.
  assert.equal(Number(fs.readFileSync(path.join(dir, "pgid.txt"), "utf8")), r.pid);
  assert.equal(out, "to-stdout\n");
  assert.equal(err, "to-stderr\n");
  assert.equal(r.stderr, "to-stderr\n");
  fs.rmSync(dir, { recursive: true });
});

test("the CLI's TMPDIR is the run directory (its scratch goes where a cancel deletes it)", { skip: !posix }, async () => {
  const dir = makeRunDir();
  const r = await runProfile({ osprey: fakeOsprey('echo "$TMPDIR" > tmpdir.txt'), source: "/x.osp", cwd: dir, env: { ...process.env, TMPDIR: "/elsewhere" } });
  assert.equal(r.outcome, "exited");
  assert.equal(fs.readFileSync(path.join(dir, "tmpdir.txt"), "utf8").trim(), dir);
  fs.rmSync(dir, { recursive: true });
});

test("reports the exit status, and 128 + N for a signal", { skip: !posix }, async () => {
  const dir = makeRunDir();
  const r3 = await runProfile({ osprey: fakeOsprey("echo boom >&2\nexit 3"), source: "/x.osp", cwd: dir });
  assert.deepEqual([r3.outcome, r3.status, r3.stderr], ["exited", 3, "boom\n"]);
  const rs = await runProfile({ osprey: fakeOsprey("kill -TERM $$"), source: "/x.osp", cwd: dir });
  assert.deepEqual([rs.outcome, rs.status, rs.signalName], ["exited", 128 + 15, "SIGTERM"]);
  fs.rmSync(dir, { recursive: true });
});

test("a CLI that cannot start is reported, not thrown", async () => {
  const dir = makeRunDir();
  const r = await runProfile({ osprey: path.join(dir, "no-such-osprey"), source: "/x.osp", cwd: dir });
  assert.equal(r.outcome, "failed");
  assert.equal((r.error as NodeJS.ErrnoException).code, "ENOENT");
  fs.rmSync(dir, { recursive: true });
});

test("cancelling kills the whole process group and finishes at once", { skip: !posix }, async () => {
  // The CLI starts a grandchild (as osprey starts the profiled program) and both wait.
  const osprey = fakeOsprey("sleep 300 &\necho $! > grandchild.pid\necho $$ > child.pid\nwait");
  const dir = makeRunDir();
  const abort = new AbortController();
  const running = runProfile({ osprey, source: "/x.osp", cwd: dir, signal: abort.signal });
  const ready = await waitFor(() => fs.existsSync(path.join(dir, "child.pid")) && fs.existsSync(path.join(dir, "grandchild.pid")), 10_000);
  assert.ok(ready, "the fake CLI started");
  const child = Number(fs.readFileSync(path.join(dir, "child.pid"), "utf8"));
  const grandchild = Number(fs.readFileSync(path.join(dir, "grandchild.pid"), "utf8"));
  assert.ok(isAlive(child) && isAlive(grandchild));
  const t0 = Date.now();
  abort.abort();
  const r = await running;
  const elapsed = Date.now() - t0;
  assert.equal(r.outcome, "cancelled");
  assert.ok(elapsed < 1000, `finished ${elapsed} ms after the cancel`);
  assert.ok(await waitFor(() => !isAlive(child) && !isAlive(grandchild), 10_000), "the process group is gone within 10 s");
  fs.rmSync(dir, { recursive: true });
});

test("an already-cancelled run starts nothing", async () => {
  const abort = new AbortController();
  abort.abort();
  const dir = makeRunDir();
  const r = await runProfile({ osprey: fakeOsprey("touch started"), source: "/x.osp", cwd: dir, signal: abort.signal });
  assert.equal(r.outcome, "cancelled");
  assert.equal(fs.existsSync(path.join(dir, "started")), false);
  fs.rmSync(dir, { recursive: true });
});
