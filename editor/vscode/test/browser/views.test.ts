/**
 * The views of docs/spec/profiler.md §(l.10) in the real page (headless Chromium): All fibers,
 * On-CPU only, Sandwich, Inverted and the differential view. The profile tests use the real
 * driver export in fixtures/driver/ (written by scripts/make-driver-fixture.mjs from
 * examples/demo.osp) and check the views against its own profile.json.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import { debug, launch, openPanel, pixelAt, postProfile, settle, type Browser, type PageProblems } from "../support/browser";
import { ARTIFACTS, FIXTURES, clone } from "../support/paths";

interface HotFunction {
  file: string;
  name: string;
  selfPct: number;
  selfSamples: number;
  totalPct: number;
  totalSamples: number;
}
interface Summary {
  fibers: { label: string; oncpuSamples: number; samples: number }[];
  hotFunctions: HotFunction[];
}
interface Speedscope {
  profiles: { name: string; samples: number[][]; weights: number[]; states?: number[] }[];
  shared: { frames: { name: string; file: string; line: number }[] };
}

const DRIVER = path.join(FIXTURES, "driver");
const read = (f: string): unknown => JSON.parse(fs.readFileSync(path.join(DRIVER, f), "utf8"));
const SUMMARY = read("demo.profile.json") as Summary;
const SPEEDSCOPE = read("demo.speedscope.json") as Speedscope;
const STATES = read("demo.states.json") as number[][];

/** The export with each profile's `states` (from the raw profile) added, as docs/editor.md describes. */
function withStates(): Speedscope {
  const s = clone(SPEEDSCOPE);
  s.profiles.forEach((p, i) => (p.states = STATES[i]));
  return s;
}

let browser: Browser;
let page: Page;
let problems: PageProblems;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

async function fresh(summary: unknown, speedscope: unknown): Promise<void> {
  if (page) await page.close();
  ({ page, problems } = await openPanel(browser));
  await postProfile(page, summary, speedscope);
}

type Stats = Record<string, { self: number; total: number; selfSamples: number; samples: number }>;

/** Selects a fiber (`"all"` or a profile index) and returns the selection's function statistics. */
async function statsOf(choice: string): Promise<Stats> {
  await page.locator("#fiber").selectOption(choice);
  await settle(page);
  return debug(page, "functionStats");
}

/** On-CPU weight of the whole export (the denominator of every percentage in profile.json). */
function onCpuWeight(s: Speedscope): number {
  let w = 0;
  s.profiles.forEach((p, i) => p.weights.forEach((x, k) => (w += STATES[i][k] === 0 ? x : 0)));
  return w;
}

const key = (h: { name: string; file: string }): string => `${h.name}\u0000${h.file}`;
/** profile.json rounds percentages to one decimal (%.1f). */
const pctClose = (share: number, pct: number): boolean => Math.abs(share * 100 - pct) <= 0.05 + 1e-9;

test("the fixture's states agree with its summary (every profile, every fiber)", () => {
  const sampled = SUMMARY.fibers.filter((f) => f.samples > 0);
  assert.equal(STATES.length, SPEEDSCOPE.profiles.length);
  STATES.forEach((s, i) => {
    assert.equal(s.length, SPEEDSCOPE.profiles[i].samples.length);
    assert.equal(s.filter((x) => x === 0).length, sampled[i].oncpuSamples, `${sampled[i].label}`);
  });
  // The demo has two fibers with on-CPU samples and one that only waits.
  assert.ok(sampled.filter((f) => f.oncpuSamples > 0).length >= 2);
  assert.ok(sampled.some((f) => f.oncpuSamples === 0));
});

