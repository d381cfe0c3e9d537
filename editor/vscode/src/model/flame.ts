/**
 * The flame-graph model (docs/spec/profiler.md §(j) "Flame graph"): per-frame statistics, the Left Heavy
 * and Time Order layouts, hit testing and search. Everything is iterative (no recursion
 * proportional to stack depth, §(k) item 29) and uses memory linear in the distinct stacks.
 * Coordinates are normalised: x in [0, 1] as a share of the profile's total weight, rows
 * counted from the root (row 0 at the top).
 */
import type { SampledProfile } from "./types";

/**
 * The views of the panel (§(j) "Flame graph", §(l.10)): Left Heavy and Time Order draw frames
 * root first; Inverted draws functions leaf first; Sandwich draws one function's callers above
 * and callees below it; Diff is the differential view of a `.diff.folded` file.
 */
export type ViewKind = "left-heavy" | "time-order" | "inverted" | "sandwich" | "diff";

/** Which table `FlameLayout.frame` indexes: `shared.frames`, or the functions of the document. */
export type LayoutTable = "frames" | "functions";

/**
 * The rectangles of one view of one profile, in struct-of-arrays form. Rectangle k spans
 * [x0[k], x1[k]) on row depth[k] and shows frame[k] (an index into shared.frames). Rectangles
 * are sorted by row, then by x0; row d is `[rowStart[d], rowStart[d + 1])` and its rectangles do
 * not overlap. `weight[k]` is the rectangle's weight in the profile's unit (seconds).
 */
export interface FlameLayout {
  kind: ViewKind;
  /** The table `frame[k]` indexes. */
  table: LayoutTable;
  count: number;
  rows: number;
  totalWeight: number;
  x0: Float64Array;
  x1: Float64Array;
  weight: Float64Array;
  depth: Int32Array;
  frame: Int32Array;
  /** Length rows + 1. */
  rowStart: Int32Array;
  /** Diff view only: per rectangle, the base profile's weight of the same node. */
  base?: Float64Array;
  /**
   * Per rectangle k: the first rectangle after k in the same row that is wider than k, or the
   * row's end (`rowStart[depth[k] + 1]`) when none is. Every rectangle in between is at most as
   * wide as k, so a redraw that finds k too narrow to draw jumps there without missing one that
   * is wide enough (see {@link nextWiderIndex}).
   */
  nextWider: Int32Array;
}

/**
 * Per-frame (or per-function) statistics of one profile; arrays are indexed by frame (or by
 * function) and sized to that table.
 */
export interface FrameStats {
  /** Weight of samples whose leaf is the frame. */
  self: Float64Array;
  /** Weight of samples containing the frame, counted once per sample even when recursive. */
  total: Float64Array;
  /** Number of samples containing the frame (once per sample). */
  samples: Int32Array;
  /** Number of samples whose leaf is the frame. */
  selfSamples: Int32Array;
  /** Sum of all sample weights of the profile. */
  totalWeight: number;
}

/** Sum of a profile's weights. */
export function totalWeight(p: SampledProfile): number {
  let t = 0;
  for (let i = 0; i < p.weights.length; i++) t += p.weights[i];
  return t;
}

/**
 * Self, total and sample counts of every frame in profile `p` (frame table of size `nFrames`).
 * With `map` (frame index → key, e.g. the frame's function) and `nKeys`, the statistics are
 * per key instead: a function is counted once per sample however many of its frames the stack holds.
 */
export function frameStats(p: SampledProfile, nFrames: number, map?: Int32Array, nKeys?: number): FrameStats {
  const n = map ? (nKeys ?? 0) : nFrames;
  const self = new Float64Array(n);
  const total = new Float64Array(n);
  const samples = new Int32Array(n);
  const selfSamples = new Int32Array(n);
  const lastSeen = new Int32Array(n).fill(-1);
  let tw = 0;
  for (let s = 0; s < p.samples.length; s++) {
    const stack = p.samples[s];
    const w = p.weights[s];
    tw += w;
    for (let d = 0; d < stack.length; d++) {
      const f = map ? map[stack[d]] : stack[d];
      if (lastSeen[f] === s) continue;
      lastSeen[f] = s;
      total[f] += w;
      samples[f] += 1;
    }
    if (stack.length > 0) {
      const leaf = map ? map[stack[stack.length - 1]] : stack[stack.length - 1];
      self[leaf] += w;
      selfSamples[leaf] += 1;
    }
  }
  return { self, total, samples, selfSamples, totalWeight: tw };
}

