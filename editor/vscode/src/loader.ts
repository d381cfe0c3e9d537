/**
 * Reading and validating the two exports of one run (docs/spec/profiler.md §(g.2), §(g.5), §(j)).
 * No vscode import.
 */
import * as fs from "fs";
import * as path from "path";
import { basename } from "./model/format";
import type { ProfileSummary, SpeedscopeDoc } from "./model/types";
import { validateSpeedscope, validateSummary } from "./model/validate";

/** A loaded, validated result: both documents plus where they came from. */
export interface LoadedProfile {
  /** Source basename for the panel title (`demo.osp`). */
  title: string;
  summaryPath: string;
  speedscopePath: string;
  summary: ProfileSummary;
  speedscope: SpeedscopeDoc;
  /** The parsed documents as read, posted to the webview (which validates them again). */
  rawSummary: unknown;
  rawSpeedscope: unknown;
}

/** The text of a file read as UTF-8, without a leading byte order mark (which some Windows tools write). */
function readText(file: string): string {
  const text = fs.readFileSync(file, "utf8");
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readText(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(code === "ENOENT" ? `${file} was not written` : `cannot read ${file}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: invalid JSON: ${(e as Error).message}`);
  }
}

/** Paths of the summary and speedscope files of `stem` in `dir`. */
export function exportPaths(dir: string, stem: string): { summary: string; speedscope: string } {
  return {
    summary: path.join(dir, `${stem}.profile.json`),
    speedscope: path.join(dir, `${stem}.speedscope.json`),
  };
}

/**
 * Loads `<stem>.profile.json` and `<stem>.speedscope.json` from `dir` and validates both.
 * Throws an Error whose message names the file and the problem.
 */
export function loadProfile(summaryPath: string, speedscopePath: string, title: string): LoadedProfile {
  const rawSummary = readJson(summaryPath);
  let summary: ProfileSummary;
  try {
    summary = validateSummary(rawSummary);
  } catch (e) {
    throw new Error(`${summaryPath}: ${(e as Error).message}`);
  }
  const rawSpeedscope = readJson(speedscopePath);
  let speedscope: SpeedscopeDoc;
  try {
    speedscope = validateSpeedscope(rawSpeedscope);
  } catch (e) {
    throw new Error(`${speedscopePath}: ${(e as Error).message}`);
  }
  return { title, summaryPath, speedscopePath, summary, speedscope, rawSummary, rawSpeedscope };
}

/** For an existing `<stem>.speedscope.json`: the sibling `<stem>.profile.json`, or null. */
export function siblingSummary(speedscopePath: string): string | null {
  const base = path.basename(speedscopePath);
  const suffix = ".speedscope.json";
  if (!base.toLowerCase().endsWith(suffix) || base.length === suffix.length) return null;
  return path.join(path.dirname(speedscopePath), base.slice(0, base.length - suffix.length) + ".profile.json");
}

/** The kinds of file the custom editor opens (§(l.10)), by name, ASCII case-insensitively. */
export type ProfileFileKind = "speedscope" | "summary" | "diff";

const FILE_SUFFIXES: [string, ProfileFileKind][] = [
  [".speedscope.json", "speedscope"],
  [".profile.json", "summary"],
  [".diff.folded", "diff"],
];

/** The kind and stem of a profile file (`demo.speedscope.json` → speedscope, `demo`), or null. */
export function profileFileKind(file: string): { kind: ProfileFileKind; stem: string } | null {
  const base = path.basename(file);
  const lower = base.toLowerCase();
  for (const [suffix, kind] of FILE_SUFFIXES) {
    if (lower.endsWith(suffix) && base.length > suffix.length) return { kind, stem: base.slice(0, base.length - suffix.length) };
  }
  return null;
}

/**
 * What the page is sent for a file opened in the custom editor: `{type: "profile"}` for a
 * speedscope file (with its sibling summary, or `summary: null` when there is none) or a
 * summary (whose sibling speedscope file must exist), `{type: "diff"}` for a `.diff.folded`
 * (the page parses it), `{type: "error"}` naming the file and the problem otherwise. The
 * loaded profile is returned too when there is one (for the heat and "Show Last Profile").
 */
export function loadForEditor(file: string): { message: Record<string, unknown>; profile: LoadedProfile | null } {
  const k = profileFileKind(file);
  const error = (message: string) => ({ message: { type: "error", message }, profile: null });
  if (!k) return error(`${file}: not a .speedscope.json, .profile.json or .diff.folded file`);
  const dir = path.dirname(file);
  try {
    if (k.kind === "diff") {
      let text: string;
      try {
        text = readText(file);
      } catch (e) {
        return error(`cannot read ${file}: ${(e as Error).message}`);
      }
      return { message: { type: "diff", title: path.basename(file), text }, profile: null };
    }
    const { summary, speedscope } = exportPaths(dir, k.stem);
    if (k.kind === "speedscope" && !fs.existsSync(summary)) {
      const raw = readJson(file);
      try {
        validateSpeedscope(raw);
      } catch (e) {
        return error(`${file}: ${(e as Error).message}`);
      }
      return { message: { type: "profile", title: path.basename(file), summary: null, speedscope: raw }, profile: null };
    }
    if (k.kind === "summary" && !fs.existsSync(speedscope)) {
      return error(`${file}: its flame graph is in ${speedscope}, which does not exist`);
    }
    const p = loadProfile(summary, speedscope, "");
    // The program path is as given to the CLI, with either separator (a profile from Windows).
    const title = basename(p.summary.program || p.speedscope.name || file);
    const shown = { ...p, title };
    return { message: { type: "profile", title, summary: p.rawSummary, speedscope: p.rawSpeedscope }, profile: shown };
  } catch (e) {
    return error((e as Error).message);
  }
}
