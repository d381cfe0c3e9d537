import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { childEnv, exportStem, lastLines, makeRunDir, profileArgs, runProfile } from "../../src/runner";
import { fakeOsprey, isAlive, waitFor } from "../support/fake-osprey";

const posix = process.platform !== "win32";

test("argv, stem, tail helpers", () => {
  assert.deepEqual(profileArgs("/w/demo.osp", "/t/demo"), ["/w/demo.osp", "--run", "--profile", "-o", "/t/demo"]);
  assert.deepEqual(profileArgs("/w/demo.osp", "/t/demo", ["a b", "--x", ""]), ["/w/demo.osp", "--run", "--profile", "-o", "/t/demo", "--", "a b", "--x", ""]);
  assert.equal(childEnv({ A: "1" }, "/run", 4000).OSPREY_PROFILE_HZ, "4000");
  assert.equal("OSPREY_PROFILE_HZ" in childEnv({ A: "1" }, "/run"), false);
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
      'echo "$OSPREY_PROFILE_HZ" > hz.txt',
      "if read -r line; then echo data > stdin.txt; else echo eof > stdin.txt; fi",
      "cut -d' ' -f5 /proc/$$/stat > pgid.txt",
      "echo to-stdout",
      "echo to-stderr >&2",
    ].join("\n"),
  );
  const dir = makeRunDir();
  const runDir = makeRunDir();
  let out = "";
  let err = "";
  const source = "/w/my dir/it's $(x).osp";
  const r = await runProfile({ osprey, source, cwd: dir, runDir, args: ["one", "two words"], rateHz: 250, onStdout: (t) => (out += t), onStderr: (t) => (err += t) });
  assert.equal(r.outcome, "exited");
  assert.equal(r.status, 0);
  // Exports go to the run directory (-o <runDir>/<stem>); the program's arguments follow --.
  assert.equal(fs.readFileSync(path.join(dir, "args.txt"), "utf8"), `${source}|--run|--profile|-o|${path.join(runDir, "it's $(x)")}|--|one|two words|`);
  assert.equal(fs.readFileSync(path.join(dir, "hz.txt"), "utf8").trim(), "250");
  assert.equal(fs.realpathSync(fs.readFileSync(path.join(dir, "cwd.txt"), "utf8").trim()), fs.realpathSync(dir));
  fs.rmSync(runDir, { recursive: true });
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
  const r = await runProfile({ osprey: fakeOsprey('echo "$TMPDIR" > tmpdir.txt'), source: "/x.osp", cwd: dir, runDir: dir, env: { ...process.env, TMPDIR: "/elsewhere" } });
  assert.equal(r.outcome, "exited");
  assert.equal(fs.readFileSync(path.join(dir, "tmpdir.txt"), "utf8").trim(), dir);
  fs.rmSync(dir, { recursive: true });
});

test("reports the exit status, and 128 + N for a signal", { skip: !posix }, async () => {
  const dir = makeRunDir();
  const r3 = await runProfile({ osprey: fakeOsprey("echo boom >&2\nexit 3"), source: "/x.osp", cwd: dir, runDir: dir });
  assert.deepEqual([r3.outcome, r3.status, r3.stderr], ["exited", 3, "boom\n"]);
  const rs = await runProfile({ osprey: fakeOsprey("kill -TERM $$"), source: "/x.osp", cwd: dir, runDir: dir });
  assert.deepEqual([rs.outcome, rs.status, rs.signalName], ["exited", 128 + 15, "SIGTERM"]);
  fs.rmSync(dir, { recursive: true });
});

test("a CLI that cannot start is reported, not thrown", async () => {
  const dir = makeRunDir();
  const r = await runProfile({ osprey: path.join(dir, "no-such-osprey"), source: "/x.osp", cwd: dir, runDir: dir });
  assert.equal(r.outcome, "failed");
  assert.equal((r.error as NodeJS.ErrnoException).code, "ENOENT");
  fs.rmSync(dir, { recursive: true });
});

test("cancelling sends SIGINT to the group; a CLI that handles it finishes and keeps its output", { skip: !posix }, async () => {
  // Like osprey under --profile: on SIGINT it writes what it has and exits 128 + 2.
  const osprey = fakeOsprey("trap 'echo kept > profile.txt; exit 130' INT\necho $$ > child.pid\nwhile :; do sleep 0.05; done");
  const dir = makeRunDir();
  const abort = new AbortController();
  const running = runProfile({ osprey, source: "/x.osp", cwd: dir, runDir: dir, signal: abort.signal, killAfterMs: 10_000 });
  assert.ok(await waitFor(() => fs.existsSync(path.join(dir, "child.pid")), 10_000), "the fake CLI started");
  const t0 = Date.now();
  abort.abort();
  const r = await running;
  assert.equal(r.outcome, "cancelled");
  assert.equal(r.killed, false, "SIGINT was enough");
  assert.equal(r.status, 130);
  assert.ok(Date.now() - t0 < 5000, "no wait for the SIGKILL deadline");
  assert.equal(fs.readFileSync(path.join(dir, "profile.txt"), "utf8").trim(), "kept");
  fs.rmSync(dir, { recursive: true });
});

test("a run that ignores SIGINT gets SIGKILL after the grace period, with its whole group", { skip: !posix }, async () => {
  // The CLI ignores SIGINT and starts a grandchild (as osprey starts the program); both wait.
  const osprey = fakeOsprey("trap '' INT\nsleep 300 &\necho $! > grandchild.pid\necho $$ > child.pid\nwait");
  const dir = makeRunDir();
  const abort = new AbortController();
  const running = runProfile({ osprey, source: "/x.osp", cwd: dir, runDir: dir, signal: abort.signal, killAfterMs: 400 });
  const ready = await waitFor(() => fs.existsSync(path.join(dir, "child.pid")) && fs.existsSync(path.join(dir, "grandchild.pid")), 10_000);
  assert.ok(ready, "the fake CLI started");
  const child = Number(fs.readFileSync(path.join(dir, "child.pid"), "utf8"));
  const grandchild = Number(fs.readFileSync(path.join(dir, "grandchild.pid"), "utf8"));
  assert.ok(isAlive(child) && isAlive(grandchild));
  const t0 = Date.now();
  abort.abort();
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(isAlive(child), "still running inside the grace period");
  const r = await running;
  const elapsed = Date.now() - t0;
  assert.equal(r.outcome, "cancelled");
  assert.equal(r.killed, true);
  assert.equal(r.status, 128 + 9);
  assert.ok(elapsed >= 400 && elapsed < 5000, `finished ${elapsed} ms after the cancel`);
  assert.ok(await waitFor(() => !isAlive(child) && !isAlive(grandchild), 10_000), "the process group is gone");
  fs.rmSync(dir, { recursive: true });
});

test("an already-cancelled run starts nothing", async () => {
  const abort = new AbortController();
  abort.abort();
  const dir = makeRunDir();
  const r = await runProfile({ osprey: fakeOsprey("touch started"), source: "/x.osp", cwd: dir, runDir: dir, signal: abort.signal });
  assert.equal(r.outcome, "cancelled");
  assert.equal(fs.existsSync(path.join(dir, "started")), false);
  fs.rmSync(dir, { recursive: true });
});