/**
 * Growable parallel arrays of rectangles (x in weight units), turned into a FlameLayout by
 * {@link finishLayout}. `base` is filled only by the diff view.
 */
export class RectBuilder {
  x0: Float64Array = new Float64Array(1024);
  x1: Float64Array = new Float64Array(1024);
  depth: Int32Array = new Int32Array(1024);
  frame: Int32Array = new Int32Array(1024);
  base: Float64Array = new Float64Array(1024);
  length = 0;
  push(frame: number, depth: number, x0: number, x1: number, base = 0): void {
    const n = this.length;
    if (n === this.frame.length) this.grow();
    this.frame[n] = frame;
    this.depth[n] = depth;
    this.x0[n] = x0;
    this.x1[n] = x1;
    this.base[n] = base;
    this.length = n + 1;
  }
  private grow(): void {
    const cap = this.frame.length * 2;
    const f64 = (a: Float64Array): Float64Array => {
      const b = new Float64Array(cap);
      b.set(a);
      return b;
    };
    const i32 = (a: Int32Array): Int32Array => {
      const b = new Int32Array(cap);
      b.set(a);
      return b;
    };
    this.x0 = f64(this.x0);
    this.x1 = f64(this.x1);
    this.base = f64(this.base);
    this.depth = i32(this.depth);
    this.frame = i32(this.frame);
  }
}

/**
 * Sorts rectangles by row with a stable counting sort (they must arrive in increasing x within
 * a row) and normalises x by `total`. With `withBase`, the layout keeps the per-rectangle base
 * weights (diff view).
 */
export function finishLayout(kind: ViewKind, b: RectBuilder, total: number, table: LayoutTable = "frames", withBase = false): FlameLayout {
  const count = b.length;
  let rows = 0;
  for (let k = 0; k < count; k++) if (b.depth[k] + 1 > rows) rows = b.depth[k] + 1;
  const rowStart = new Int32Array(rows + 1);
  for (let k = 0; k < count; k++) rowStart[b.depth[k] + 1]++;
  for (let d = 0; d < rows; d++) rowStart[d + 1] += rowStart[d];
  const next = rowStart.slice(0, rows);
  const x0 = new Float64Array(count);
  const x1 = new Float64Array(count);
  const weight = new Float64Array(count);
  const depth = new Int32Array(count);
  const frame = new Int32Array(count);
  const base = withBase ? new Float64Array(count) : undefined;
  const scale = total > 0 ? 1 / total : 0;
  for (let k = 0; k < count; k++) {
    const d = b.depth[k];
    const at = next[d]++;
    x0[at] = b.x0[k] * scale;
    x1[at] = b.x1[k] * scale;
    weight[at] = b.x1[k] - b.x0[k];
    depth[at] = d;
    frame[at] = b.frame[k];
    if (base) base[at] = b.base[k];
  }
  const nextWider = nextWiderIndex(x0, x1, rowStart);
  const l: FlameLayout = { kind, table, count, rows, totalWeight: total, x0, x1, weight, depth, frame, rowStart, nextWider };
  if (base) l.base = base;
  return l;
}

/**
 * For rectangles laid out by row (row d is `[rowStart[d], rowStart[d + 1])`, rectangle k spans
 * `[x0[k], x1[k])`): per rectangle, the index of the next rectangle of its row with a strictly
 * larger width `x1 - x0`, or the row's end when none follows. O(count) time (one monotonic stack
 * per row, scanned right to left) and one Int32Array of `count` entries.
 *
 * This is how a redraw culls: walking a row from the left, a rectangle narrower than the
 * drawing limit sends the walk to its next wider rectangle, skipping everything in between —
 * all of it no wider, so nothing that would have been drawn. A narrow frame's callees lie
 * inside it and are narrower, so whole subtrees of sub-pixel rectangles are skipped at once.
 */
