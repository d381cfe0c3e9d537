import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { DiffParseError, diffChanges, diffLayout, diffRgb, maxDelta, parseDiffFolded } from "../../src/model/diff";
import { frameStats, type FlameLayout } from "../../src/model/flame";
import type { Frame, SampledProfile, SpeedscopeDoc } from "../../src/model/types";
import { validateSpeedscope } from "../../src/model/validate";
import { functionTable, invertedLayout, onCpuCounts, profileStates, sandwichLayout, selectSamples } from "../../src/model/views";
import { ARGS_SETTING, resolveRunSettings } from "../../src/runSettings";

function profile(samples: number[][], weights?: number[], states?: number[]): SampledProfile {
  return { name: "p", unit: "seconds", startValue: 0, endValue: 0, samples, weights: weights ?? samples.map(() => 1), ...(states ? { states: Uint8Array.from(states) } : {}) };
}

/** The layout as [frame, row, x0, x1] in row-then-x order. */
function rects(l: FlameLayout): [number, number, number, number][] {
  const out: [number, number, number, number][] = [];
  for (let k = 0; k < l.count; k++) out.push([l.frame[k], l.depth[k], l.x0[k], l.x1[k]]);
  return out;
}

function approx(actual: [number, number, number, number][], expected: [number, number, number, number][]): void {
  assert.equal(actual.length, expected.length, JSON.stringify(actual));
  actual.forEach((r, i) => {
    const e = expected[i];
    assert.deepEqual([r[0], r[1]], [e[0], e[1]], `rect ${i}: ${JSON.stringify(actual)}`);
    assert.ok(Math.abs(r[2] - e[2]) < 1e-12 && Math.abs(r[3] - e[3]) < 1e-12, `x of rect ${i}: ${r} vs ${e}`);
  });
}

// Frames as an export keyed by line would have them: f appears on two lines.
const FRAMES: Frame[] = [
  { name: "main", file: "/w/a.osp", line: 30 }, // 0
  { name: "f", file: "/w/a.osp", line: 7 }, // 1
  { name: "f", file: "/w/a.osp", line: 5 }, // 2
  { name: "g", file: "/w/a.osp", line: 12 }, // 3
  { name: "f", file: "/w/b.osp", line: 1 }, // 4: same name, other file: another function
  { name: "h", file: "", line: 0 }, // 5
];

test("functions are (name, file) pairs with the smallest non-zero line; never a spliced key", () => {
  const ft = functionTable(FRAMES);
  assert.deepEqual(Array.from(ft.funcOf), [0, 1, 1, 2, 3, 4]);
  assert.deepEqual(ft.functions.map((f) => [f.name, f.file, f.line]), [
    ["main", "/w/a.osp", 30],
    ["f", "/w/a.osp", 5],
    ["g", "/w/a.osp", 12],
    ["f", "/w/b.osp", 1],
    ["h", "", 0],
  ]);
  assert.deepEqual(Array.from(ft.firstFrame), [0, 1, 3, 4, 5]);
  const tricky = functionTable([
    { name: "z", file: "/w/a b.osp", line: 1 },
    { name: "b.osp z", file: "/w/a", line: 1 },
  ]);
  assert.equal(tricky.functions.length, 2);
});

test("Inverted: the roots are the leaf functions with their self weights, callers below", () => {
  const ft = functionTable(FRAMES);
  // main→f@7 (2), main→f@5 (1), main→g→f@7 (1), main→g (3).
  const p = profile([[0, 1], [0, 2], [0, 3, 1], [0, 3], [0, 1]], [1, 1, 1, 3, 1]);
  const l = invertedLayout(p, ft);
  assert.equal(l.table, "functions");
  assert.equal(l.kind, "inverted");
  // Roots: f (self 4 = 2 + 1 + 1) first, then g (3); below f: main (3) then g (1); below g→ main.
  approx(rects(l), [
    [1, 0, 0, 4 / 7],
    [2, 0, 4 / 7, 1],
    [0, 1, 0, 3 / 7],
    [2, 1, 3 / 7, 4 / 7],
    [0, 1, 4 / 7, 1],
    [0, 2, 3 / 7, 4 / 7],
  ]);
  const st = frameStats(p, FRAMES.length, ft.funcOf, ft.functions.length);
  assert.equal(st.self[1], 4);
  assert.equal(st.selfSamples[1], 4);
  assert.equal(st.samples[0], 5);
});

