/**
 * Running the CLI for one profile (docs/spec/profiler.md §(j) "Running", §(l.10)): an argument
 * vector (no shell) `<source> --run --profile -o <run dir>/<stem> [-- <args>]`, the program's
 * working directory chosen by the caller, exports and the CLI's scratch (`TMPDIR`) in a fresh
 * private temporary directory, its own process group with stdin closed, the sampling rate in
 * `OSPREY_PROFILE_HZ`, and cancellation that sends SIGINT to the group (the profile is kept,
 * §(l.5)) and SIGKILL 5 s later if it is still running. No vscode import.
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
  /** Working directory of the CLI and so of the program (`osprey.profiler.cwd`). */
  cwd: string;
  /** The run's private directory: the exports (`-o <runDir>/<stem>`) and `TMPDIR`. */
  runDir: string;
  /** Program arguments, passed after `--` (`osprey.profiler.args`). */
  args?: readonly string[];
  /** Sampling rate in Hz for `OSPREY_PROFILE_HZ` (`osprey.profiler.rateHz`); unset: the CLI's default. */
  rateHz?: number;
  /**
   * Cancels the run: the child's process group gets SIGINT, and SIGKILL `killAfterMs` later if
   * it has not exited; the promise resolves when the child has exited.
   */
  signal?: AbortSignal;
  /** Grace period between SIGINT and SIGKILL on cancellation, in ms (default 5000). */
  killAfterMs?: number;
  /** Called with each chunk of the child's stdout / stderr as it arrives (UTF-8 text). */
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  /** Environment of the child; default process.env. On POSIX `TMPDIR` is always set to
   * `runDir` (see {@link childEnv}). */
  env?: NodeJS.ProcessEnv;
}

/** Default grace period between SIGINT and SIGKILL when a run is cancelled (§(l.10)). */
export const KILL_AFTER_MS = 5000;

/** The outcome of {@link runProfile}. */
export interface RunResult {
  /**
   * "exited" (status valid), "cancelled" (the run was cancelled and has exited since: status
   * valid), or "failed" (could not start: `error` says why).
   */
  outcome: "exited" | "cancelled" | "failed";
  /** Cancelled runs: true when SIGINT was not enough and the group got SIGKILL. */
  killed?: boolean;
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

/**
 * argv of a profiling run: `<source> --run --profile -o <outStem>`, then `-- <args…>` when
 * there are program arguments.
 */
export function profileArgs(source: string, outStem: string, args: readonly string[] = []): string[] {
  const argv = [source, "--run", "--profile", "-o", outStem];
  if (args.length > 0) argv.push("--", ...args);
  return argv;
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
 * The child's environment: `env` with `TMPDIR` set to the run directory on POSIX, and
 * `OSPREY_PROFILE_HZ` set when `rateHz` is given. The CLI keeps its scratch directory (object
 * file, executable, raw profile) under `TMPDIR`; a cancelled run that ignores SIGINT is ended
 * with SIGKILL, which the CLI cannot catch, so its scratch must be inside the run directory
 * that the extension deletes.
 */
export function childEnv(env: NodeJS.ProcessEnv, runDir: string, rateHz?: number): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = process.platform === "win32" ? { ...env } : { ...env, TMPDIR: runDir };
  if (rateHz !== undefined) out.OSPREY_PROFILE_HZ = String(rateHz);
  return out;
}

/**
 * Sends `signal` to the child's whole process group (POSIX), as a terminal's Ctrl-C does for
 * SIGINT; on Windows, which has neither, ends the child's process tree.
 */
export function signalTree(child: ChildProcess, signal: "SIGINT" | "SIGKILL"): void {
  if (child.pid === undefined) return;
  try {
    if (process.platform === "win32") {
      // No process groups: taskkill /T ends the child's whole tree.
      spawn("taskkill", ["/pid", String(child.pid), "/T", "/F"], { windowsHide: true, stdio: "ignore" }).on("error", () => child.kill());
    } else {
      process.kill(-child.pid, signal);
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
 * Runs `<osprey> <source> --run --profile -o <runDir>/<stem> [-- args]` in `cwd`. Resolves when
 * the child exits (and its output pipes close, or 2 s after exit if a leftover grandchild keeps
 * them open) or when it cannot be started. On cancellation the group gets SIGINT, then SIGKILL
 * after `killAfterMs`, and the result (outcome "cancelled") comes when the child has exited.
 * Never rejects.
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
    let cancelled = false;
    let killed = false;
    let killTimer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      if (!child || cancelled) return;
      cancelled = true;
      const c = child;
      signalTree(c, "SIGINT");
      killTimer = setTimeout(() => {
        killed = true;
        signalTree(c, "SIGKILL");
      }, o.killAfterMs ?? KILL_AFTER_MS);
    };
    if (o.signal?.aborted) {
      finish({ outcome: "cancelled", status: 128 + 2, signalName: "SIGINT" });
      return;
    }
    try {
      child = spawn(o.osprey, profileArgs(o.source, path.join(o.runDir, exportStem(o.source)), o.args ?? []), {
        cwd: o.cwd,
        env: childEnv(o.env ?? process.env, o.runDir, o.rateHz),
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
      if (killTimer) clearTimeout(killTimer);
      const { code, sig } = exitInfo;
      const outcome = cancelled ? "cancelled" : "exited";
      const extra = cancelled ? { killed } : {};
      if (sig) {
        const n = os.constants.signals[sig] ?? 0;
        finish({ outcome, status: 128 + n, signalName: sig, ...extra });
      } else {
        finish({ outcome, status: code ?? 0, ...extra });
      }
    };
    child.on("exit", (code, sig) => {
      exitInfo = { code, sig };
      // A cancelled run is over once the CLI has exited: whatever it left in its group (a
      // program that ignores SIGINT, a stray grandchild) is ended too.
      if (cancelled && child) signalTree(child, "SIGKILL");
      // Output may still be in the pipes: wait for "close", but not forever.
      setTimeout(done, 2000).unref();
    });
    child.on("close", (code, sig) => {
      if (!exitInfo) exitInfo = { code, sig };
      done();
    });
  });
}
