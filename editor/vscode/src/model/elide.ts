/**
 * Middle elision of frame labels (docs/spec/profiler.md §(j) "Drawing"): the longest `head…tail` that
 * fits, a lone `…` when no character fits, "" when not even `…` fits.
 */

export const ELLIPSIS = "\u2026";

/**
 * Fits `text` into `maxWidth` (any unit) with `measure` giving a string's width in that unit.
 * Keeps ceil(k/2) leading and floor(k/2) trailing code points for the largest k that fits.
 * Calls `measure` O(log length) times.
 */
export function elideMiddle(text: string, maxWidth: number, measure: (s: string) => number): string {
  return elideMiddleFit(text, maxWidth, measure).text;
}

/**
 * A label fitted by {@link elideMiddleFit}: `text` is what {@link elideMiddle} returns for every
 * width in `[min, max)` (`min` may be -Infinity, `max` Infinity), so a caller can keep it and
 * reuse it while the room it has stays in that range.
 */
export interface FittedLabel {
  text: string;
  min: number;
  max: number;
}

/**
 * {@link elideMiddle} with the range of widths its answer holds for. `measure` must be a sum of
 * positive per-character widths (as a canvas font's is): then the widths of `head…tail` grow
 * with k, the answer for `maxWidth` (when the whole text does not fit) is the largest k whose
 * width is at most `maxWidth`, and it stays the answer from that width up to (not including)
 * the width of the next longer candidate or of the whole text, whichever is smaller.
 * Calls `measure` O(log length) times.
 */
export function elideMiddleFit(text: string, maxWidth: number, measure: (s: string) => number): FittedLabel {
  const full = measure(text);
  if (full <= maxWidth) return { text, min: full, max: Infinity };
  const ellipsis = measure(ELLIPSIS);
  if (ellipsis > maxWidth) return { text: "", min: -Infinity, max: Math.min(ellipsis, full) };
  const cps = /[\ud800-\udfff]/.test(text) ? Array.from(text) : null;
  const len = cps ? cps.length : text.length;
  const piece = (k: number): string => {
    const head = Math.ceil(k / 2);
    const tail = Math.floor(k / 2);
    if (cps) return cps.slice(0, head).join("") + ELLIPSIS + cps.slice(len - tail).join("");
    return text.slice(0, head) + ELLIPSIS + text.slice(len - tail);
  };
  let lo = 0; // fits
  let loWidth = ellipsis;
  let hi = len - 1; // largest candidate
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    const w = measure(piece(mid));
    if (w <= maxWidth) {
      lo = mid;
      loWidth = w;
    } else {
      hi = mid - 1;
    }
  }
  // The answer changes where the next longer candidate fits, or the whole text does (which may
  // be narrower than a candidate: the ellipsis can be wider than the characters it replaces).
  const max = lo + 1 < len ? Math.min(measure(piece(lo + 1)), full) : full;
  return { text: piece(lo), min: loWidth, max };
}

/**
 * {@link elideMiddleFit} for a width that is the sum of per-code-unit widths, `unitWidth(c)` for
 * UTF-16 code unit c, added from 0 in string order (as the page's measure() does): the same
 * answer and range, bit for bit, without building a string per candidate — each candidate's
 * width is summed over its code units in the order its string would have them, and only the
 * answer is built. Calls `unitWidth` O(length · log length) times and allocates nothing else
 * for text without surrogate pairs.
 */
export function elideMiddleFitUnits(text: string, maxWidth: number, unitWidth: (code: number) => number): FittedLabel {
  const n = text.length;
  let full = 0;
  for (let i = 0; i < n; i++) full += unitWidth(text.charCodeAt(i));
  if (full <= maxWidth) return { text, min: full, max: Infinity };
  const e = unitWidth(ELLIPSIS.charCodeAt(0));
  const ellipsis = 0 + e;
  if (ellipsis > maxWidth) return { text: "", min: -Infinity, max: Math.min(ellipsis, full) };
  // Code point k starts at code unit at(k); at(len) = n.
  let starts: Int32Array | null = null;
  if (/[\ud800-\udfff]/.test(text)) {
    const cps = Array.from(text);
    starts = new Int32Array(cps.length + 1);
    for (let k = 0; k < cps.length; k++) starts[k + 1] = starts[k] + cps[k].length;
  }
  const len = starts ? starts.length - 1 : n;
  const at = (k: number): number => (starts ? starts[k] : k);
  const width = (k: number): number => {
    const headEnd = at(Math.ceil(k / 2));
    const tailStart = at(len - Math.floor(k / 2));
    let w = 0;
    for (let i = 0; i < headEnd; i++) w += unitWidth(text.charCodeAt(i));
    w += e;
    for (let i = tailStart; i < n; i++) w += unitWidth(text.charCodeAt(i));
    return w;
  };
  let lo = 0;
  let loWidth = ellipsis;
  let hi = len - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    const w = width(mid);
    if (w <= maxWidth) {
      lo = mid;
      loWidth = w;
    } else {
      hi = mid - 1;
    }
  }
  const max = lo + 1 < len ? Math.min(width(lo + 1), full) : full;
  const piece = text.slice(0, at(Math.ceil(lo / 2))) + ELLIPSIS + text.slice(at(len - Math.floor(lo / 2)));
  return { text: piece, min: loWidth, max };
}