test("Sandwich: callers above and callees below the outermost occurrence, merged over every one", () => {
  const ft = functionTable(FRAMES);
  // f is called from main directly and through g; f calls g once; one sample recurses f→f.
  const p = profile([[0, 1], [0, 3, 1], [0, 1, 3], [0, 2, 1], [0, 3]], [1, 1, 1, 1, 5]);
  const l = sandwichLayout(p, ft, 1);
  assert.equal(l.table, "functions");
  assert.equal(l.focus, 1);
  // Callers of f: main (direct, 3 samples) and g→main (1): two caller rows above f.
  assert.equal(l.focusRow, 2);
  approx(rects(l), [
    [0, 0, 3 / 4, 1], // main above g
    [0, 1, 0, 3 / 4], // main: direct caller
    [2, 1, 3 / 4, 1], // g
    [1, 2, 0, 1], // f itself: its total (4 samples; the f→f sample counted once)
    [1, 3, 0, 1 / 4], // callee f (recursion) — ties by total are ordered by function index
    [2, 3, 1 / 4, 2 / 4], // callee g
  ]);
  assert.equal(l.totalWeight, 4);
  // A function absent from the samples gives an empty sandwich.
  const none = sandwichLayout(profile([[0]]), ft, 3);
  assert.equal(none.count, 0);
  assert.equal(none.totalWeight, 0);
});

test("sample states: per sample when exported, per fiber from the summary otherwise", () => {
  const doc: SpeedscopeDoc = {
    name: "",
    activeProfileIndex: 0,
    frames: FRAMES,
    profiles: [profile([[0, 1], [0, 3], [0, 1]], [1, 2, 3], [0, 1, 0]), profile([[0]], [5]), profile([[0, 3], [0]], [1, 1]), profile([[5]], [7])],
  };
  const fibers = [
    { id: 0, label: "main", oncpuSamples: 2, samples: 3 },
    { id: 1, label: "w", oncpuSamples: 0, samples: 1 },
    { id: 2, label: "m", oncpuSamples: 1, samples: 2 },
    { id: 3, label: "b", oncpuSamples: 1, samples: 1 },
  ];
  const states = profileStates(doc, fibers);
  assert.ok(states[0] instanceof Uint8Array);
  assert.deepEqual(states.slice(1), ["waiting", "mixed", "on-cpu"]);
  assert.deepEqual(onCpuCounts(doc, states, fibers), [2, 0, 1, 1]);
  assert.deepEqual(profileStates(doc, null).slice(1), ["on-cpu", "on-cpu", "on-cpu"], "no summary: counted on-CPU");
  const all = [0, 1, 2, 3];
  const on = selectSamples(doc, all, true, states, "all");
  // main's two on-CPU samples, none of w, all of m (mixed cannot be split), all of b.
  assert.deepEqual(on.weights, [1, 3, 1, 1, 7]);
  assert.equal(on.endValue, 13);
  assert.deepEqual(selectSamples(doc, all, false, states, "all").weights, [1, 2, 3, 5, 1, 1, 7]);
  assert.deepEqual(selectSamples(doc, [1], true, states, "w").samples, []);
  // The stacks are shared, not copied.
  assert.equal(on.samples[0], doc.profiles[0].samples[0]);
});

