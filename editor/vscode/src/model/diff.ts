/**
 * The differential view (docs/spec/profiler.md §(l.8), §(l.10)): parsing `<stem>.diff.folded`
 * (one `<stack> <base count> <new count>` line per stack, frames separated by `;`, root first)
 * and laying out the new profile as a flame graph whose every node also carries its base
 * share. Both profiles are normalised by their own total, so the two columns compare shares.
 * No DOM or vscode import.
 */
import { RectBuilder, finishLayout, mergePaths, type FlameLayout } from "./flame";

/** A parsed `.diff.folded`. */
export interface DiffDoc {
  /** Distinct frame names, in order of first appearance. */
  names: string[];
  /** Per line: frame indices into `names`, root first. */
  stacks: number[][];
  /** Per line: the base and new counts. */
  base: number[];
  next: number[];
  baseTotal: number;
  newTotal: number;
}

/** A malformed `.diff.folded` line; `message` is `line <n>: <what>`. */
export class DiffParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DiffParseError";
  }
}

/** A count: a non-negative decimal number (integers in osprey's own files). */
function parseCount(tok: string): number {
  if (!/^[0-9]+(\.[0-9]+)?$/.test(tok)) return NaN;
  return Number(tok);
}

/**
 * Parses a `.diff.folded` text. Blank lines are skipped and a trailing `\r` is ignored. The
 * last two space-separated fields of a line are the counts and everything before them is the
 * stack (so frame names may contain spaces). Throws {@link DiffParseError} naming the 1-based
 * line for a line without two counts, a count that is not a non-negative number, an empty
 * stack or an empty frame.
 */
export function parseDiffFolded(text: string): DiffDoc {
  const names: string[] = [];
  const ids = new Map<string, number>();
  const stacks: number[][] = [];
  const base: number[] = [];
  const next: number[] = [];
  let baseTotal = 0;
  let newTotal = 0;
  let lineNo = 0;
  let pos = 0;
  while (pos <= text.length) {
    let end = text.indexOf("\n", pos);
    if (end < 0) end = text.length;
    let line = text.slice(pos, end);
    pos = end + 1;
    lineNo++;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (line.trim() === "") {
      if (end === text.length) break;
      continue;
    }
    const at = `line ${lineNo}`;
    const s2 = line.lastIndexOf(" ");
    const s1 = s2 > 0 ? line.lastIndexOf(" ", s2 - 1) : -1;
    if (s1 < 0) throw new DiffParseError(`${at}: expected "<stack> <base count> <new count>"`);
    const b = parseCount(line.slice(s1 + 1, s2));
    const n = parseCount(line.slice(s2 + 1));
    if (!Number.isFinite(b)) throw new DiffParseError(`${at}: the base count ${JSON.stringify(line.slice(s1 + 1, s2))} is not a non-negative number`);
    if (!Number.isFinite(n)) throw new DiffParseError(`${at}: the new count ${JSON.stringify(line.slice(s2 + 1))} is not a non-negative number`);
    const stackText = line.slice(0, s1);
    if (stackText === "") throw new DiffParseError(`${at}: empty stack`);
    const parts = stackText.split(";");
    const stack: number[] = new Array(parts.length);
    for (let i = 0; i < parts.length; i++) {
      const name = parts[i];
      if (name === "") throw new DiffParseError(`${at}: empty frame ${i + 1} in the stack`);
      let id = ids.get(name);
      if (id === undefined) {
        id = names.length;
        names.push(name);
        ids.set(name, id);
      }
      stack[i] = id;
    }
    stacks.push(stack);
    base.push(b);
    next.push(n);
    baseTotal += b;
    newTotal += n;
    if (end === text.length) break;
  }
  return { names, stacks, base, next, baseTotal, newTotal };
}

/**
 * The differential flame graph: the stacks merged into a tree (siblings by new share
 * descending, then name index); each rectangle is as wide as the node's share of the new
 * profile and `base[k]` is the node's share of the base profile. Nodes present only in the base
 * have no width and are left out. `frame[k]` indexes `names`.
 */
export function diffLayout(d: DiffDoc): FlameLayout {
  const nScale = d.newTotal > 0 ? 1 / d.newTotal : 0;
  const bScale = d.baseTotal > 0 ? 1 / d.baseTotal : 0;
  const tree = mergePaths(
    d.names.length,
    d.stacks.length,
    (i) => d.stacks[i].length,
    (i, out, at) => out.set(d.stacks[i], at),
    (i) => d.next[i] * nScale,
    (i) => d.base[i] * bScale,
  );
  let tw = 0;
  for (let i = 0; i < d.stacks.length; i++) tw += d.next[i] * nScale;
  const out = new RectBuilder();
  tree.emit(out, 0, (depth) => depth - 1, true);
  return finishLayout("diff", out, tw, "frames", true);
}

/** Largest |new share − base share| over the rectangles of a diff layout (0 when none differ). */
export function maxDelta(l: FlameLayout): number {
  let m = 0;
  if (!l.base) return 0;
  const scale = l.totalWeight;
  for (let k = 0; k < l.count; k++) {
    const delta = Math.abs((l.x1[k] - l.x0[k]) * scale - l.base[k]);
    if (delta > m) m = delta;
  }
  return m;
}

const NEUTRAL: [number, number, number] = [214, 214, 214];
const MORE: [number, number, number] = [220, 38, 38];
const LESS: [number, number, number] = [37, 99, 235];

/**
 * Colour of a node whose share changed by `delta` (new − base): red when it grew, blue when it
 * shrank, from a neutral grey at no change to full saturation at `|delta| = maxAbs`.
 */
export function diffRgb(delta: number, maxAbs: number): [number, number, number] {
  const t = maxAbs > 0 ? Math.min(1, Math.abs(delta) / maxAbs) : 0;
  const to = delta > 0 ? MORE : LESS;
  return [0, 1, 2].map((i) => Math.round(NEUTRAL[i] + (to[i] - NEUTRAL[i]) * t)) as [number, number, number];
}

/** One row of the changed-functions table: a function's self share in each profile (0..1). */
export interface DiffChange {
  name: string;
  baseSelf: number;
  newSelf: number;
}

/** Self shares per frame name (the leaf of each stack) in both profiles, sorted by |change| descending, then name. */
export function diffChanges(d: DiffDoc): DiffChange[] {
  const baseSelf = new Float64Array(d.names.length);
  const newSelf = new Float64Array(d.names.length);
  for (let i = 0; i < d.stacks.length; i++) {
    const leaf = d.stacks[i][d.stacks[i].length - 1];
    baseSelf[leaf] += d.baseTotal > 0 ? d.base[i] / d.baseTotal : 0;
    newSelf[leaf] += d.newTotal > 0 ? d.next[i] / d.newTotal : 0;
  }
  const out: DiffChange[] = [];
  for (let f = 0; f < d.names.length; f++) {
    if (baseSelf[f] > 0 || newSelf[f] > 0) out.push({ name: d.names[f], baseSelf: baseSelf[f], newSelf: newSelf[f] });
  }
  out.sort((a, b) => Math.abs(b.newSelf - b.baseSelf) - Math.abs(a.newSelf - a.baseSelf) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out;
}
