/**
 * Per-line heat (docs/spec/profiler.md §(j) "Heat decorations", seed [PROF-VSCODE-HEAT]): labels, colour
 * tiers, path canonicalisation and the matching of `hotLines` to an editor's file. No vscode
 * import; the extension turns the result into decorations.
 */
import * as fs from "fs";
import * as nodePath from "path";
import type { HotLine } from "./types";

/** The after-line text: ` ▍ <pct>% · <samples> samples`, pct with one decimal. */
export function heatLabel(pct: number, samples: number): string {
  return ` \u258d ${pct.toFixed(1)}% \u00b7 ${samples} samples`;
}

/** The four colour tiers, hottest first. */
export const HEAT_TIERS: readonly { min: number; color: string }[] = [
  { min: 20, color: "#e8500a" },
  { min: 10, color: "#f97316" },
  { min: 5, color: "#fbbf24" },
  { min: -Infinity, color: "#88888899" },
];

/** Index into {@link HEAT_TIERS} for a share in percent: ≥ 20 → 0, ≥ 10 → 1, ≥ 5 → 2, else 3. */
export function heatTier(pct: number): number {
  for (let i = 0; i < HEAT_TIERS.length - 1; i++) if (pct >= HEAT_TIERS[i].min) return i;
  return HEAT_TIERS.length - 1;
}

/** The colour of a share in percent. */
export function heatColor(pct: number): string {
  return HEAT_TIERS[heatTier(pct)].color;
}

/** How paths are canonicalised; injectable so Windows rules can be tested on any host. */
export interface PathEnv {
  platform: NodeJS.Platform;
  /** Resolves symlinks of an existing path; throws when the path does not exist. */
  realpath: (p: string) => string;
}

/** The host's environment: its platform and `fs.realpathSync.native`. */
export const hostPathEnv: PathEnv = {
  platform: process.platform,
  realpath: (p) => fs.realpathSync.native(p),
};

/**
 * Canonical form of a file path for comparing hot lines with editors: made absolute and
 * normalised, symlinks resolved when the file exists, lower-cased on Windows.
 */
export function canonicalPath(p: string, env: PathEnv = hostPathEnv): string {
  const path = env.platform === "win32" ? nodePath.win32 : nodePath.posix;
  let out = path.resolve(path.normalize(p));
  try {
    out = path.normalize(env.realpath(out));
  } catch {
    // Missing file (or unreadable directory): keep the normalised path.
  }
  return env.platform === "win32" ? out.toLowerCase() : out;
}

/** One decoration to draw: 0-based line, its text and colour tier. */
export interface HeatMark {
  line0: number;
  text: string;
  tier: number;
  pct: number;
  samples: number;
}

/**
 * Groups hot lines by canonical file, canonicalising each distinct file once. The map's values
 * keep the summary's order.
 */
export function indexHotLines(hotLines: readonly HotLine[], env: PathEnv = hostPathEnv): Map<string, HotLine[]> {
  const byFile = new Map<string, HotLine[]>();
  const canon = new Map<string, string>();
  for (const h of hotLines) {
    let c = canon.get(h.file);
    if (c === undefined) {
      c = canonicalPath(h.file, env);
      canon.set(h.file, c);
    }
    let list = byFile.get(c);
    if (!list) byFile.set(c, (list = []));
    list.push(h);
  }
  return byFile;
}

/**
 * The marks for one editor: the hot lines of `index` whose file is `editorFile` after
 * canonicalisation, skipping lines outside a document of `lineCount` lines.
 */
export function heatMarksFor(
  index: Map<string, HotLine[]>,
  editorFile: string,
  lineCount: number,
  env: PathEnv = hostPathEnv,
): HeatMark[] {
  const list = index.get(canonicalPath(editorFile, env));
  if (!list) return [];
  const out: HeatMark[] = [];
  for (const h of list) {
    if (h.line < 1 || h.line > lineCount) continue;
    out.push({ line0: h.line - 1, text: heatLabel(h.pct, h.samples), tier: heatTier(h.pct), pct: h.pct, samples: h.samples });
  }
  return out;
}
