/**
 * Reading and validating the two exports of one run (docs/spec/profiler.md §(g.2), §(g.5), §(j)).
 * No vscode import.
 */
import * as fs from "fs";
import * as path from "path";
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

function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
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