for (const variant of ["as exported", "with sample states"] as const) {
  const doc = (): Speedscope => (variant === "as exported" ? SPEEDSCOPE : withStates());

  test(`All fibers is the default and equals the sum of the fibers (${variant})`, async () => {
    await fresh(SUMMARY, doc());
    assert.equal(await debug(page, "fiberChoice"), "all", "several fibers ran on a CPU: All fibers first");
    assert.equal(await page.locator("#fiber").inputValue(), "all");
    assert.equal(await debug(page, "onCpuOnly"), true);
    for (const onCpu of [true, false]) {
      if (!onCpu) await page.locator("#oncpu").uncheck();
      await settle(page);
      const all = await statsOf("all");
      const totals = await debug(page, "selectionTotals");
      const sum: Stats = {};
      let weight = 0;
      let samples = 0;
      for (let i = 0; i < SPEEDSCOPE.profiles.length; i++) {
        const s = await statsOf(String(i));
        const t = await debug(page, "selectionTotals");
        weight += t.weight;
        samples += t.samples;
        for (const [k, v] of Object.entries(s)) {
          const acc = (sum[k] ??= { self: 0, total: 0, selfSamples: 0, samples: 0 });
          acc.self += v.self;
          acc.total += v.total;
          acc.selfSamples += v.selfSamples;
          acc.samples += v.samples;
        }
      }
      assert.equal(totals.samples, samples, `samples (on-CPU only: ${onCpu})`);
      assert.ok(Math.abs(totals.weight - weight) < 1e-9, `weight ${totals.weight} vs ${weight}`);
      assert.deepEqual(Object.keys(all).sort(), Object.keys(sum).sort());
      for (const k of Object.keys(all)) {
        assert.equal(all[k].samples, sum[k].samples, k);
        assert.equal(all[k].selfSamples, sum[k].selfSamples, k);
        assert.ok(Math.abs(all[k].total - sum[k].total) < 1e-9 && Math.abs(all[k].self - sum[k].self) < 1e-9, k);
      }
      const expectSamples = onCpu
        ? SUMMARY.fibers.reduce((a, f) => a + f.oncpuSamples, 0)
        : SPEEDSCOPE.profiles.reduce((a, p) => a + p.samples.length, 0);
      assert.equal(samples, expectSamples, onCpu ? "on-CPU samples of every fiber" : "every sample");
    }
    // The waiting fiber shows nothing with On-CPU only, its waits without it.
    const waiting = SUMMARY.fibers.filter((f) => f.samples > 0).findIndex((f) => f.oncpuSamples === 0);
    await page.locator("#fiber").selectOption(String(waiting));
    await page.locator("#oncpu").check();
    await settle(page);
    assert.equal((await debug(page, "selectionTotals")).samples, 0);
    assert.match(await page.locator("#empty").innerText(), /turn off On-CPU only/);
    await page.locator("#oncpu").uncheck();
    await settle(page);
    assert.equal((await debug(page, "selectionTotals")).samples, SPEEDSCOPE.profiles[waiting].samples.length);
    assert.equal(await page.locator("#empty").innerText(), "");
    assert.deepEqual(problems.errors, []);
  });

  test(`Sandwich totals equal each function's self and total in profile.json (${variant})`, async () => {
    await fresh(SUMMARY, doc());
    await page.locator("#view-sandwich").click();
    await settle(page);
    assert.equal(await debug(page, "viewKind"), "sandwich");
    assert.equal(await page.locator("#function-label").isVisible(), true);
    // The default focus is the function with the most self time: the summary's first.
    const first = await debug(page, "sandwich");
    assert.ok(first);
    assert.deepEqual([first.focus, first.file], [SUMMARY.hotFunctions[0].name, SUMMARY.hotFunctions[0].file]);
    const tw = onCpuWeight(SPEEDSCOPE);
    for (const h of SUMMARY.hotFunctions) {
      assert.ok(await debug(page, "sandwichOn", h.name, h.file), `${h.name} is in the function table`);
      await settle(page);
      const sw = await debug(page, "sandwich");
      assert.ok(sw);
      assert.equal(sw.focus, h.name);
      const st = (await debug(page, "functionStats"))[key(h)];
      assert.ok(st, `${h.name} has samples`);
      assert.equal(st.selfSamples, h.selfSamples, `${h.name} self samples`);
      assert.equal(st.samples, h.totalSamples, `${h.name} total samples`);
      assert.ok(pctClose(st.self / tw, h.selfPct), `${h.name} self ${(st.self / tw) * 100} vs ${h.selfPct}`);
      assert.ok(pctClose(st.total / tw, h.totalPct), `${h.name} total ${(st.total / tw) * 100} vs ${h.totalPct}`);
      // The function's own row is one rectangle as wide as its total; callers above and callees
      // below never exceed it.
      const row = await debug(page, "row", sw.focusRow);
      assert.equal(row.length, 1);
      assert.equal(row[0].name, h.name);
      assert.ok(Math.abs(row[0].weight - st.total) < 1e-9);
      const rows = await debug(page, "rows");
      for (let d = 0; d < rows; d++) {
        if (d === sw.focusRow) continue;
        const w = (await debug(page, "row", d)).reduce((a, r) => a + r.weight, 0);
        assert.ok(w <= st.total + 1e-9, `row ${d} of ${h.name}'s sandwich`);
      }
      assert.ok(sw.info.includes(`${h.selfSamples} sample`) && sw.info.includes(`${h.totalSamples} sample`), sw.info);
    }
    // The selector refocuses; S on a hovered frame picks its function.
    await page.locator("#view-left-heavy").click();
    await settle(page);
    const main = await debug(page, "locate", "main");
    assert.ok(main);
    await page.mouse.move(main.x, main.y);
    await settle(page);
    await page.keyboard.press("s");
    await settle(page);
    assert.equal((await debug(page, "sandwich"))?.focus, "main");
    const fib = SUMMARY.hotFunctions.find((h) => h.name === "fib");
    assert.ok(fib);
    const value = await page.locator("#function option").evaluateAll((os, name) => (os as HTMLOptionElement[]).find((o) => o.textContent?.startsWith(`${name} `))?.value, "fib");
    assert.ok(value);
    await page.locator("#function").selectOption(value);
    await settle(page);
    assert.equal((await debug(page, "sandwich"))?.focus, "fib");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, `sandwich-${variant.replace(/ /g, "-")}.png`) });
    assert.deepEqual(problems.errors, []);
  });

  test(`Inverted roots are the leaf functions with their self weights (${variant})`, async () => {
    await fresh(SUMMARY, doc());
    await page.locator("#view-inverted").click();
    await settle(page);
    assert.equal(await debug(page, "viewKind"), "inverted");
    const roots = await debug(page, "row", 0);
    const stats = await debug(page, "functionStats");
    const tw = onCpuWeight(SPEEDSCOPE);
    const leaves = SUMMARY.hotFunctions.filter((h) => h.selfSamples > 0);
    assert.deepEqual(roots.map(key).sort(), leaves.map(key).sort(), "the roots are exactly the functions with self samples");
    for (const r of roots) {
      const h = leaves.find((x) => key(x) === key(r));
      assert.ok(h);
      assert.ok(Math.abs(r.weight - stats[key(r)].self) < 1e-9, `${r.name}: root weight is its self weight`);
      assert.equal(stats[key(r)].selfSamples, h.selfSamples);
      assert.ok(pctClose(r.weight / tw, h.selfPct), `${r.name}: ${(r.weight / tw) * 100} vs ${h.selfPct}`);
    }
    // Heaviest root first.
    for (let i = 1; i < roots.length; i++) assert.ok(roots[i - 1].weight >= roots[i].weight);
    await page.screenshot({ path: path.join(ARTIFACTS, `inverted-${variant.replace(/ /g, "-")}.png`) });
    assert.deepEqual(problems.errors, []);
  });
}

