/**
 * The views added by docs/spec/profiler.md §(l.10): the sample selection behind every view
 * (one fiber or all fibers merged, on-CPU samples only or all), the function table, and the
 * Inverted and Sandwich layouts. Functions are identified by `(name, file)` (§(g.1)), so both
 * views merge frames of one function however the export keys its frames (per line, or per
 * function as §(l.6) has it). Iterative throughout; memory linear in the distinct stacks.
 */
import { RectBuilder, finishLayout, mergePaths, type FlameLayout, type ViewKind } from "./flame";
import type { FiberSummary, Frame, SampledProfile, SpeedscopeDoc } from "./types";

// ---------------------------------------------------------------- functions

/** The functions of a document: frames merged by `(name, file)`. */
export interface FunctionTable {
  /** Per frame of `shared.frames`: its function's index. */
  funcOf: Int32Array;
  /** Per function: name, file and display line (the smallest non-zero line of its frames, 0 if none). */
  functions: Frame[];
  /** Per function: its first frame in `shared.frames` (the frame whose colour the function takes). */
  firstFrame: Int32Array;
}

/** Groups `frames` by `(name, file)` compared as a pair (never a spliced string); functions are numbered by first appearance. */
export function functionTable(frames: readonly Frame[]): FunctionTable {
  const byFile = new Map<string, Map<string, number>>();
  const funcOf = new Int32Array(frames.length);
  const functions: Frame[] = [];
  const first: number[] = [];
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i];
    let byName = byFile.get(f.file);
    if (!byName) {
      byName = new Map();
      byFile.set(f.file, byName);
    }
    let id = byName.get(f.name);
    if (id === undefined) {
      id = functions.length;
      byName.set(f.name, id);
      functions.push({ name: f.name, file: f.file, line: f.line });
      first.push(i);
    } else if (f.line > 0 && (functions[id].line === 0 || f.line < functions[id].line)) {
      functions[id].line = f.line;
    }
    funcOf[i] = id;
  }
  return { funcOf, functions, firstFrame: Int32Array.from(first) };
}

// ---------------------------------------------------------------- selection

/**
 * What is known about the state of one profile's samples: per sample (`Uint8Array`, 0 on-CPU,
 * 1 waiting, from the profile's `states`), or for the whole profile from the summary's fiber
 * counts (`"on-cpu"` when every sample is on-CPU, `"waiting"` when none is), or `"mixed"`
 * when the fiber has both and the export does not say which sample is which.
 */
export type ProfileStates = Uint8Array | "on-cpu" | "waiting" | "mixed";

/**
 * The state knowledge of every profile of `doc`. `fibers` are the summary fibers aligned with the
 * profiles (chip i ↔ profile i), or null when there is no summary or it does not line up; then
 * profiles without `states` count as on-CPU.
 */
export function profileStates(doc: SpeedscopeDoc, fibers: readonly FiberSummary[] | null): ProfileStates[] {
  return doc.profiles.map((p, i) => {
    if (p.states) return p.states;
    const f = fibers ? fibers[i] : undefined;
    if (!f) return "on-cpu";
    if (f.oncpuSamples <= 0 && f.samples > 0) return "waiting";
    if (f.oncpuSamples >= f.samples) return "on-cpu";
    return "mixed";
  });
}

/** Number of on-CPU samples of each profile, or -1 where it cannot be told (`"mixed"` without a summary count). */
export function onCpuCounts(doc: SpeedscopeDoc, states: readonly ProfileStates[], fibers: readonly FiberSummary[] | null): number[] {
  return doc.profiles.map((p, i) => {
    const s = states[i];
    if (s === "on-cpu") return p.samples.length;
    if (s === "waiting") return 0;
    if (s === "mixed") return fibers && fibers[i] ? fibers[i].oncpuSamples : -1;
    let n = 0;
    for (let k = 0; k < s.length; k++) if (s[k] === 0) n++;
    return n;
  });
}

/**
 * The samples one view shows: those of the profiles `which` (one fiber, or every fiber for
 * "All fibers", concatenated in profile order), keeping only on-CPU samples when `onCpuOnly`
 * (a `"mixed"` profile cannot be filtered and is kept whole). The stacks are shared with `doc`.
 */