export function nextWiderIndex(x0: Float64Array, x1: Float64Array, rowStart: Int32Array): Int32Array {
  const count = rowStart.length > 0 ? rowStart[rowStart.length - 1] : 0;
  const next = new Int32Array(count);
  const stack = new Int32Array(count);
  for (let d = 0; d + 1 < rowStart.length; d++) {
    const a = rowStart[d];
    const b = rowStart[d + 1];
    let sp = 0;
    for (let k = b - 1; k >= a; k--) {
      const w = x1[k] - x0[k];
      while (sp > 0 && x1[stack[sp - 1]] - x0[stack[sp - 1]] <= w) sp--;
      next[k] = sp > 0 ? stack[sp - 1] : b;
      stack[sp++] = k;
    }
  }
  return next;
}

/**
 * Left Heavy: the profile's root-first stacks merged into a tree; a node's total is the summed
 * weight of the samples through it; siblings ordered by total descending, then frame index
 * ascending; x normalised by the profile's total weight.
 */
export function leftHeavyLayout(p: SampledProfile, nFrames: number): FlameLayout {
  const tree = mergePaths(
    nFrames,
    p.samples.length,
    (s) => p.samples[s].length,
    (s, out, at) => {
      const stack = p.samples[s];
      for (let d = 0; d < stack.length; d++) out[at + d] = stack[d];
    },
    (s) => p.weights[s],
  );
  let tw = 0;
  for (let s = 0; s < p.weights.length; s++) tw += p.weights[s];
  const out = new RectBuilder();
  tree.emit(out, 0, (depth) => depth - 1);
  return finishLayout("left-heavy", out, tw);
}

/**
 * Time Order (flame chart): samples in file order; consecutive samples that share a prefix
 * keep those frames as one continuous slab; x is the cumulative weight, normalised; no gaps.
 */
export function timeOrderLayout(p: SampledProfile): FlameLayout {
  const out = new RectBuilder();
  const openFrame: number[] = [];
  const openStart: number[] = [];
  let x = 0;
  for (let s = 0; s < p.samples.length; s++) {
    const stack = p.samples[s];
    let common = 0;
    const lim = Math.min(openFrame.length, stack.length);
    while (common < lim && openFrame[common] === stack[common]) common++;
    for (let d = openFrame.length - 1; d >= common; d--) out.push(openFrame[d], d, openStart[d], x);
    openFrame.length = common;
    openStart.length = common;
    for (let d = common; d < stack.length; d++) {
      openFrame.push(stack[d]);
      openStart.push(x);
    }
    x += p.weights[s];
  }
  for (let d = openFrame.length - 1; d >= 0; d--) out.push(openFrame[d], d, openStart[d], x);
  return finishLayout("time-order", out, x);
}

/** Builds the frame-level layout of the given kind (Left Heavy or Time Order). */
export function buildLayout(kind: "left-heavy" | "time-order", p: SampledProfile, nFrames: number): FlameLayout {
  return kind === "left-heavy" ? leftHeavyLayout(p, nFrames) : timeOrderLayout(p);
}

/**
 * The rectangle under normalised position `x` on row `row`, or -1. Binary search within the row.
 */
export function hitTest(layout: FlameLayout, x: number, row: number): number {
  if (row < 0 || row >= layout.rows) return -1;
  let lo = layout.rowStart[row];
  let hi = layout.rowStart[row + 1] - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (layout.x0[mid] <= x) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (found >= 0 && x < layout.x1[found]) return found;
  return -1;
}

