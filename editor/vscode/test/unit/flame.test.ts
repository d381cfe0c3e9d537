import { strict as assert } from "node:assert";
import { test } from "node:test";
import {
  frameStats,
  hitTest,
  leftHeavyLayout,
  matchFrames,
  nextWiderIndex,
  searchShare,
  timeOrderLayout,
  type FlameLayout,
} from "../../src/model/flame";
import type { SampledProfile } from "../../src/model/types";
import { validateSpeedscope } from "../../src/model/validate";
import { readFixture } from "../support/paths";

const DOC = validateSpeedscope(readFixture("demo.speedscope.json"));

function profile(samples: number[][], weights?: number[]): SampledProfile {
  return { name: "p", unit: "seconds", startValue: 0, endValue: 0, samples, weights: weights ?? samples.map(() => 1) };
}

/** The layout as [frame, depth, x0, x1] rows, in row-then-x order. */
function rects(l: FlameLayout): [number, number, number, number][] {
  const out: [number, number, number, number][] = [];
  for (let k = 0; k < l.count; k++) out.push([l.frame[k], l.depth[k], l.x0[k], l.x1[k]]);
  return out;
}

function approxRects(actual: [number, number, number, number][], expected: [number, number, number, number][]): void {
  assert.equal(actual.length, expected.length, `rect count: ${JSON.stringify(actual)}`);
  actual.forEach((r, i) => {
    const e = expected[i];
    assert.equal(r[0], e[0], `frame of rect ${i}`);
    assert.equal(r[1], e[1], `depth of rect ${i}`);
    assert.ok(Math.abs(r[2] - e[2]) < 1e-12 && Math.abs(r[3] - e[3]) < 1e-12, `x of rect ${i}: ${r} vs ${e}`);
  });
}

test("Left Heavy on the running example's main fiber", () => {
  const l = leftHeavyLayout(DOC.profiles[0], DOC.frames.length);
  assert.equal(l.rows, 2);
  assert.ok(Math.abs(l.totalWeight - 0.003) < 1e-15);
  // main → crunch in all three samples: one function, one frame (its lines are hotLines)
  approxRects(rects(l), [
    [1, 0, 0, 1],
    [0, 1, 0, 1],
  ]);
  assert.deepEqual(Array.from(l.rowStart), [0, 1, 2]);
});

test("Left Heavy merges stacks, orders siblings by total desc then frame index", () => {
  // Root 0 with children 3 (weight 2), 1 (weight 2), 2 (weight 5): order 2, 1, 3.
  const p = profile([[0, 3], [0, 1], [0, 2], [0, 2, 4], [0, 3, 4], [0, 1]], [1, 1, 2, 3, 1, 1]);
  const l = leftHeavyLayout(p, 5);
  approxRects(rects(l), [
    [0, 0, 0, 1],
    [2, 1, 0, 5 / 9],
    [1, 1, 5 / 9, 7 / 9],
    [3, 1, 7 / 9, 1],
    [4, 2, 0, 3 / 9],
    [4, 2, 7 / 9, 8 / 9],
  ]);
  // Weights are in the profile's unit.
  assert.deepEqual(Array.from(l.weight), [9, 5, 2, 2, 3, 1]);
});

test("Left Heavy with several roots and an empty stack", () => {
  const p = profile([[1], [], [0], [0]], [1, 1, 1, 1]);
  const l = leftHeavyLayout(p, 2);
  approxRects(rects(l), [
    [0, 0, 0, 0.5],
    [1, 0, 0.5, 0.75],
  ]);
});

test("Time Order keeps shared prefixes as one slab, no gaps", () => {
  const l = timeOrderLayout(DOC.profiles[0]);
  approxRects(rects(l), [
    [1, 0, 0, 1],
    [0, 1, 0, 1],
  ]);
  const p = profile([[0, 1], [0, 2], [0, 1], [3], [3, 1, 1], [3, 1]], [1, 1, 1, 1, 1, 1]);
  approxRects(rects(timeOrderLayout(p)), [
    [0, 0, 0, 3 / 6],
    [3, 0, 3 / 6, 1],
    [1, 1, 0, 1 / 6],
    [2, 1, 1 / 6, 2 / 6],
    [1, 1, 2 / 6, 3 / 6],
    [1, 1, 4 / 6, 1],
    [1, 2, 4 / 6, 5 / 6],
  ]);
});

test("frame statistics count a recursive frame once per sample", () => {
  // f=0 recursive: [main, f, f, f] then [main, f, g] then [main].
  const p = profile([[2, 0, 0, 0], [2, 0, 1], [2]], [2, 3, 5]);
  const s = frameStats(p, 3);
  assert.deepEqual(Array.from(s.total), [5, 3, 10]);
  assert.deepEqual(Array.from(s.self), [2, 3, 5]);
  assert.deepEqual(Array.from(s.samples), [2, 1, 3]);
  assert.equal(s.totalWeight, 10);
  const demo = frameStats(DOC.profiles[1], DOC.frames.length);
  assert.deepEqual(Array.from(demo.samples), [0, 0, 2, 2]);
  assert.ok(Math.abs(demo.self[2] - 0.004) < 1e-15);
});

