/**
 * Frame colours (docs/spec/profiler.md §(j) "Frame colours", seed [PROF-VSCODE-FLAME]): a function of the
 * profile document alone, never of the JavaScript engine or the order the engine's sort visits
 * elements in.
 *
 * Frames are ordered by a TOTAL order on (file, name, original index): file strings, then name
 * strings, both in UTF-16 code-unit order (not locale order), then the index in
 * `shared.frames`. The two string fields are compared as a pair, never spliced into one key.
 *
 * The colour of a frame comes from the rank of its (file, name) pair in that order: the
 * position of the first frame of its run of equal pairs. Frames that share a file AND a name
 * (the same function inlined at two sites, two runtime frames without a file) are therefore
 * coloured alike, and permuting `shared.frames` never changes any frame's colour — with the
 * index term itself in the rank, two such frames would swap colours whenever the document
 * listed them the other way round, which is exactly the array-dependence the seed forbids.
 */
import { isUserFile } from "./kind";
import type { Frame } from "./types";

/** The fields the order looks at; `index` is the frame's position in `shared.frames`. */
export interface FrameKey {
  file: string;
  name: string;
  index: number;
}

/** Code-unit comparison of two strings: -1, 0 or 1 (JS relational operators on strings). */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Total order on frames: file, then name (code-unit order), then original index.
 * Returns a negative number, 0 or a positive number; 0 only when `a.index === b.index`
 * (for keys taken from one `shared.frames`, i.e. only for the same frame).
 */
export function compareFrames(a: FrameKey, b: FrameKey): number {
  return compareStrings(a.file, b.file) || compareStrings(a.name, b.name) || Math.sign(a.index - b.index);
}

/**
 * Colour ranks of `frames` (length n): `ranks[i]` is the number of frames whose (file, name)
 * pair sorts strictly before frame i's pair under {@link compareFrames}. Iterative, O(n log n).
 */
export function frameRanks(frames: readonly Pick<Frame, "file" | "name">[]): Int32Array {
  const n = frames.length;
  const keys: FrameKey[] = frames.map((f, index) => ({ file: f.file, name: f.name, index }));
  keys.sort(compareFrames);
  const ranks = new Int32Array(n);
  let runStart = 0;
  for (let r = 0; r < n; r++) {
    const k = keys[r];
    if (r > 0) {
      const p = keys[r - 1];
      if (p.file !== k.file || p.name !== k.name) runStart = r;
    }
    ranks[k.index] = runStart;
  }
  return ranks;
}

/** Triangle wave with period 2 and range [0, 1]: `tri(v) = 2·|v/2 − floor(v/2 + 1/2)|`. */
export function tri(v: number): number {
  return 2 * Math.abs(v / 2 - Math.floor(v / 2 + 1 / 2));
}

/**
 * The colour for rank `r` of `n` frames: `t = floor(255·r/n)/255`, `x = tri(30·t)`; user frames
 * `hsl(324·t, (25 + 20·x)%, (65 − 15·x)%)`, all others `hsl(215, 12%, (58 − 12·x)%)`.
 * Returns a CSS colour string.
 */
export function rankColor(r: number, n: number, user: boolean): string {
  const [h, s, l] = rankHsl(r, n, user);
  return `hsl(${h}, ${s}%, ${l}%)`;
}

/** The components of {@link rankColor}: hue in degrees, saturation and lightness in percent. */
export function rankHsl(r: number, n: number, user: boolean): [number, number, number] {
  const t = n > 0 ? Math.floor((255 * r) / n) / 255 : 0;
  const x = tri(30 * t);
  if (user) return [324 * t, 25 + 20 * x, 65 - 15 * x];
  return [215, 12, 58 - 12 * x];
}

/**
 * The same colour as CSS `hsl(h, s%, l%)` written `#rrggbb` (the CSS Color 4 conversion, each
 * channel rounded). Canvas parses hex faster than hsl; the colour is unchanged.
 */
export function hslToHex(h: number, s: number, l: number): string {
  const sat = s / 100;
  const lig = l / 100;
  const f = (k0: number): string => {
    const k = (k0 + h / 30) % 12;
    const a = sat * Math.min(lig, 1 - lig);
    const v = lig - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(v * 255)
      .toString(16)
      .padStart(2, "0");
  };
  return `#${f(0)}${f(8)}${f(4)}`;
}

/**
 * The frames' colours as a palette of distinct `#rrggbb` strings plus, per frame, its index in
 * the palette. t takes at most 256 values, so the palette stays small however many frames
 * there are, which lets the renderer batch rectangles by colour.
 */
export function framePalette(frames: readonly Pick<Frame, "file" | "name">[]): { palette: string[]; index: Uint16Array } {
  const ranks = frameRanks(frames);
  const n = frames.length;
  const palette: string[] = [];
  const seen = new Map<string, number>();
  const index = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    const [h, s, l] = rankHsl(ranks[i], n, isUserFile(frames[i].file));
    const hex = hslToHex(h, s, l);
    let k = seen.get(hex);
    if (k === undefined) {
      k = palette.length;
      palette.push(hex);
      seen.set(hex, k);
    }
    index[i] = k;
  }
  return { palette, index };
}

/** The colour of every frame of a document, index-aligned with `frames`. */
export function frameColors(frames: readonly Pick<Frame, "file" | "name">[]): string[] {
  const ranks = frameRanks(frames);
  const n = frames.length;
  return frames.map((f, i) => rankColor(ranks[i], n, isUserFile(f.file)));
}
