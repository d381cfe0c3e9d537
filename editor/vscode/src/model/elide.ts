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
  if (measure(text) <= maxWidth) return text;
  if (measure(ELLIPSIS) > maxWidth) return "";
  const cps = /[\ud800-\udfff]/.test(text) ? Array.from(text) : null;
  const len = cps ? cps.length : text.length;
  const piece = (k: number): string => {
    const head = Math.ceil(k / 2);
    const tail = Math.floor(k / 2);
    if (cps) return cps.slice(0, head).join("") + ELLIPSIS + cps.slice(len - tail).join("");
    return text.slice(0, head) + ELLIPSIS + text.slice(len - tail);
  };
  let lo = 0; // fits
  let hi = len - 1; // largest candidate
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (measure(piece(mid)) <= maxWidth) lo = mid;
    else hi = mid - 1;
  }
  return piece(lo);
}