test("sample states split a fiber's on-CPU and waiting samples; without them the page says so", async () => {
  // main: two on-CPU samples in crunch, one waiting sample in osp_sleep_ms.
  const summary = { version: 1, program: "m.osp", wallSeconds: 1, cpuSeconds: 1, sampleCount: 3, rateHz: 1000, fibers: [{ id: 0, label: "main", oncpuSamples: 2, samples: 3 }] };
  const frames = [
    { name: "main", file: "/w/m.osp", line: 1 },
    { name: "crunch", file: "/w/m.osp", line: 5 },
    { name: "osp_sleep_ms", file: "/rt/sleep.c", line: 9 },
  ];
  const profile = { name: "main", type: "sampled", unit: "seconds", startValue: 0, endValue: 3, samples: [[0, 1], [0, 2], [0, 1]], weights: [1, 1, 1] };
  await fresh(summary, { profiles: [{ ...profile, states: [0, 1, 0] }], shared: { frames } });
  assert.deepEqual(await debug(page, "selectionTotals"), { weight: 2, samples: 2 });
  assert.equal(await page.locator("#note").innerText(), "");
  assert.equal(await debug(page, "locate", "osp_sleep_ms"), null, "the waiting sample is hidden");
  await page.locator("#oncpu").uncheck();
  await settle(page);
  assert.deepEqual(await debug(page, "selectionTotals"), { weight: 3, samples: 3 });
  assert.ok(await debug(page, "locate", "osp_sleep_ms"));
  // The same profile without states: a mixed fiber cannot be filtered, and the note says so.
  await fresh(summary, { profiles: [profile], shared: { frames } });
  assert.deepEqual(await debug(page, "selectionTotals"), { weight: 3, samples: 3 });
  assert.match(await page.locator("#note").innerText(), /does not mark which samples of main were waiting/);
  // Bad states are reported like any malformed export.
  await postProfile(page, summary, { profiles: [{ ...profile, states: [0, 2, 0] }], shared: { frames } });
  assert.equal(await page.locator("#error").innerText(), 'speedscope: profile 0 ("main"): states[1] must be 0 (on-CPU) or 1 (waiting), got 2');
});

