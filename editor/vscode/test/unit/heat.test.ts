import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { canonicalPath, heatColor, heatLabel, heatMarksFor, heatTier, indexHotLines, type PathEnv } from "../../src/model/heat";
import { isUserFile } from "../../src/model/kind";

test("heat label", () => {
  assert.equal(heatLabel(66.7, 2), " \u258d 66.7% \u00b7 2 samples");
  assert.equal(heatLabel(5, 1), " ▍ 5.0% · 1 samples");
  assert.equal(heatLabel(0.04, 3), " ▍ 0.0% · 3 samples");
});

test("heat colour tiers", () => {
  const cases: [number, string][] = [
    [100, "#e8500a"],
    [20, "#e8500a"],
    [19.99, "#f97316"],
    [10, "#f97316"],
    [9.99, "#fbbf24"],
    [5, "#fbbf24"],
    [4.99, "#88888899"],
    [0.5, "#88888899"],
    [0, "#88888899"],
  ];
  for (const [pct, color] of cases) assert.equal(heatColor(pct), color, `pct ${pct}`);
  assert.deepEqual([20, 10, 5, 1].map(heatTier), [0, 1, 2, 3]);
});

test("hot lines match editors through symlinked directories and unnormalised paths", () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "osprey-heat-")));
  try {
    const real = path.join(base, "real");
    fs.mkdirSync(real);
    fs.writeFileSync(path.join(real, "demo.osp"), "a\nb\nc\nd\ne\nf\ng\nh\n");
    fs.symlinkSync(real, path.join(base, "link"), "dir");
    const viaLink = path.join(base, "link", "demo.osp");
    const viaReal = path.join(base, "real", "demo.osp");
    assert.equal(canonicalPath(viaLink), viaReal);
    assert.equal(canonicalPath(path.join(base, "link", ".", "..", "real", "demo.osp")), viaReal);
    const index = indexHotLines([
      { file: viaLink, line: 7, pct: 66.7, samples: 2 },
      { file: viaLink, line: 8, pct: 33.3, samples: 1 },
      { file: viaLink, line: 99, pct: 1, samples: 1 },
      { file: path.join(base, "real", "other.osp"), line: 1, pct: 50, samples: 9 },
    ]);
    const marks = heatMarksFor(index, viaReal, 8);
    assert.deepEqual(marks, [
      { line0: 6, text: " ▍ 66.7% · 2 samples", tier: 0, pct: 66.7, samples: 2 },
      { line0: 7, text: " ▍ 33.3% · 1 samples", tier: 0, pct: 33.3, samples: 1 },
    ]);
    // The other direction: the editor opened through the link, the profile naming the real path.
    const index2 = indexHotLines([{ file: viaReal, line: 2, pct: 12, samples: 4 }]);
    assert.deepEqual(heatMarksFor(index2, viaLink, 8).map((m) => [m.line0, m.tier]), [[1, 1]]);
    // A missing file keeps its normalised path.
    assert.equal(canonicalPath(path.join(base, "gone", "..", "gone", "x.osp")), path.join(base, "gone", "x.osp"));
    assert.deepEqual(heatMarksFor(index, path.join(base, "real", "nothere.osp"), 8), []);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test("Windows paths are compared lower-cased and with either separator", () => {
  const win: PathEnv = {
    platform: "win32",
    realpath: () => {
      throw new Error("ENOENT");
    },
  };
  assert.equal(canonicalPath("C:\\Work\\Demo.OSP", win), "c:\\work\\demo.osp");
  assert.equal(canonicalPath("c:/work/sub/../Demo.osp", win), "c:\\work\\demo.osp");
  const index = indexHotLines([{ file: "C:\\Work\\Demo.osp", line: 1, pct: 3, samples: 1 }], win);
  assert.equal(heatMarksFor(index, "c:/WORK/demo.osp", 10, win).length, 1);
  // POSIX paths stay case-sensitive.
  const posix: PathEnv = { platform: "linux", realpath: win.realpath };
  const idx = indexHotLines([{ file: "/w/Demo.osp", line: 1, pct: 3, samples: 1 }], posix);
  assert.equal(heatMarksFor(idx, "/w/demo.osp", 10, posix).length, 0);
  assert.equal(heatMarksFor(idx, "/w/Demo.osp", 10, posix).length, 1);
});

test(".osp and .ospml are user code through one rule", () => {
  for (const f of ["/w/a.osp", "/w/a.ospml", "/w/A.OSP", "/w/a.OspMl", "rel/x.osp"]) assert.ok(isUserFile(f), f);
  for (const f of ["", "/w/a.c", "/w/a.osp.c", "/w/a.ospm", "/w/a.os", "/w/aosp"]) assert.ok(!isUserFile(f), f);
});
