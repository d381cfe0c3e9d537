/**
 * Running the CLI for one profile (docs/spec/profiler.md §(j) "Running"): a fresh private temporary
 * directory, an argument vector (no shell), its own process group with stdin closed,
 * `TMPDIR` pointing into the run directory, and cancellation that SIGKILLs the whole group
 * and returns at once. No vscode import.
 */
import { spawn, type ChildProcess } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

/** Options of {@link runProfile}. */
export interface RunOptions {
  /** The CLI (`osprey.path`): a name looked up on PATH or a path. */
  osprey: string;
  /** Absolute path of the source file. */
  source: string;
  /** Working directory of the child; the exports land here. */
  cwd: string;
  /** Cancels the run: the child's process group gets SIGKILL and the promise resolves at once. */
  signal?: AbortSignal;
  /** Called with each chunk of the child's stdout / stderr as it arrives (UTF-8 text). */
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  /** Environment of the child; default process.env. On POSIX `TMPDIR` is always set to
   * `cwd` (see {@link childEnv}). */
  env?: NodeJS.ProcessEnv;
}

/** The outcome of {@link runProfile}. */
export interface RunResult {
  /** "exited" (status valid), "cancelled", or "failed" (could not start: `error` says why). */
  outcome: "exited" | "cancelled" | "failed";
  /** Exit status: the exit code, or 128 + N when killed by signal N (like the CLI's own rule). */
  status: number;
  /** Signal name when the child was killed by one. */
  signalName?: string;
  /** Everything the child wrote to stderr (the last 1 MiB at most). */
  stderr: string;
  /** Child's process id, when it started. */
  pid?: number;
  error?: Error;
}

const STDERR_KEEP = 1 << 20;

/** argv of a profiling run: `<source> --run --profile`. */
export function profileArgs(source: string): string[] {
  return [source, "--run", "--profile"];
}

/** Creates a fresh private `os.tmpdir()/osprey-profile-XXXXXX` (mode 0700). */
export function makeRunDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "osprey-profile-"));
}

/** The export stem: the source's basename without its last extension (`demo.osp` → `demo`). */
export function exportStem(source: string): string {
  const base = path.basename(source);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(0, dot) : base;
}

/**
 * The child's environment: `env` with `TMPDIR` set to the run directory on POSIX. The CLI
 * keeps its scratch directory (object file, executable, raw profile) under `TMPDIR`; a
 * cancelled run is ended with SIGKILL, which the CLI cannot catch, so its scratch must be
 * inside the run directory that the extension deletes.
 */
export function childEnv(env: NodeJS.ProcessEnv, runDir: string): NodeJS.ProcessEnv {
  return process.platform === "win32" ? env : { ...env, TMPDIR: runDir };
}

/** Sends SIGKILL to the child's whole process group (POSIX) or ends its process tree (Windows). */
export function killTree(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform === "win32") {
      // No process groups: taskkill /T ends the child's whole tree.
      spawn("taskkill", ["/pid", String(child.pid), "/T", "/F"], { windowsHide: true, stdio: "ignore" }).on("error", () => child.kill());
    } else {
      process.kill(-child.pid, "SIGKILL");
    }
  } catch {
    // Already gone.
  }
}

/** The last `n` non-empty lines of `text`. */
export function lastLines(text: string, n: number): string[] {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  return lines.slice(Math.max(0, lines.length - n));
}

/**
 * Runs `<osprey> <source> --run --profile` in `cwd`. Resolves when the child exits (and its
 * output pipes close, or 2 s after exit if a leftover grandchild keeps them open), when it
 * cannot be started, or immediately on cancellation. Never rejects.
 */
export function runProfile(o: RunOptions): Promise<RunResult> {
  return new Promise((resolve) => {
    let stderr = "";
    let settled = false;
    let child: ChildProcess | undefined;
    const finish = (r: Omit<RunResult, "stderr" | "pid">): void => {
      if (settled) return;
      settled = true;
      o.signal?.removeEventListener("abort", onAbort);
      resolve({ ...r, stderr, pid: child?.pid });
    };
    const onAbort = (): void => {
      if (child) killTree(child);
      finish({ outcome: "cancelled", status: 128 + (os.constants.signals.SIGKILL ?? 9), signalName: "SIGKILL" });
    };
    if (o.signal?.aborted) {
      finish({ outcome: "cancelled", status: 128 + 9 });
      return;
    }
    try {
      child = spawn(o.osprey, profileArgs(o.source), {
        cwd: o.cwd,
        env: childEnv(o.env ?? process.env, o.cwd),
        shell: false,
        detached: process.platform !== "win32",
        stdio: ["ignore", "pipe", "pipe"],
        windowsHide: true,
      });
    } catch (e) {
      finish({ outcome: "failed", status: -1, error: e instanceof Error ? e : new Error(String(e)) });
      return;
    }
    o.signal?.addEventListener("abort", onAbort);
    child.stdout?.setEncoding("utf8");
    child.stderr?.setEncoding("utf8");
    child.stdout?.on("data", (t: string) => o.onStdout?.(t));
    child.stderr?.on("data", (t: string) => {
      stderr += t;
      if (stderr.length > 2 * STDERR_KEEP) stderr = stderr.slice(stderr.length - STDERR_KEEP);
      o.onStderr?.(t);
    });
    child.on("error", (e) => finish({ outcome: "failed", status: -1, error: e }));
    let exitInfo: { code: number | null; sig: NodeJS.Signals | null } | null = null;
    const done = (): void => {
      if (!exitInfo) return;
      const { code, sig } = exitInfo;
      if (sig) {
        const n = os.constants.signals[sig] ?? 0;
        finish({ outcome: "exited", status: 128 + n, signalName: sig });
      } else {
        finish({ outcome: "exited", status: code ?? 0 });
      }
    };
    child.on("exit", (code, sig) => {
      exitInfo = { code, sig };
      // Output may still be in the pipes: wait for "close", but not forever.
      setTimeout(done, 2000).unref();
    });
    child.on("close", (code, sig) => {
      if (!exitInfo) exitInfo = { code, sig };
      done();
    });
  });
}