/** First rectangle of `row` whose right edge is beyond `x` (rectangles of a row are sorted). */
export function firstInRow(layout: FlameLayout, row: number, x: number): number {
  let lo = layout.rowStart[row];
  let hi = layout.rowStart[row + 1];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (layout.x1[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Frames whose name contains `query`, case-insensitively (an empty query matches nothing).
 * Returns a 0/1 mask indexed by frame.
 */
export function matchFrames(frames: readonly { name: string }[], query: string): Uint8Array {
  const mask = new Uint8Array(frames.length);
  const q = query.toLowerCase();
  if (q === "") return mask;
  for (let i = 0; i < frames.length; i++) if (frames[i].name.toLowerCase().includes(q)) mask[i] = 1;
  return mask;
}

/** Result of a search over one profile. */
export interface SearchResult {
  /** Distinct frames of the profile whose name matched. */
  frames: number;
  /** Weight covered by matching rectangles, each sample counted once however many matches it holds. */
  weight: number;
  /** weight / total weight of the profile, in [0, 1] (0 for an empty profile). */
  share: number;
}

/**
 * Share of profile `p` covered by the frames in `mask`: a matching rectangle nested inside an
 * already counted match adds nothing, which is the weight of the samples whose stack holds at
 * least one matching frame. The same in Left Heavy and Time Order.
 */
export function searchShare(p: SampledProfile, mask: Uint8Array): SearchResult {
  const seen = new Uint8Array(mask.length);
  let frames = 0;
  let weight = 0;
  let total = 0;
  for (let s = 0; s < p.samples.length; s++) {
    const stack = p.samples[s];
    const w = p.weights[s];
    total += w;
    let hit = false;
    for (let d = 0; d < stack.length; d++) {
      const f = stack[d];
      if (mask[f] === 1) {
        hit = true;
        if (seen[f] === 0) {
          seen[f] = 1;
          frames++;
        }
      }
    }
    if (hit) weight += w;
  }
  return { frames, weight, share: total > 0 ? weight / total : 0 };
}

// ---------------------------------------------------------------- merged trees

/**
 * A prefix tree of key paths with a weight (and, for the diff view, a base weight) per node,
 * in growable typed arrays. Node 0 is a virtual root; parents are created before their
 * children. Built by {@link mergePaths}, which adds the paths in lexicographic order so that
 * the child a path needs is always the last child created under its parent (no hash map).
 */
export class MergeTree {
  parent: Int32Array = new Int32Array(1024);
  key: Int32Array = new Int32Array(1024);
  total: Float64Array = new Float64Array(1024);
  base: Float64Array = new Float64Array(1024);
  /** Per node: the child created last (0 = none). */
  private lastChild: Int32Array = new Int32Array(1024);
  size = 1;

  constructor() {
    this.parent[0] = -1;
    this.key[0] = -1;
  }

  /**
   * The child of `node` for `key` after adding `w` to it (and `b` to its base). Paths must
   * arrive in lexicographic order of their keys: a child other than the last one created
   * under `node` is never looked for again.
   */
  step(node: number, key: number, w: number, b = 0): number {
    let c = this.lastChild[node];
    if (c === 0 || this.key[c] !== key) {
      c = this.size;
      if (c === this.parent.length) this.grow();
      this.size = c + 1;
      this.parent[c] = node;
      this.key[c] = key;
      this.lastChild[node] = c;
    }
    this.total[c] += w;
    this.base[c] += b;
    return c;
  }

  private grow(): void {
    const cap = this.parent.length * 2;
    const i32 = (a: Int32Array): Int32Array => {
      const x = new Int32Array(cap);
      x.set(a);
      return x;
    };
    const f64 = (a: Float64Array): Float64Array => {
      const x = new Float64Array(cap);
      x.set(a);
      return x;
    };
    this.parent = i32(this.parent);
    this.key = i32(this.key);
    this.lastChild = i32(this.lastChild);
    this.total = f64(this.total);
    this.base = f64(this.base);
  }

  /**
   * Emits the tree's nodes into `out` in preorder, siblings ordered by total descending, then
   * key ascending, each child starting where its previous sibling ended (x in weight units,
   * the root's children from `x`). A node at depth d (1 for the root's children) goes on row
   * `rowOf(d)`; nodes with zero total are left out. Returns the deepest depth emitted.
   */
  emit(out: RectBuilder, x: number, rowOf: (depth: number) => number, withBase = false): number {
    const n = this.size;
    const childStart = new Int32Array(n + 1);
    for (let v = 1; v < n; v++) childStart[this.parent[v] + 1]++;
    for (let v = 0; v < n; v++) childStart[v + 1] += childStart[v];
    const fill = childStart.slice(0, n);
    const children = new Int32Array(Math.max(0, n - 1));
    for (let v = 1; v < n; v++) children[fill[this.parent[v]]++] = v;
    const total = this.total;
    const key = this.key;
    const order = (a: number, b: number): number => total[b] - total[a] || key[a] - key[b];
    for (let v = 0; v < n; v++) {
      const a = childStart[v];
      const b = childStart[v + 1];
      if (b - a > 1) children.subarray(a, b).sort(order);
    }
    const stNode: number[] = [];
    const stDepth: number[] = [];
    const stX: number[] = [];
    let deepest = 0;
    const pushChildren = (v: number, depth: number, x0: number): void => {
      const a = childStart[v];
      const b = childStart[v + 1];
      let end = x0;
      for (let i = a; i < b; i++) end += total[children[i]];
      // Pushed last child first, so the heaviest is popped first and each row's x increases.
      for (let i = b - 1; i >= a; i--) {
        const c = children[i];
        end -= total[c];
        stNode.push(c);
        stDepth.push(depth);
        stX.push(end);
      }
    };
    pushChildren(0, 1, x);
    while (stNode.length > 0) {
      const v = stNode.pop() as number;
      const depth = stDepth.pop() as number;
      const x0 = stX.pop() as number;
      if (total[v] <= 0) continue;
      if (depth > deepest) deepest = depth;
      out.push(key[v], rowOf(depth), x0, x0 + total[v], withBase ? this.base[v] : 0);
      pushChildren(v, depth + 1, x0);
    }
    return deepest;
  }

  /** Deepest depth of a node with a non-zero total (1 for the root's children; 0 when empty). */
  depth(): number {
    const n = this.size;
    const d = new Int32Array(n);
    let max = 0;
    for (let v = 1; v < n; v++) {
      d[v] = d[this.parent[v]] + 1;
      if (this.total[v] > 0 && d[v] > max) max = d[v];
    }
    return max;
  }
}

/**
 * Merges `n` key paths into a {@link MergeTree}: path i has `lengthOf(i)` keys, written by
 * `write(i, out, at)` into `out` from index `at`, and weight `weightOf(i)` (base weight
 * `baseOf(i)`, default 0). The paths are copied into one flat array and added in
 * lexicographic order (a sort of path indices), so the tree needs no hash map however many
 * nodes it has. Memory: the keys of all paths plus the tree. `nKeys` is unused by the tree
 * itself and documents the key range [0, nKeys).
 */
export function mergePaths(
  nKeys: number,
  n: number,
  lengthOf: (i: number) => number,
  write: (i: number, out: Int32Array, at: number) => void,
  weightOf: (i: number) => number,
  baseOf?: (i: number) => number,
): MergeTree {
  void nKeys;
  const start = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) start[i + 1] = start[i] + lengthOf(i);
  const flat = new Int32Array(start[n]);
  for (let i = 0; i < n; i++) write(i, flat, start[i]);
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => {
    const sa = start[a];
    const sb = start[b];
    const la = start[a + 1] - sa;
    const lb = start[b + 1] - sb;
    const m = la < lb ? la : lb;
    for (let k = 0; k < m; k++) {
      const d = flat[sa + k] - flat[sb + k];
      if (d !== 0) return d;
    }
    return la - lb;
  });
  const tree = new MergeTree();
  for (let j = 0; j < n; j++) {
    const i = order[j];
    const w = weightOf(i);
    const b = baseOf ? baseOf(i) : 0;
    if (w === 0 && b === 0) continue;
    let node = 0;
    for (let k = start[i]; k < start[i + 1]; k++) node = tree.step(node, flat[k], w, b);
  }
  return tree;
}