test("validation of states: optional, one 0/1 per sample", () => {
  const base = { shared: { frames: [{ name: "a" }] }, profiles: [{ type: "sampled", name: "m", samples: [[0], [0]], weights: [1, 1] }] };
  assert.equal(validateSpeedscope(base).profiles[0].states, undefined);
  const ok = validateSpeedscope({ ...base, profiles: [{ ...base.profiles[0], states: [1, 0] }] });
  assert.deepEqual(Array.from(ok.profiles[0].states ?? []), [1, 0]);
  assert.throws(() => validateSpeedscope({ ...base, profiles: [{ ...base.profiles[0], states: [1] }] }), /"states" has 1 entries but "samples" has 2/);
  assert.throws(() => validateSpeedscope({ ...base, profiles: [{ ...base.profiles[0], states: "01" }] }), /"states" must be an array/);
  assert.throws(() => validateSpeedscope({ ...base, profiles: [{ ...base.profiles[0], states: [0, true] }] }), /states\[1\] must be 0 \(on-CPU\) or 1 \(waiting\), got a boolean/);
});

test("diff.folded: parsing, errors with line numbers", () => {
  const d = parseDiffFolded("main;a b;c 3 5\r\n\nmain;d 1 0\nmain;a b 0 2.5");
  assert.deepEqual(d.names, ["main", "a b", "c", "d"]);
  assert.deepEqual(d.stacks, [[0, 1, 2], [0, 3], [0, 1]]);
  assert.deepEqual([d.base, d.next, d.baseTotal, d.newTotal], [[3, 1, 0], [5, 0, 2.5], 4, 7.5]);
  assert.equal(parseDiffFolded("").stacks.length, 0);
  const err = (t: string): string => {
    try {
      parseDiffFolded(t);
    } catch (e) {
      assert.ok(e instanceof DiffParseError);
      return (e as Error).message;
    }
    return assert.fail("expected an error");
  };
  assert.equal(err("a 1 2\nb 3"), 'line 2: expected "<stack> <base count> <new count>"');
  assert.equal(err("a 1 -2"), 'line 1: the new count "-2" is not a non-negative number');
  assert.equal(err("a 1e3 2"), 'line 1: the base count "1e3" is not a non-negative number');
  assert.equal(err(" 1 2"), "line 1: empty stack");
  assert.equal(err("a;;b 1 2"), "line 1: empty frame 2 in the stack");
});

test("diff layout: widths are new shares, each node carries its base share; colours by change", () => {
  const d = parseDiffFolded("main;work 60 90\nmain;idle 40 10\nmain;gone 100 0\n");
  const l = diffLayout(d);
  assert.equal(l.kind, "diff");
  const r = rects(l);
  approx(r, [
    [0, 0, 0, 1],
    [1, 1, 0, 0.9],
    [2, 1, 0.9, 1],
  ]);
  assert.ok(l.base);
  assert.deepEqual(Array.from(l.base, (x) => Math.round(x * 1000) / 1000), [1, 0.3, 0.2], "base shares (gone has no width and is left out)");
  assert.ok(Math.abs(maxDelta(l) - 0.6) < 1e-12);
  assert.deepEqual(diffRgb(0, 1), [214, 214, 214]);
  const red = diffRgb(1, 1);
  const blue = diffRgb(-1, 1);
  assert.ok(red[0] > red[2] + 100 && blue[2] > blue[0] + 100);
  const half = diffRgb(0.5, 1);
  assert.ok(half[1] < 214 && half[1] > red[1], "saturation grows with the change");
  assert.deepEqual(diffChanges(d).map((c) => [c.name, Math.round(c.baseSelf * 100), Math.round(c.newSelf * 100)]), [
    ["work", 30, 90],
    ["gone", 50, 0],
    ["idle", 20, 10],
  ]);
});

