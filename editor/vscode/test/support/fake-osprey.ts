/**
 * Fake `osprey` executables (POSIX shell scripts) for the runner and extension tests.
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const made: string[] = [];
// The fakes live until the test process ends (a run may still be using one): remove them then.
process.on("exit", () => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

/** Writes an executable script `osprey` with `body` into a fresh directory (removed when the
 * test process exits); returns its path. */
export function fakeOsprey(body: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "osprey-fake-"));
  made.push(dir);
  const file = path.join(dir, "osprey");
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

/** True while `pid` is a live (non-zombie) process. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** Polls `cond` every 20 ms until it holds or `ms` pass; returns whether it held. */
export async function waitFor(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}