test("a speedscope file without its summary still shows its flame graph", async () => {
  await fresh(null, SPEEDSCOPE);
  const n = SPEEDSCOPE.profiles.reduce((a, p) => a + p.samples.length, 0);
  assert.equal(await page.locator("#header").innerText(), `${n} samples · ${SPEEDSCOPE.profiles.length} fibers · no profile summary beside this file`);
  assert.equal(await page.locator("#error").innerText(), "");
  assert.equal(await page.locator("#hot tbody tr").count(), 0);
  assert.ok((await debug(page, "rectCount")) > 0);
  assert.deepEqual(problems.errors, []);
});

/** Posts a `.diff.folded` text as the custom editor does. */
async function postDiff(text: string): Promise<void> {
  await page.evaluate((text) => window.postMessage({ type: "diff", title: "t", text }, "*"), text);
  await settle(page);
}

test("a .diff.folded file opens as the differential view: red more than base, blue less", async () => {
  if (page) await page.close();
  ({ page, problems } = await openPanel(browser));
  // Base: main;work 60, main;idle 40. New: main;work 90, main;idle 10 (shares 0.6/0.4 → 0.9/0.1).
  await postDiff("main;work 60 90\nmain;idle 40 10\n");
  assert.equal(await debug(page, "viewKind"), "diff");
  assert.equal(await page.locator("#header").innerText(), "diff · base 100 samples · new 100 samples · 2 stacks · red: more than in base, blue: less");
  assert.equal(await page.locator("#views").isVisible(), false);
  assert.equal(await page.locator("#fiber-label").isVisible(), false);
  const row = await debug(page, "row", 1);
  assert.deepEqual(row.map((r) => r.name), ["work", "idle"]);
  assert.ok(Math.abs(row[0].weight - 0.9) < 1e-12 && Math.abs((row[0].base ?? -1) - 0.6) < 1e-12);
  const work = await debug(page, "locate", "work");
  const idle = await debug(page, "locate", "idle");
  const main = await debug(page, "locate", "main");
  assert.ok(work && idle && main);
  const [wr, wg, wb] = await pixelAt(page, work.x, work.y);
  const [ir, ig, ib] = await pixelAt(page, idle.x, idle.y);
  const [mr, mg, mb] = await pixelAt(page, main.x, main.y);
  assert.ok(wr > wb + 100 && wr > wg + 100, `work grew: red, got ${[wr, wg, wb]}`);
  assert.ok(ib > ir + 100, `idle shrank: blue, got ${[ir, ig, ib]}`);
  assert.ok(Math.abs(mr - mb) < 8 && Math.abs(mr - mg) < 8, `main did not change: grey, got ${[mr, mg, mb]}`);
  await page.mouse.move(work.x, work.y);
  await settle(page);
  assert.deepEqual((await page.locator("#tooltip").innerText()).split("\n"), ["work", "base 60.0% · new 90.0% (+30.0 points)"]);
  const changes = await page.locator("#changes tbody tr").evaluateAll((trs) => trs.map((tr) => Array.from(tr.children).map((td) => td.textContent)));
  assert.deepEqual(changes, [
    ["40.0%", "10.0%", "\u221230.0", "idle"],
    ["60.0%", "90.0%", "+30.0", "work"],
  ]);
  await page.screenshot({ path: path.join(ARTIFACTS, "diff.png") });
  // A malformed line is reported with its number; a profile afterwards brings the controls back.
  await postDiff("main;work 1 2\nmain;idle x 3\n");
  assert.equal(await page.locator("#error").innerText(), 'line 2: the base count "x" is not a non-negative number');
  await postProfile(page, SUMMARY, SPEEDSCOPE);
  assert.equal(await page.locator("#views").isVisible(), true);
  assert.equal(await debug(page, "viewKind"), "left-heavy");
  assert.deepEqual(problems.errors, []);
});

