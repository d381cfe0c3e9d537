/**
 * Validation of the two documents the editor reads (docs/spec/profiler.md §(j) "Validation").
 * Each function takes parsed JSON of unknown shape and returns a normalised copy, or throws
 * a {@link ValidationError} whose message names the document, the profile and the index.
 */
import { frameKind } from "./kind";
import type {
  FiberSummary,
  Frame,
  HotFunction,
  HotLine,
  ProfileSummary,
  SampledProfile,
  SpeedscopeDoc,
} from "./types";

/** A malformed document; `message` is one line suitable for an error notification. */
export class ValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ValidationError";
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isNumber(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

function num(v: unknown, fallback: number): number {
  return isNumber(v) ? v : fallback;
}

function str(v: unknown, fallback: string): string {
  return typeof v === "string" ? v : fallback;
}

function describe(v: unknown): string {
  if (v === undefined) return "missing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v)}`;
  if (typeof v === "number") return String(v);
  return `a ${typeof v}`;
}

/**
 * Validates `<stem>.profile.json` (§(g.5)). `version`, `wallSeconds`, `cpuSeconds`,
 * `sampleCount` and `rateHz` must be finite numbers; missing or non-array `fibers`,
 * `hotFunctions`, `hotLines` become empty; hot functions without a non-empty string name and
 * hot lines without a non-empty file or with a line below 1 are dropped. Throws ValidationError.
 */
export function validateSummary(doc: unknown): ProfileSummary {
  const where = "profile summary";
  if (!isObject(doc)) throw new ValidationError(`${where}: expected a JSON object, got ${describe(doc)}`);
  for (const key of ["version", "wallSeconds", "cpuSeconds", "sampleCount", "rateHz"]) {
    if (!isNumber(doc[key])) {
      throw new ValidationError(`${where}: "${key}" must be a number, got ${describe(doc[key])}`);
    }
  }
  const fibers: FiberSummary[] = [];
  if (Array.isArray(doc.fibers)) {
    doc.fibers.forEach((f, i) => {
      // Every row is kept (even a malformed one) so chip i stays aligned with profile i.
      const o = isObject(f) ? f : {};
      const id = num(o.id, 0);
      fibers.push({
        id,
        label: str(o.label, `fiber-${i}`),
        oncpuSamples: Math.max(0, num(o.oncpuSamples, 0)),
        samples: Math.max(0, num(o.samples, 0)),
      });
    });
  }
  const hotFunctions: HotFunction[] = [];
  if (Array.isArray(doc.hotFunctions)) {
    for (const h of doc.hotFunctions) {
      if (!isObject(h) || typeof h.name !== "string" || h.name === "") continue;
      const file = str(h.file, "");
      hotFunctions.push({
        file,
        kind: h.kind === "user" || h.kind === "runtime" ? h.kind : frameKind(file),
        line: Math.max(0, Math.trunc(num(h.line, 0))),
        name: h.name,
        selfPct: num(h.selfPct, 0),
        selfSamples: num(h.selfSamples, 0),
        totalPct: num(h.totalPct, 0),
        totalSamples: num(h.totalSamples, 0),
      });
    }
  }
  const hotLines: HotLine[] = [];
  if (Array.isArray(doc.hotLines)) {
    for (const h of doc.hotLines) {
      if (!isObject(h) || typeof h.file !== "string" || h.file === "") continue;
      if (!isNumber(h.line) || h.line < 1) continue;
      hotLines.push({ file: h.file, line: Math.trunc(h.line), pct: num(h.pct, 0), samples: num(h.samples, 0) });
    }
  }
  return {
    version: doc.version as number,
    program: str(doc.program, ""),
    wallSeconds: doc.wallSeconds as number,
    cpuSeconds: doc.cpuSeconds as number,
    sampleCount: doc.sampleCount as number,
    rateHz: doc.rateHz as number,
    droppedSamples: Math.max(0, num(doc.droppedSamples, 0)),
    fibers,
    hotFunctions,
    hotLines,
  };
}

/**
 * Validates `<stem>.speedscope.json` (§(g.2)): `shared.frames` is an array of objects with a
 * string `name`; `profiles` is a non-empty array; each profile has type "sampled", arrays
 * `samples` and `weights` of equal length, finite non-negative weights and integer frame
 * indices in range; an optional `states` array (0 on-CPU, 1 waiting) has one entry per sample.
 * Throws ValidationError naming the profile and index of the first problem.
 * The returned document shares the (already checked) sample arrays with the input.
 */
export function validateSpeedscope(doc: unknown): SpeedscopeDoc {
  const where = "speedscope";
  if (!isObject(doc)) throw new ValidationError(`${where}: expected a JSON object, got ${describe(doc)}`);
  const shared = doc.shared;
  if (!isObject(shared)) throw new ValidationError(`${where}: "shared" must be an object, got ${describe(shared)}`);
  if (!Array.isArray(shared.frames)) {
    throw new ValidationError(`${where}: "shared.frames" must be an array, got ${describe(shared.frames)}`);
  }
  const frames: Frame[] = new Array(shared.frames.length);
  for (let i = 0; i < shared.frames.length; i++) {
    const f: unknown = shared.frames[i];
    if (!isObject(f)) throw new ValidationError(`${where}: shared.frames[${i}] must be an object, got ${describe(f)}`);
    if (typeof f.name !== "string") {
      throw new ValidationError(`${where}: shared.frames[${i}] has no string "name" (got ${describe(f.name)})`);
    }
    const line = num(f.line, 0);
    frames[i] = { name: f.name, file: str(f.file, ""), line: line > 0 ? Math.trunc(line) : 0 };
  }
  const nFrames = frames.length;
  if (!Array.isArray(doc.profiles) || doc.profiles.length === 0) {
    throw new ValidationError(`${where}: "profiles" must be a non-empty array, got ${describe(doc.profiles)}`);
  }
  const profiles: SampledProfile[] = [];
  let docSum = 0;
  doc.profiles.forEach((p: unknown, pi: number) => {
    if (!isObject(p)) throw new ValidationError(`${where}: profile ${pi} must be an object, got ${describe(p)}`);
    const pname = str(p.name, `profile ${pi}`);
    const at = `${where}: profile ${pi} (${JSON.stringify(pname)})`;
    if (p.type !== "sampled") throw new ValidationError(`${at}: "type" must be "sampled", got ${describe(p.type)}`);
    if (!Array.isArray(p.samples)) throw new ValidationError(`${at}: "samples" must be an array, got ${describe(p.samples)}`);
    if (!Array.isArray(p.weights)) throw new ValidationError(`${at}: "weights" must be an array, got ${describe(p.weights)}`);
    const samples = p.samples as unknown[];
    const weights = p.weights as unknown[];
    if (samples.length !== weights.length) {
      throw new ValidationError(`${at}: "samples" has ${samples.length} entries but "weights" has ${weights.length}`);
    }
    let sum = 0;
    for (let i = 0; i < weights.length; i++) {
      const w = weights[i];
      if (!isNumber(w) || w < 0) {
        throw new ValidationError(`${at}: weights[${i}] must be a finite non-negative number, got ${describe(w)}`);
      }
      sum += w;
    }
    // Layouts divide by the total weight: an infinite one would put every rectangle at NaN.
    if (!Number.isFinite(sum)) throw new ValidationError(`${at}: the weights add up to more than the largest number (${Number.MAX_VALUE})`);
    docSum += sum;
    for (let i = 0; i < samples.length; i++) {
      const s = samples[i];
      if (!Array.isArray(s)) throw new ValidationError(`${at}: samples[${i}] must be an array of frame indices, got ${describe(s)}`);
      for (let j = 0; j < s.length; j++) {
        const f = s[j];
        if (typeof f !== "number" || !Number.isInteger(f) || f < 0 || f >= nFrames) {
          throw new ValidationError(
            `${at}: samples[${i}][${j}] is ${describe(f)}, not a frame index ` +
              (nFrames > 0 ? `(0..${nFrames - 1})` : `(shared.frames is empty)`),
          );
        }
      }
    }
    let states: Uint8Array | undefined;
    if (p.states !== undefined) {
      if (!Array.isArray(p.states)) throw new ValidationError(`${at}: "states" must be an array, got ${describe(p.states)}`);
      if (p.states.length !== samples.length) {
        throw new ValidationError(`${at}: "states" has ${p.states.length} entries but "samples" has ${samples.length}`);
      }
      states = new Uint8Array(samples.length);
      for (let i = 0; i < samples.length; i++) {
        const v: unknown = p.states[i];
        if (v !== 0 && v !== 1) throw new ValidationError(`${at}: states[${i}] must be 0 (on-CPU) or 1 (waiting), got ${describe(v)}`);
        states[i] = v;
      }
    }
    profiles.push({
      ...(states ? { states } : {}),
      name: pname,
      unit: str(p.unit, "seconds"),
      startValue: num(p.startValue, 0),
      endValue: num(p.endValue, 0),
      samples: samples as number[][],
      weights: weights as number[],
    });
  });
  // All fibers merges every profile's samples.
  if (!Number.isFinite(docSum)) {
    throw new ValidationError(`${where}: the weights of all profiles add up to more than the largest number (${Number.MAX_VALUE})`);
  }
  const api = doc.activeProfileIndex;
  const activeProfileIndex =
    typeof api === "number" && Number.isInteger(api) && api >= 0 && api < profiles.length ? api : 0;
  return { name: str(doc.name, ""), activeProfileIndex, frames, profiles };
}
