import { strict as assert } from "node:assert";
import { test } from "node:test";
import { ValidationError, validateSpeedscope, validateSummary } from "../../src/model/validate";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT, clone, readFixture } from "../support/paths";

const SS = readFixture("demo.speedscope.json") as Record<string, any>;
const SUM = readFixture("demo.profile.json") as Record<string, any>;

function speedscopeError(mutate: (d: any) => void): string {
  const d = clone(SS);
  mutate(d);
  try {
    validateSpeedscope(d);
  } catch (e) {
    assert.ok(e instanceof ValidationError);
    return (e as Error).message;
  }
  assert.fail("expected a ValidationError");
}

function summaryError(mutate: (d: any) => void): string {
  const d = clone(SUM);
  mutate(d);
  try {
    validateSummary(d);
  } catch (e) {
    assert.ok(e instanceof ValidationError);
    return (e as Error).message;
  }
  assert.fail("expected a ValidationError");
}

test("the running example is the post-processor's golden export (function frames, attributed lines)", () => {
  // test/postprocess/golden holds what ospprof writes for the running example; the editor's
  // fixture must be that output, so it follows the exports' keying and hotLines as they change.
  const golden = path.join(ROOT, "..", "..", "test", "postprocess", "golden");
  for (const name of ["demo.speedscope.json", "demo.profile.json"])
    assert.deepEqual(readFixture(name), JSON.parse(fs.readFileSync(path.join(golden, name), "utf8")), name);
});

test("the running example validates and keeps its shape", () => {
  const d = validateSpeedscope(SS);
  // one frame per function (name, file): crunch once, at its first line (docs/profile-formats.md)
  assert.equal(d.frames.length, 4);
  assert.deepEqual(d.frames[0], { name: "crunch", file: "/w/demo.osp", line: 7 });
  assert.deepEqual(d.frames[2], { name: "osp_sleep_ms", file: "/opt/osprey/runtime/core/sleep.c", line: 31 });
  assert.deepEqual(d.profiles.map((p) => p.name), ["main", "fiber-1"]);
  assert.equal(d.activeProfileIndex, 0);
  const s = validateSummary(SUM);
  assert.equal(s.sampleCount, 5);
  assert.equal(s.fibers.length, 3);
  // attributed lines: crunch's two lines, each with the samples attributed to it
  assert.deepEqual(s.hotLines.map((h) => [h.line, h.samples]), [[7, 2], [8, 1]]);
  assert.equal(s.hotFunctions[0].name, "crunch");
});

test("speedscope: each malformation has its own message naming profile and index", () => {
  assert.equal(
    (() => {
      try {
        validateSpeedscope([1]);
      } catch (e) {
        return (e as Error).message;
      }
      return "";
    })(),
    "speedscope: expected a JSON object, got an array",
  );
  assert.equal(speedscopeError((d) => delete d.shared), 'speedscope: "shared" must be an object, got missing');
  assert.equal(speedscopeError((d) => (d.shared.frames = {})), 'speedscope: "shared.frames" must be an array, got a object');
  assert.equal(speedscopeError((d) => (d.shared.frames[2] = "x")), 'speedscope: shared.frames[2] must be an object, got the string "x"');
  assert.equal(speedscopeError((d) => delete d.shared.frames[3].name), 'speedscope: shared.frames[3] has no string "name" (got missing)');
  assert.equal(speedscopeError((d) => (d.profiles = [])), 'speedscope: "profiles" must be a non-empty array, got an array');
  assert.equal(speedscopeError((d) => delete d.profiles), 'speedscope: "profiles" must be a non-empty array, got missing');
  assert.equal(speedscopeError((d) => (d.profiles[1].type = "evented")), 'speedscope: profile 1 ("fiber-1"): "type" must be "sampled", got the string "evented"');
  assert.equal(speedscopeError((d) => (d.profiles[0].samples = null)), 'speedscope: profile 0 ("main"): "samples" must be an array, got null');
  assert.equal(speedscopeError((d) => delete d.profiles[1].weights), 'speedscope: profile 1 ("fiber-1"): "weights" must be an array, got missing');
  assert.equal(speedscopeError((d) => d.profiles[0].weights.pop()), 'speedscope: profile 0 ("main"): "samples" has 3 entries but "weights" has 2');
  assert.equal(speedscopeError((d) => (d.profiles[0].weights[2] = -0.5)), 'speedscope: profile 0 ("main"): weights[2] must be a finite non-negative number, got -0.5');
  assert.equal(speedscopeError((d) => (d.profiles[1].weights[0] = "1")), 'speedscope: profile 1 ("fiber-1"): weights[0] must be a finite non-negative number, got the string "1"');
  assert.equal(speedscopeError((d) => (d.profiles[0].samples[1] = 3)), 'speedscope: profile 0 ("main"): samples[1] must be an array of frame indices, got 3');
  assert.equal(speedscopeError((d) => (d.profiles[1].samples[1][1] = 4)), 'speedscope: profile 1 ("fiber-1"): samples[1][1] is 4, not a frame index (0..3)');
  assert.equal(speedscopeError((d) => (d.profiles[0].samples[0][0] = 1.5)), 'speedscope: profile 0 ("main"): samples[0][0] is 1.5, not a frame index (0..3)');
  assert.equal(speedscopeError((d) => (d.profiles[0].samples[2][1] = -1)), 'speedscope: profile 0 ("main"): samples[2][1] is -1, not a frame index (0..3)');
  assert.equal(speedscopeError((d) => (d.shared.frames = [])), 'speedscope: profile 0 ("main"): samples[0][0] is 1, not a frame index (shared.frames is empty)');
  assert.equal(speedscopeError((d) => (d.profiles[0] = 7)), "speedscope: profile 0 must be an object, got 7");
});

