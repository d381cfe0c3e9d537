/**
 * Shapes of the two exports the editor reads (docs/spec/profiler.md §(g.2), §(g.5)) after validation
 * (§(j) "Validation"). Plain data: safe to post to the webview and to structured-clone.
 */

/** One entry of `shared.frames`: `file` is "" and `line` 0 when unknown. */
export interface Frame {
  name: string;
  file: string;
  line: number;
}

/** One `profiles[]` entry of type "sampled": `samples[i]` are frame indices, root first. */
export interface SampledProfile {
  name: string;
  unit: string;
  startValue: number;
  endValue: number;
  /** Per sample: frame indices into `SpeedscopeDoc.frames`, root first. */
  samples: number[][];
  /** Per sample: its weight in `unit` (seconds for osprey exports); same length as `samples`. */
  weights: number[];
  /**
   * Per sample, when the export says: 0 on-CPU, 1 waiting (the raw `state`, §(e)); from the
   * profile's optional `states` array (docs/editor.md "Sample states").
   */
  states?: Uint8Array;
}

/** A validated `<stem>.speedscope.json`. */
export interface SpeedscopeDoc {
  name: string;
  /** Index into `profiles`, already checked to be in range (0 when the file's was not). */
  activeProfileIndex: number;
  frames: Frame[];
  /** Never empty. */
  profiles: SampledProfile[];
}

/** `fibers[]` of the summary: every thread row, in row order, even without samples. */
export interface FiberSummary {
  id: number;
  label: string;
  oncpuSamples: number;
  samples: number;
}

/** `hotFunctions[]` of the summary; percentages are shares of all on-CPU weight × 100. */
export interface HotFunction {
  file: string;
  kind: "user" | "runtime";
  line: number;
  name: string;
  selfPct: number;
  selfSamples: number;
  totalPct: number;
  totalSamples: number;
}

/** `hotLines[]` of the summary: `line` is 1-based, `pct` a share × 100, `samples` a count. */
export interface HotLine {
  file: string;
  line: number;
  pct: number;
  samples: number;
}

/** A validated `<stem>.profile.json`. */
export interface ProfileSummary {
  version: number;
  program: string;
  wallSeconds: number;
  cpuSeconds: number;
  sampleCount: number;
  rateHz: number;
  droppedSamples: number;
  fibers: FiberSummary[];
  hotFunctions: HotFunction[];
  hotLines: HotLine[];
}

/** What the extension posts to the webview: `{type: "profile", ...}`. */
export interface ProfileMessage {
  type: "profile";
  title: string;
  summary: unknown;
  speedscope: unknown;
}