test("a second profile in the same page gets its own Sandwich function selector", async () => {
  // The panel is reused from run to run: the selector must list the new profile's functions
  // even when the selection and the focused function's index are the same as before.
  const mk = (a: string, b: string) => ({
    profiles: [{ name: "main", type: "sampled", unit: "seconds", startValue: 0, endValue: 3, samples: [[0, 1], [0, 2]], weights: [1, 2] }],
    shared: { frames: [{ name: "main", file: "/w/m.osp", line: 1 }, { name: a, file: "/w/m.osp", line: 2 }, { name: b, file: "/w/m.osp", line: 3 }] },
  });
  const options = (): Promise<string[]> => page.locator("#function option").evaluateAll((os) => os.map((o) => o.textContent ?? ""));
  await fresh(null, mk("alpha", "beta"));
  await page.locator("#view-sandwich").click();
  await settle(page);
  assert.equal((await debug(page, "sandwich"))?.focus, "beta");
  assert.deepEqual(await options(), ["main — m.osp:1 · 100.0%", "beta — m.osp:3 · 66.7%", "alpha — m.osp:2 · 33.3%"]);
  await postProfile(page, null, mk("gamma", "delta"));
  await page.locator("#view-sandwich").click();
  await settle(page);
  assert.equal((await debug(page, "sandwich"))?.focus, "delta");
  assert.deepEqual(await options(), ["main — m.osp:1 · 100.0%", "delta — m.osp:3 · 66.7%", "gamma — m.osp:2 · 33.3%"]);
  assert.equal(await page.locator("#function").inputValue(), "2", "the selector shows the focused function");
  assert.deepEqual(problems.errors, []);
});

test("a Sandwich function that the selected fiber never ran is named as such, not blamed on On-CPU only", async () => {
  const frames = [{ name: "main", file: "/w/m.osp", line: 1 }, { name: "onlyA", file: "/w/m.osp", line: 2 }, { name: "onlyB", file: "/w/m.osp", line: 3 }];
  const p = (name: string, leaf: number) => ({ name, type: "sampled", unit: "seconds", startValue: 0, endValue: 1, samples: [[0, leaf]], weights: [1], states: [0] });
  await fresh(null, { profiles: [p("A", 1), p("B", 2)], shared: { frames } });
  await page.locator("#view-sandwich").click();
  await settle(page);
  assert.ok(await debug(page, "sandwichOn", "onlyA", "/w/m.osp"));
  await page.locator("#fiber").selectOption("1");
  await settle(page);
  assert.equal((await debug(page, "sandwich"))?.focus, "onlyA");
  // B has an on-CPU sample: the message must not send the user to the On-CPU only toggle.
  assert.equal(await page.locator("#empty").innerText(), "onlyA has no on-CPU samples in B");
  await page.locator("#oncpu").uncheck();
  await settle(page);
  assert.equal(await page.locator("#empty").innerText(), "onlyA has no samples in B");
  // A fiber that only waited still gets the On-CPU only hint.
  await fresh(null, { profiles: [p("A", 1), { ...p("B", 2), states: [1] }], shared: { frames } });
  await page.locator("#fiber").selectOption("1");
  await page.locator("#view-sandwich").click();
  await settle(page);
  assert.equal(await page.locator("#empty").innerText(), "No on-CPU samples here: turn off On-CPU only to see the waiting ones");
  assert.deepEqual(problems.errors, []);
});