test("speedscope: weights that are each finite but add up to Infinity are refused, not drawn at NaN", () => {
  // Every x of a layout is a weight divided by the total: an infinite total makes them NaN.
  assert.equal(
    speedscopeError((d) => (d.profiles[0].weights = [1e308, 1e308, 1])),
    'speedscope: profile 0 ("main"): the weights add up to more than the largest number (1.7976931348623157e+308)',
  );
  // All fibers merges the profiles: their sum must be finite too.
  assert.equal(
    speedscopeError((d) => {
      d.profiles[0].weights = [1e308, 0, 0];
      d.profiles[1].weights = [1e308, 0];
    }),
    "speedscope: the weights of all profiles add up to more than the largest number (1.7976931348623157e+308)",
  );
  const d = clone(SS);
  d.profiles[0].weights = [1e308, 0, 0];
  assert.equal(validateSpeedscope(d).profiles[0].weights[0], 1e308, "a large but finite total is fine");
});

test("speedscope: lenient fields are normalised", () => {
  const d = clone(SS);
  delete d.shared.frames[0].file;
  d.shared.frames[1].line = "12";
  d.activeProfileIndex = 9;
  const v = validateSpeedscope(d);
  assert.equal(v.frames[0].file, "");
  assert.equal(v.frames[1].line, 0);
  assert.equal(v.activeProfileIndex, 0);
});

test("summary: required numbers have specific messages", () => {
  assert.equal(summaryError((d) => delete d.version), 'profile summary: "version" must be a number, got missing');
  assert.equal(summaryError((d) => (d.wallSeconds = "0.005")), 'profile summary: "wallSeconds" must be a number, got the string "0.005"');
  assert.equal(summaryError((d) => (d.cpuSeconds = null)), 'profile summary: "cpuSeconds" must be a number, got null');
  assert.equal(summaryError((d) => (d.sampleCount = [])), 'profile summary: "sampleCount" must be a number, got an array');
  assert.equal(summaryError((d) => (d.rateHz = true)), 'profile summary: "rateHz" must be a number, got a boolean');
  assert.throws(() => validateSummary("x"), { message: 'profile summary: expected a JSON object, got the string "x"' });
});

test("summary: missing arrays become empty; bad hot entries are dropped", () => {
  const d = clone(SUM);
  delete d.fibers;
  delete d.hotLines;
  d.hotFunctions.push({ file: "/w/x.osp", line: 3 }, { name: "", file: "" }, { name: "rt", file: "/opt/x.c" });
  const s = validateSummary(d);
  assert.deepEqual(s.fibers, []);
  assert.deepEqual(s.hotLines, []);
  assert.deepEqual(s.hotFunctions.map((h) => h.name), ["crunch", "main", "rt"]);
  assert.equal(s.hotFunctions[2].kind, "runtime");
  assert.equal(s.droppedSamples, 0);

  const e = clone(SUM);
  e.hotLines = [
    { file: "/w/a.osp", line: 0, pct: 1, samples: 1 },
    { file: "", line: 3, pct: 1, samples: 1 },
    { line: 3, pct: 1, samples: 1 },
    { file: "/w/a.osp", line: "4", pct: 1, samples: 1 },
    { file: "/w/a.osp", line: 5, pct: 9.5, samples: 7 },
  ];
  e.droppedSamples = 4;
  const t = validateSummary(e);
  assert.deepEqual(t.hotLines, [{ file: "/w/a.osp", line: 5, pct: 9.5, samples: 7 }]);
  assert.equal(t.droppedSamples, 4);
});

test("summary: malformed fiber rows are kept so chips stay aligned", () => {
  const d = clone(SUM);
  d.fibers[1] = { id: 1, label: "fiber-1", samples: 2 };
  d.fibers.splice(1, 0, "junk");
  const s = validateSummary(d);
  assert.equal(s.fibers.length, 4);
  assert.deepEqual(s.fibers[1], { id: 0, label: "fiber-1", oncpuSamples: 0, samples: 0 });
  assert.deepEqual(s.fibers[2], { id: 1, label: "fiber-1", oncpuSamples: 0, samples: 2 });
});
