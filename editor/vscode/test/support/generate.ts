/**
 * Deterministic generator of large export pairs (speedscope + summary) of the documented
 * shape, for the scale tests and the benchmark. Frames form a random call tree; every frame is
 * the leaf of at least one sample, and samples are in depth-first order so consecutive samples
 * share prefixes the way a running program's do.
 */
import { frameStats } from "../../src/model/flame";
import { isUserFile } from "../../src/model/kind";

/** mulberry32: a small seeded PRNG returning floats in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface GenOptions {
  frames: number;
  /** Extra samples on top of one per frame. */
  extraSamples?: number;
  seed?: number;
  /** Weight of one sample in seconds (997 Hz by default). */
  interval?: number;
}

export interface Generated {
  speedscope: Record<string, unknown>;
  summary: Record<string, unknown>;
  sampleCount: number;
  maxDepth: number;
}

export function generateProfile(o: GenOptions): Generated {
  const rand = prng(o.seed ?? 1);
  const n = o.frames;
  const interval = o.interval ?? 1 / 997;
  const parent = new Int32Array(n);
  const depth = new Int32Array(n);
  parent[0] = -1;
  let maxDepth = 1;
  for (let i = 1; i < n; i++) {
    // Prefer recent nodes so the tree gets some depth, like real call trees.
    const p = rand() < 0.6 ? Math.max(0, i - 1 - Math.floor(rand() * 8)) : Math.floor(rand() * i);
    parent[i] = p;
    depth[i] = depth[p] + 1;
    if (depth[i] + 1 > maxDepth) maxDepth = depth[i] + 1;
  }
  const files = ["/w/app/main.osp", "/w/app/util.osp", "/w/app/ml.ospml", "/opt/osprey/runtime/core/sched.c", ""];
  const frames = Array.from({ length: n }, (_, i) => {
    const file = files[i % files.length];
    return { file, line: file === "" ? 0 : 1 + (i % 400), name: file === "" ? `0x${(0x401000 + i * 16).toString(16)}` : `fn_${i}` };
  });
  // Children lists, then a depth-first order of nodes.
  const kids: number[][] = Array.from({ length: n }, () => []);
  for (let i = 1; i < n; i++) kids[parent[i]].push(i);
  const order: number[] = [];
  const st = [0];
  while (st.length) {
    const v = st.pop() as number;
    order.push(v);
    for (let j = kids[v].length - 1; j >= 0; j--) st.push(kids[v][j]);
  }
  const stackOf = (v: number): number[] => {
    const s: number[] = [];
    for (let u = v; u >= 0; u = parent[u]) s.push(u);
    return s.reverse();
  };
  const samples: number[][] = [];
  const weights: number[] = [];
  const extra = o.extraSamples ?? 0;
  for (const v of order) {
    const reps = 1 + (rand() < extra / n ? 1 + Math.floor(rand() * 4) : 0);
    for (let r = 0; r < reps; r++) {
      samples.push(stackOf(v));
      weights.push(interval * (0.7 + 0.6 * rand()));
    }
  }
  const endValue = weights.reduce((a, b) => a + b, 0);
  const speedscope = {
    $schema: "https://www.speedscope.app/file-format-schema.json",
    activeProfileIndex: 0,
    exporter: "osprey",
    name: "big.osp",
    profiles: [{ endValue, name: "main", samples, startValue: 0, type: "sampled", unit: "seconds", weights }],
    shared: { frames },
  };
  const stats = frameStats({ name: "main", unit: "seconds", startValue: 0, endValue, samples, weights }, n);
  const top = Array.from({ length: n }, (_, i) => i)
    .sort((a, b) => stats.self[b] - stats.self[a] || a - b)
    .slice(0, 50);
  const pct = (w: number): number => Math.round((1000 * w) / endValue) / 10;
  const summary = {
    version: 1,
    program: "big.osp",
    wallSeconds: Number(endValue.toFixed(3)),
    cpuSeconds: Number(endValue.toFixed(3)),
    sampleCount: samples.length,
    rateHz: 997,
    droppedSamples: 0,
    fibers: [{ id: 0, label: "main", oncpuSamples: samples.length, samples: samples.length }],
    hotFunctions: top.map((i) => ({
      file: frames[i].file,
      kind: isUserFile(frames[i].file) ? "user" : "runtime",
      line: frames[i].line,
      name: frames[i].name,
      selfPct: pct(stats.self[i]),
      selfSamples: Math.round(stats.self[i] / interval),
      totalPct: pct(stats.total[i]),
      totalSamples: stats.samples[i],
    })),
    hotLines: [],
  };
  return { speedscope, summary, sampleCount: samples.length, maxDepth };
}