test("layouts and statistics are iterative: a 200,000-deep stack does not overflow", () => {
  const depth = 200_000;
  const deep = Array.from({ length: depth }, (_, i) => i % 2);
  const p = profile([deep, deep.slice(0, 10)], [1, 1]);
  const lh = leftHeavyLayout(p, 2);
  assert.equal(lh.rows, depth);
  assert.equal(lh.count, depth);
  const to = timeOrderLayout(p);
  assert.equal(to.rows, depth);
  assert.equal(to.count, depth);
  assert.deepEqual(Array.from(frameStats(p, 2).samples), [2, 2]);
});

test("hit testing finds the rectangle under a point", () => {
  const p = profile([[0, 3], [0, 1], [0, 2], [0, 2, 4], [0, 3, 4], [0, 1]], [1, 1, 2, 3, 1, 1]);
  const l = leftHeavyLayout(p, 5);
  assert.equal(l.frame[hitTest(l, 0.5, 0)], 0);
  assert.equal(l.frame[hitTest(l, 0.1, 1)], 2);
  assert.equal(l.frame[hitTest(l, 0.6, 1)], 1);
  assert.equal(l.frame[hitTest(l, 0.99, 1)], 3);
  assert.equal(l.frame[hitTest(l, 0.1, 2)], 4);
  assert.equal(hitTest(l, 0.4, 2), -1);
  assert.equal(l.frame[hitTest(l, 0.85, 2)], 4);
  assert.equal(hitTest(l, 0.95, 2), -1);
  assert.equal(hitTest(l, 0.5, 3), -1);
  assert.equal(hitTest(l, 0.5, -1), -1);
});

test("search is a case-insensitive substring match; nested matches are not counted twice", () => {
  const frames = [{ name: "main" }, { name: "Crunch" }, { name: "crunch_inner" }, { name: "io" }];
  const mask = matchFrames(frames, "CRUNCH");
  assert.deepEqual(Array.from(mask), [0, 1, 1, 0]);
  assert.deepEqual(Array.from(matchFrames(frames, "")), [0, 0, 0, 0]);
  // Stack [main, Crunch, crunch_inner] holds two matches, counted once.
  const p = profile([[0, 1, 2], [0, 1], [0, 3], [0]], [2, 1, 1, 4]);
  const r = searchShare(p, mask);
  assert.equal(r.frames, 2);
  assert.equal(r.weight, 3);
  assert.equal(r.share, 3 / 8);
  const none = searchShare(p, matchFrames(frames, "zzz"));
  assert.deepEqual(none, { frames: 0, weight: 0, share: 0 });
  const demo = searchShare(DOC.profiles[0], matchFrames(DOC.frames, "crunch"));
  assert.equal(demo.frames, 1);
  assert.ok(Math.abs(demo.share - 1) < 1e-12);
  assert.deepEqual(searchShare(profile([]), mask), { frames: 0, weight: 0, share: 0 });
});

test("nextWider: per rectangle, the next wider one of its row (what a redraw jumps to)", () => {
  // Random rows, ties included, against a scan of every later rectangle of the row.
  let seed = 12345;
  const rand = (): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const sizes = [0, 1, 2, 7, 40, 300];
  const rowStart = new Int32Array(sizes.length + 1);
  sizes.forEach((n, d) => (rowStart[d + 1] = rowStart[d] + n));
  const count = rowStart[sizes.length];
  const x0 = new Float64Array(count);
  const x1 = new Float64Array(count);
  for (let d = 0; d < sizes.length; d++) {
    let x = 0;
    for (let k = rowStart[d]; k < rowStart[d + 1]; k++) {
      const w = rand() < 0.2 ? 0.25 : Math.floor(rand() * 8) / 64;
      x0[k] = x;
      x1[k] = x += w;
    }
  }
  const next = nextWiderIndex(x0, x1, rowStart);
  for (let d = 0; d < sizes.length; d++) {
    for (let k = rowStart[d]; k < rowStart[d + 1]; k++) {
      let j = k + 1;
      while (j < rowStart[d + 1] && x1[j] - x0[j] <= x1[k] - x0[k]) j++;
      assert.equal(next[k], j, `row ${d}, rectangle ${k}`);
    }
  }
  // Every layout carries it: the Left Heavy layout of the running example.
  const l = leftHeavyLayout(DOC.profiles[0], DOC.frames.length);
  assert.deepEqual(Array.from(l.nextWider), Array.from(nextWiderIndex(l.x0, l.x1, l.rowStart)));
  assert.equal(l.nextWider.length, l.count);
});
