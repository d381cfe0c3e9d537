/**
 * The horizontal view of the flame graph (docs/spec/profiler.md §(j) "Zoom"): a window [start, end] of
 * the normalised x axis, always inside [0, 1] with a span of at least 1e-5.
 */

export const MIN_SPAN = 1e-5;
/** Wheel zoom factor per unit of deltaY: the span is multiplied by 1.0018^deltaY. */
export const WHEEL_BASE = 1.0018;
/** A pointer movement of more than this many CSS pixels is a drag, not a click. */
export const DRAG_THRESHOLD_PX = 3;

export interface View {
  start: number;
  end: number;
}

export const FULL_VIEW: View = { start: 0, end: 1 };

/** Keeps a span in [MIN_SPAN, 1] and the window inside [0, 1], preserving `start` if possible. */
export function clampView(start: number, span: number): View {
  const s = Math.min(1, Math.max(MIN_SPAN, Number.isFinite(span) ? span : 1));
  let a = Number.isFinite(start) ? start : 0;
  a = Math.min(Math.max(0, a), 1 - s);
  return { start: a, end: a + s };
}

/**
 * Zooms about the cursor: `cursor` is the pointer's position as a fraction [0, 1] of the canvas
 * width; the point under it stays under it; the span is multiplied by 1.0018^deltaY.
 */
export function zoomAt(v: View, cursor: number, deltaY: number): View {
  const span = v.end - v.start;
  const anchor = v.start + cursor * span;
  const next = Math.min(1, Math.max(MIN_SPAN, span * Math.pow(WHEEL_BASE, deltaY)));
  return clampView(anchor - cursor * next, next);
}

/** Pans by `dx` canvas widths (positive dx = content moves right = view moves left). */
export function panBy(v: View, dx: number): View {
  const span = v.end - v.start;
  return clampView(v.start - dx * span, span);
}

/** The view showing exactly [x0, x1] (widened to the minimum span about its centre). */
export function zoomTo(x0: number, x1: number): View {
  const span = Math.max(MIN_SPAN, x1 - x0);
  const mid = (x0 + x1) / 2;
  return clampView(span === x1 - x0 ? x0 : mid - span / 2, span);
}