test("run settings: defaults, workspace-relative directories, checks naming the setting", () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "osprey-settings-")));
  try {
    fs.mkdirSync(path.join(ws, "data"));
    const src = path.join(ws, "src");
    fs.mkdirSync(src);
    const ctx = { workspaceFolder: ws, sourceDir: src };
    assert.deepEqual(resolveRunSettings({ args: undefined, cwd: undefined, rateHz: undefined }, ctx), { args: [], cwd: ws, rateHz: undefined });
    assert.equal(resolveRunSettings({ args: [], cwd: "", rateHz: null }, { sourceDir: src }).cwd, src, "outside a workspace: the source's directory");
    assert.equal(resolveRunSettings({ args: [], cwd: "data", rateHz: 997 }, ctx).cwd, path.join(ws, "data"));
    assert.equal(resolveRunSettings({ args: [], cwd: "${fileDirname}", rateHz: 10 }, ctx).cwd, src);
    assert.equal(resolveRunSettings({ args: [], cwd: ws, rateHz: 10000 }, ctx).rateHz, 10000);
    assert.deepEqual(resolveRunSettings({ args: ["a b", ""], cwd: "", rateHz: undefined }, ctx).args, ["a b", ""]);
    assert.throws(() => resolveRunSettings({ args: [1], cwd: "", rateHz: undefined }, ctx), new RegExp(`"${ARGS_SETTING.replace(/\./g, "\\.")}" must be an array of strings`));
    assert.throws(() => resolveRunSettings({ args: [], cwd: "nope", rateHz: undefined }, ctx), /"osprey\.profiler\.cwd": .*nope is not a directory/);
    assert.throws(() => resolveRunSettings({ args: [], cwd: path.join(ws, "data", "..", "src", "x"), rateHz: undefined }, ctx), /is not a directory/);
    for (const bad of [9, 10001, 99.5, "997"]) {
      assert.throws(() => resolveRunSettings({ args: [], cwd: "", rateHz: bad }, ctx), /"osprey\.profiler\.rateHz" must be a whole number of Hz from 10 to 10000/);
    }
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
});

test("run settings: ${workspaceFolder} and ${fileDirname} are replaced by the paths as they are, even with $ in them", () => {
  // String.replace with a string would read "$&", "$'" and "$`" in the path as patterns.
  const top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "osprey-settings-")));
  try {
    for (const name of ["ws$'x", "ws$&y", "ws$`z", "ws$$w"]) {
      const ws = path.join(top, name);
      const src = path.join(ws, "src ${workspaceFolder}");
      fs.mkdirSync(path.join(ws, "data"), { recursive: true });
      fs.mkdirSync(path.join(src, "in"), { recursive: true });
      const ctx = { workspaceFolder: ws, sourceDir: src };
      assert.equal(resolveRunSettings({ args: [], cwd: "${workspaceFolder}/data", rateHz: null }, ctx).cwd, path.join(ws, "data"));
      // One pass: a replaced path is not searched again.
      assert.equal(resolveRunSettings({ args: [], cwd: "${fileDirname}/in", rateHz: null }, ctx).cwd, path.join(src, "in"));
    }
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
});

test("diff.folded parser on random input: a document or a DiffParseError, nothing else", () => {
  // A seeded mulberry32 so a failure reproduces.
  let a = 12345;
  const rand = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const alphabet = ["a", "b", ";", " ", "0", "1", "9", ".", "-", "\n", "\r", "\t", "é", "\u0000", "e", "x"];
  let parsed = 0;
  for (let i = 0; i < 3000; i++) {
    let text = "";
    const n = Math.floor(rand() * 40);
    for (let k = 0; k < n; k++) text += alphabet[Math.floor(rand() * alphabet.length)];
    try {
      const d = parseDiffFolded(text);
      parsed++;
      assert.equal(d.stacks.length, d.base.length);
      assert.equal(d.stacks.length, d.next.length);
      for (const st of d.stacks) for (const f of st) assert.ok(f >= 0 && f < d.names.length && d.names[f] !== "");
      for (const c of [...d.base, ...d.next]) assert.ok(Number.isFinite(c) && c >= 0);
      const l = diffLayout(d);
      assert.ok(l.count >= 0 && Number.isFinite(l.totalWeight));
    } catch (e) {
      assert.ok(e instanceof DiffParseError, `unexpected ${String(e)} for ${JSON.stringify(text)}`);
      assert.match((e as Error).message, /^line \d+: /);
    }
  }
  assert.ok(parsed > 50, `only ${parsed} of the random inputs parsed`);
});
