import { strict as assert } from "node:assert";
import { test } from "node:test";
import { compareFrames, frameColors, framePalette, frameRanks, hslToHex, rankColor, tri, type FrameKey } from "../../src/model/colors";
import { validateSpeedscope } from "../../src/model/validate";
import { prng } from "../support/generate";
import { readFixture } from "../support/paths";

/** Frames chosen to break weaker orderings: spliced keys, duplicates, locale and code-point traps. */
const TRICKY = [
  { file: "/w/a b.osp", name: "z", line: 1 },
  { file: "/w/a", name: "b.osp z", line: 1 },
  { file: "/w/demo.osp", name: "crunch", line: 7 },
  { file: "/w/demo.osp", name: "crunch", line: 8 },
  { file: "", name: "0x4010", line: 0 },
  { file: "", name: "0x4010", line: 0 },
  { file: "", name: "", line: 0 },
  { file: "/w/B.osp", name: "a", line: 2 },
  { file: "/w/a.osp", name: "B", line: 2 },
  { file: "/w/\uff21.osp", name: "wide", line: 3 },
  { file: "/w/\u{1f600}.osp", name: "emoji", line: 3 },
  { file: "/w/a.osp", name: "a\u0000b", line: 4 },
  { file: "/w/a.osp", name: "a", line: 5 },
  { file: "/opt/osprey/runtime/core/sleep.c", name: "osp_sleep_ms", line: 31 },
];

const KEYS: FrameKey[] = TRICKY.map((f, index) => ({ file: f.file, name: f.name, index }));

test("comparator is antisymmetric and equal only for the same frame", () => {
  for (const a of KEYS) {
    for (const b of KEYS) {
      const ab = compareFrames(a, b);
      const ba = compareFrames(b, a);
      assert.equal(Math.sign(ab) + Math.sign(ba), 0, `antisymmetry ${a.index} ${b.index}`);
      assert.equal(ab === 0, a.index === b.index, `equality ${a.index} ${b.index}`);
    }
  }
});

test("comparator is transitive", () => {
  for (const a of KEYS) {
    for (const b of KEYS) {
      for (const c of KEYS) {
        if (compareFrames(a, b) < 0 && compareFrames(b, c) < 0) {
          assert.ok(compareFrames(a, c) < 0, `transitivity ${a.index} < ${b.index} < ${c.index}`);
        }
        if (compareFrames(a, b) <= 0 && compareFrames(b, c) <= 0) {
          assert.ok(compareFrames(a, c) <= 0, `transitivity (≤) ${a.index} ${b.index} ${c.index}`);
        }
      }
    }
  }
});

test("comparator orders by file, then name, in code-unit order, then index", () => {
  const k = (file: string, name: string, index: number): FrameKey => ({ file, name, index });
  assert.ok(compareFrames(k("/a", "z", 5), k("/b", "a", 0)) < 0, "file first");
  assert.ok(compareFrames(k("/a", "a", 5), k("/a", "b", 0)) < 0, "then name");
  assert.ok(compareFrames(k("/a", "a", 0), k("/a", "a", 1)) < 0, "then index");
  // Code units, not locale: "B" (0x42) sorts before "a" (0x61).
  assert.ok(compareFrames(k("/w/B.osp", "x", 0), k("/w/a.osp", "x", 1)) < 0);
  // Code units, not code points: U+1F600 is stored as 0xD83D 0xDE00, below U+FF21.
  assert.ok(compareFrames(k("/w/\u{1f600}.osp", "x", 0), k("/w/\uff21.osp", "x", 1)) < 0);
});

test("ranking is on the pair: a spliced string would merge these two frames, the pair keeps them apart", () => {
  const a = { file: "/w/a b.osp", name: "z" };
  const b = { file: "/w/a", name: "b.osp z" };
  assert.equal(`${a.file} ${a.name}`, `${b.file} ${b.name}`, "the spliced keys collide");
  assert.notEqual(compareFrames({ ...a, index: 0 }, { ...b, index: 1 }), 0);
  for (const frames of [[a, b], [b, a]]) {
    const ranks = frameRanks(frames);
    assert.notEqual(ranks[0], ranks[1]);
  }
  // ("/w/a", …) sorts before ("/w/a b.osp", …) because "/w/a" is a prefix of the other file.
  const ranks = frameRanks([a, b]);
  assert.deepEqual(Array.from(ranks), [1, 0]);
  const colors = frameColors([a, b]);
  assert.notEqual(colors[0], colors[1]);
});

