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