export function selectSamples(
  doc: SpeedscopeDoc,
  which: readonly number[],
  onCpuOnly: boolean,
  states: readonly ProfileStates[],
  name: string,
): SampledProfile {
  const samples: number[][] = [];
  const weights: number[] = [];
  let end = 0;
  for (const i of which) {
    const p = doc.profiles[i];
    const s = states[i];
    if (onCpuOnly && s === "waiting") continue;
    const per = onCpuOnly && s instanceof Uint8Array ? s : null;
    for (let k = 0; k < p.samples.length; k++) {
      if (per && per[k] !== 0) continue;
      samples.push(p.samples[k]);
      weights.push(p.weights[k]);
      end += p.weights[k];
    }
  }
  const unit = (which.length > 0 ? doc.profiles[which[0]]?.unit : undefined) ?? doc.profiles[0]?.unit ?? "seconds";
  return { name, unit, startValue: 0, endValue: end, samples, weights };
}

/**
 * Inverted (bottom-up): every stack read leaf first, mapped to functions and merged; the roots
 * are the leaf functions, each as wide as its self weight; below a function, the functions
 * that called it. x normalised by the selection's total weight; frames index functions.
 */
export function invertedLayout(p: SampledProfile, ft: FunctionTable): FlameLayout {
  const funcOf = ft.funcOf;
  const tree = mergePaths(
    ft.functions.length,
    p.samples.length,
    (s) => p.samples[s].length,
    (s, out, at) => {
      const stack = p.samples[s];
      for (let d = stack.length - 1; d >= 0; d--) out[at++] = funcOf[stack[d]];
    },
    (s) => p.weights[s],
  );
  let tw = 0;
  for (let s = 0; s < p.weights.length; s++) tw += p.weights[s];
  const out = new RectBuilder();
  tree.emit(out, 0, (depth) => depth - 1);
  return finishLayout("inverted", out, tw, "functions");
}

/** A Sandwich layout and where its focused function sits. */
export interface SandwichLayout extends FlameLayout {
  /** The row of the focused function: its callers are on the rows above, its callees below. */
  focusRow: number;
  /** The focused function's index in the function table. */
  focus: number;
}

/**
 * Sandwich for function `focus`: over every sample containing it, merged at its outermost
 * occurrence (so a recursive function is counted once per sample), the callers (the stack
 * above that occurrence, read towards the root) drawn upwards from the function, and the
 * callees (the stack below it) drawn downwards. The function's row spans the full width,
 * which is its total weight; x is normalised by that total. Frames index functions.
 */
export function sandwichLayout(p: SampledProfile, ft: FunctionTable, focus: number): SandwichLayout {
  const nf = ft.functions.length;
  const funcOf = ft.funcOf;
  // The outermost occurrence of the function in each sample, -1 when it has none.
  const at = new Int32Array(p.samples.length).fill(-1);
  let total = 0;
  for (let s = 0; s < p.samples.length; s++) {
    const stack = p.samples[s];
    for (let d = 0; d < stack.length; d++) {
      if (funcOf[stack[d]] === focus) {
        at[s] = d;
        total += p.weights[s];
        break;
      }
    }
  }
  const weight = (s: number): number => (at[s] < 0 ? 0 : p.weights[s]);
  const callers = mergePaths(
    nf,
    p.samples.length,
    (s) => Math.max(0, at[s]),
    (s, out, o) => {
      const stack = p.samples[s];
      for (let d = at[s] - 1; d >= 0; d--) out[o++] = funcOf[stack[d]];
    },
    weight,
  );
  const callees = mergePaths(
    nf,
    p.samples.length,
    (s) => (at[s] < 0 ? 0 : p.samples[s].length - at[s] - 1),
    (s, out, o) => {
      const stack = p.samples[s];
      for (let d = at[s] + 1; d < stack.length; d++) out[o++] = funcOf[stack[d]];
    },
    weight,
  );
  const up = callers.depth();
  const out = new RectBuilder();
  callers.emit(out, 0, (depth) => up - depth);
  if (total > 0) out.push(focus, up, 0, total);
  callees.emit(out, 0, (depth) => up + depth);
  const kind: ViewKind = "sandwich";
  const l = finishLayout(kind, out, total, "functions");
  return { ...l, focusRow: up, focus };
}
