/**
 * The run settings of docs/spec/profiler.md §(l.10): `osprey.profiler.args` (program
 * arguments), `osprey.profiler.cwd` (the program's working directory, default the workspace
 * folder) and `osprey.profiler.rateHz` (sampling rate). Checked here, before anything runs, so
 * a bad value is one clear message naming the setting. No vscode import.
 */
import * as fs from "fs";
import * as path from "path";

export const ARGS_SETTING = "osprey.profiler.args";
export const CWD_SETTING = "osprey.profiler.cwd";
export const RATE_SETTING = "osprey.profiler.rateHz";
/** The range `OSPREY_PROFILE_HZ` accepts (§(a)). */
export const MIN_RATE_HZ = 10;
export const MAX_RATE_HZ = 10000;

/** A setting with a value the run cannot use; `message` names the setting and the problem. */
export class SettingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SettingError";
  }
}

/** The settings as read from the configuration (any JSON value, or undefined when unset). */
export interface RawRunSettings {
  args: unknown;
  cwd: unknown;
  rateHz: unknown;
}

/** Where the source lives: its workspace folder (if any) and its own directory. */
export interface RunContext {
  workspaceFolder?: string;
  sourceDir: string;
}

/** Checked run settings. */
export interface RunSettings {
  /** Program arguments, each passed as one argv entry. */
  args: string[];
  /** Absolute, existing directory. */
  cwd: string;
  /** Sampling rate in Hz, an integer in [10, 10000]; undefined leaves the CLI's default. */
  rateHz?: number;
}

/**
 * Checks and resolves the run settings. `args`: an array of strings (unset: none). `cwd`: unset
 * or "" means the source's workspace folder, or the source's directory outside a workspace;
 * `${workspaceFolder}` and `${fileDirname}` are replaced; a relative path is taken from the
 * workspace folder (or the source's directory); it must name an existing directory. `rateHz`:
 * unset or null leaves the CLI's default; otherwise an integer from 10 to 10000. Throws
 * {@link SettingError}.
 */
export function resolveRunSettings(raw: RawRunSettings, ctx: RunContext): RunSettings {
  let args: string[] = [];
  if (raw.args !== undefined && raw.args !== null) {
    if (!Array.isArray(raw.args) || !raw.args.every((a) => typeof a === "string")) {
      throw new SettingError(`"${ARGS_SETTING}" must be an array of strings, one per program argument`);
    }
    args = raw.args.slice();
  }
  const baseDir = ctx.workspaceFolder ?? ctx.sourceDir;
  let cwd = baseDir;
  if (raw.cwd !== undefined && raw.cwd !== null && raw.cwd !== "") {
    if (typeof raw.cwd !== "string") throw new SettingError(`"${CWD_SETTING}" must be a directory path`);
    // One pass with a function: the paths are inserted as they are (a string replacement would
    // read `$&` or `$'` in them as patterns) and never searched for variables again.
    const expanded = raw.cwd.replace(/\$\{(workspaceFolder|fileDirname)\}/g, (_m, v: string) => (v === "workspaceFolder" ? baseDir : ctx.sourceDir));
    cwd = path.resolve(baseDir, expanded);
  }
  let isDir = false;
  try {
    isDir = fs.statSync(cwd).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new SettingError(`"${CWD_SETTING}": ${cwd} is not a directory`);
  let rateHz: number | undefined;
  if (raw.rateHz !== undefined && raw.rateHz !== null) {
    const r = raw.rateHz;
    if (typeof r !== "number" || !Number.isInteger(r) || r < MIN_RATE_HZ || r > MAX_RATE_HZ) {
      throw new SettingError(`"${RATE_SETTING}" must be a whole number of Hz from ${MIN_RATE_HZ} to ${MAX_RATE_HZ}, got ${JSON.stringify(r)}`);
    }
    rateHz = r;
  }
  return { args, cwd, rateHz };
}