test("tri and the colour formulas", () => {
  assert.equal(tri(0), 0);
  assert.equal(tri(0.5), 0.5);
  assert.equal(tri(1), 1);
  assert.equal(tri(1.5), 0.5);
  assert.equal(tri(2), 0);
  assert.equal(tri(3), 1);
  assert.equal(tri(-0.5), 0.5);
  // n = 7, r = 1: t = floor(255/7)/255 = 36/255, x = tri(30·36/255).
  const t = 36 / 255;
  const x = tri(30 * t);
  assert.ok(Math.abs(x - 0.23529411764705888) < 1e-12);
  assert.equal(rankColor(1, 7, true), `hsl(${324 * t}, ${25 + 20 * x}%, ${65 - 15 * x}%)`);
  assert.equal(rankColor(1, 7, false), `hsl(215, 12%, ${58 - 12 * x}%)`);
  assert.equal(rankColor(0, 5, true), "hsl(0, 25%, 65%)");
  assert.equal(rankColor(0, 5, false), "hsl(215, 12%, 58%)");
});

test("the running example's colours", () => {
  const doc = validateSpeedscope(readFixture("demo.speedscope.json"));
  // Frames are functions (name, file): crunch once. Sorted: sleep.c osp_sleep_ms (0);
  // demo.osp crunch (1), main (2), nap (3). n = 4.
  assert.deepEqual(Array.from(frameRanks(doc.frames)), [1, 2, 0, 3]);
  const c = frameColors(doc.frames);
  assert.equal(c[2], "hsl(215, 12%, 58%)");
  assert.equal(c[2], rankColor(0, 4, false));
  assert.equal(c[0], rankColor(1, 4, true));
  assert.equal(c[1], rankColor(2, 4, true));
  assert.equal(c[3], rankColor(3, 4, true));
  assert.equal(new Set(c).size, 4, "four functions, four colours");
});

test("reordering shared.frames never changes a frame's colour", () => {
  const reference = frameColors(TRICKY);
  const rand = prng(42);
  for (let round = 0; round < 200; round++) {
    const perm = TRICKY.map((_, i) => i);
    for (let i = perm.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [perm[i], perm[j]] = [perm[j], perm[i]];
    }
    const colors = frameColors(perm.map((i) => TRICKY[i]));
    perm.forEach((orig, at) => assert.equal(colors[at], reference[orig], `frame ${orig} at ${at} (round ${round})`));
  }
  // Reversal of the running example, with its samples remapped, colours every frame the same.
  const doc = validateSpeedscope(readFixture("demo.speedscope.json"));
  const rev = [...doc.frames].reverse();
  const a = frameColors(doc.frames);
  const b = frameColors(rev);
  doc.frames.forEach((_, i) => assert.equal(b[doc.frames.length - 1 - i], a[i]));
});

test("colours are user/runtime by the shared classification rule", () => {
  const c = frameColors([
    { file: "/w/x.OSP", name: "f" },
    { file: "/w/y.ospml", name: "g" },
    { file: "/w/z.c", name: "h" },
    { file: "", name: "0x1" },
  ]);
  assert.ok(!c[0].startsWith("hsl(215, 12%"));
  assert.ok(!c[1].startsWith("hsl(215, 12%"));
  assert.ok(c[2].startsWith("hsl(215, 12%"));
  assert.ok(c[3].startsWith("hsl(215, 12%"));
});

test("hsl to hex follows CSS and the palette stays small", () => {
  assert.equal(hslToHex(0, 100, 50), "#ff0000");
  assert.equal(hslToHex(120, 100, 25), "#008000");
  assert.equal(hslToHex(240, 100, 50), "#0000ff");
  assert.equal(hslToHex(0, 0, 100), "#ffffff");
  assert.equal(hslToHex(215, 12, 58), "#8792a1");
  assert.equal(hslToHex(360, 100, 50), "#ff0000");
  const frames = Array.from({ length: 5000 }, (_, i) => ({ file: i % 3 ? `/w/f${i % 17}.osp` : "", name: `fn_${i}` }));
  const { palette, index } = framePalette(frames);
  assert.ok(palette.length <= 512, `palette of ${palette.length}`);
  const css = frameColors(frames);
  // Palette entries are the same colours as the hsl strings.
  for (const i of [0, 1, 2, 777, 4999]) {
    const m = /^hsl\(([^,]+), ([^%]+)%, ([^%]+)%\)$/.exec(css[i]);
    assert.ok(m);
    assert.equal(palette[index[i]], hslToHex(Number(m[1]), Number(m[2]), Number(m[3])));
  }
});
