import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";
import type { Page } from "playwright-core";
import {
  debug,
  distinctColors,
  launch,
  openPanel,
  pixelAt,
  postProfile,
  posted,
  settle,
  type Browser,
  type PageProblems,
} from "../support/browser";
import { frameColors, framePalette } from "../../src/model/colors";
import { validateSpeedscope } from "../../src/model/validate";
import { generateProfile } from "../support/generate";
import { ARTIFACTS, FIXTURES, clone, readFixture } from "../support/paths";

/** The running example of docs/spec/profiler.md §(g.2), §(g.5); a real driver export is in fixtures/driver/. */
const DEMO_SUMMARY = readFixture("demo.profile.json");
const DEMO_SPEEDSCOPE = readFixture("demo.speedscope.json");

let browser: Browser;
let page: Page;
let problems: PageProblems;

before(async () => {
  browser = await launch();
});

after(async () => {
  await browser?.close();
});

async function fresh(summary: unknown = DEMO_SUMMARY, speedscope: unknown = DEMO_SPEEDSCOPE): Promise<void> {
  if (page) await page.close();
  ({ page, problems } = await openPanel(browser));
  await postProfile(page, summary, speedscope);
}

function text(sel: string): Promise<string> {
  return page.locator(sel).innerText();
}

function luminance(p: number[]): number {
  return p[0] + p[1] + p[2];
}

test("renders the running example: header, chips, selector, table, non-blank canvas", async () => {
  await fresh();
  assert.equal(await text("#header"), "5 samples · 1000Hz · 0.0s wall · 0.0s CPU · 2 fibers");
  assert.deepEqual(await page.locator(".chip").allInnerTexts(), ["main · 3 samples · 100% on-CPU", "fiber-1 · 2 samples · waiting"]);
  assert.deepEqual(await page.locator("#fiber option").allInnerTexts(), ["All fibers", "main", "fiber-1"]);
  // One fiber has on-CPU samples: it is shown first, not All fibers (§(l.10)).
  assert.equal(await page.locator("#fiber").inputValue(), "0");
  assert.equal(await page.locator("#oncpu").isChecked(), true, "On-CPU only is on by default");
  const rows = await page.locator("#hot tbody tr").evaluateAll((trs) => trs.map((tr) => Array.from(tr.children).map((td) => td.textContent)));
  assert.deepEqual(rows, [
    ["100.0%", "100.0%", "crunch", "demo.osp:7"],
    ["0.0%", "100.0%", "main", "demo.osp:12"],
  ]);
  assert.ok((await distinctColors(page)) > 10, "the canvas is not blank");
  assert.equal(await debug(page, "profileName"), "main");
  assert.equal(await debug(page, "rows"), 2);
  // Hover: tooltip with name, location, self/total and samples.
  const crunch = await debug(page, "locate", "crunch");
  assert.ok(crunch);
  await page.mouse.move(crunch.x, crunch.y);
  await settle(page);
  assert.deepEqual((await text("#tooltip")).split("\n"), [
    "crunch",
    "/w/demo.osp:7",
    "self 3.00 ms (100.0%) · total 3.00 ms (100.0%)",
    "3 samples",
  ]);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-demo.png") });
  assert.deepEqual(problems.errors, [], "no console errors or CSP violations");
});

test("wheel zooms about the cursor, drag pans, 0 and the button reset", async () => {
  await fresh();
  const box = await page.locator("#canvas").boundingBox();
  assert.ok(box);
  const cx = Math.round(box.x + box.width * 0.25);
  const cy = Math.round(box.y + 9);
  const frac = (cx - box.x) / box.width;
  await page.mouse.move(cx, cy);
  await page.mouse.wheel(0, -400);
  await settle(page);
  const z = await debug(page, "view");
  const span = z.end - z.start;
  assert.ok(span < 0.9 && span > 0.2, `zoomed: ${JSON.stringify(z)}`);
  assert.ok(Math.abs(span - Math.pow(1.0018, -400)) < 1e-9, `factor 1.0018^deltaY: ${span}`);
  assert.ok(Math.abs(z.start + frac * span - frac) < 1e-9, "the point under the cursor stays");
  // Drag by 120 px to the right: the view moves left by 120/width of its span.
  await page.mouse.move(box.x + box.width * 0.5, cy);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5 + 60, cy, { steps: 3 });
  await page.mouse.move(box.x + box.width * 0.5 + 120, cy, { steps: 3 });
  await page.mouse.up();
  await settle(page);
  const p = await debug(page, "view");
  assert.ok(Math.abs(p.start - (z.start - (120 / box.width) * span)) < 1e-6, `panned: ${JSON.stringify(p)}`);
  assert.ok(Math.abs(p.end - p.start - span) < 1e-9);
  assert.equal((await posted(page)).filter((m) => m.type === "select").length, 0, "a drag is not a click");
  await page.locator("#flame").focus();
  await page.keyboard.press("0");
  await settle(page);
  assert.deepEqual(await debug(page, "view"), { start: 0, end: 1 });
  await page.mouse.move(cx, cy);
  await page.mouse.wheel(0, -400);
  await settle(page);
  assert.notDeepEqual(await debug(page, "view"), { start: 0, end: 1 });
  await page.locator("#reset").click();
  await settle(page);
  assert.deepEqual(await debug(page, "view"), { start: 0, end: 1 });
  // Zooming far in stops at the minimum span; zooming out stops at [0, 1].
  await page.mouse.move(cx, cy);
  for (let i = 0; i < 12; i++) await page.mouse.wheel(0, -2000);
  await settle(page);
  const tiny = await debug(page, "view");
  assert.ok(Math.abs(tiny.end - tiny.start - 1e-5) < 1e-12, JSON.stringify(tiny));
  for (let i = 0; i < 12; i++) await page.mouse.wheel(0, 2000);
  await settle(page);
  assert.deepEqual(await debug(page, "view"), { start: 0, end: 1 });
  // Double-click zooms to the frame: zoomed in first, crunch (all of main's three samples,
  // one function frame) brings the view back to its extent [0, 1].
  await page.mouse.move(cx, cy);
  await page.mouse.wheel(0, -400);
  await settle(page);
  assert.notDeepEqual(await debug(page, "view"), { start: 0, end: 1 });
  const crunch = await debug(page, "locate", "crunch");
  assert.ok(crunch);
  await page.mouse.dblclick(crunch.x, crunch.y);
  await settle(page);
  const dz = await debug(page, "view");
  assert.ok(Math.abs(dz.start) < 1e-9 && Math.abs(dz.end - 1) < 1e-9, JSON.stringify(dz));
  assert.deepEqual(problems.errors, []);
});

test("search dims non-matching frames and reports the matched share; Esc clears", async () => {
  await fresh();
  const main = await debug(page, "locate", "main");
  assert.ok(main);
  const probe = { x: main.x + 200, y: main.y };
  const before = await pixelAt(page, probe.x, probe.y);
  await page.locator("#search").fill("CRUNCH");
  await settle(page);
  assert.equal(await text("#matches"), "1 matching frame · 100.0% of main");
  const dimmed = await pixelAt(page, probe.x, probe.y);
  const bg = await pixelAt(page, probe.x, probe.y + 4 * 18);
  // Drawn at alpha 0.22 over the background.
  for (let i = 0; i < 3; i++) {
    const expect = 0.22 * before[i] + 0.78 * bg[i];
    assert.ok(Math.abs(dimmed[i] - expect) <= 2, `channel ${i}: ${dimmed[i]} vs ${expect}`);
  }
  const crunch = await debug(page, "locate", "crunch");
  assert.ok(crunch);
  const matched = await pixelAt(page, crunch.x + 100, crunch.y);
  assert.ok(luminance(matched) > luminance(dimmed) + 100, "matches keep their colour");
  await page.locator("#search").fill("n");
  await settle(page);
  assert.equal(await text("#matches"), "2 matching frames · 100.0% of main", "crunch and main, one stack");
  await page.locator("#search").fill("zzz");
  await settle(page);
  assert.equal(await text("#matches"), "0 matching frames · 0.0% of main");
  await page.locator("#search").fill("crunch");
  await page.keyboard.press("Escape");
  await settle(page);
  assert.equal(await page.locator("#search").inputValue(), "");
  assert.equal(await text("#matches"), "");
  assert.deepEqual(await pixelAt(page, probe.x, probe.y), before);
});

test("tooltips read weights in the profile's unit (speedscope files from other tools)", async () => {
  // speedscope's units: seconds (osprey), milliseconds, microseconds, nanoseconds, none, bytes.
  const doc = (unit: string, weights: number[]) => ({
    profiles: [{ name: "main", type: "sampled", unit, startValue: 0, endValue: 0, samples: [[0, 1], [0]], weights }],
    shared: { frames: [{ name: "main", file: "/w/m.osp", line: 1 }, { name: "work", file: "/w/m.osp", line: 2 }] },
  });
  const tip = async (): Promise<string> => {
    const w = await debug(page, "locate", "work");
    assert.ok(w);
    await page.mouse.move(w.x, w.y);
    await settle(page);
    return (await text("#tooltip")).split("\n")[2];
  };
  await fresh(null, doc("seconds", [0.003, 0.001]));
  assert.equal(await tip(), "self 3.00 ms (75.0%) · total 3.00 ms (75.0%)");
  await postProfile(page, null, doc("milliseconds", [3, 1]));
  assert.equal(await tip(), "self 3.00 ms (75.0%) · total 3.00 ms (75.0%)");
  await postProfile(page, null, doc("microseconds", [3000, 1000]));
  assert.equal(await tip(), "self 3.00 ms (75.0%) · total 3.00 ms (75.0%)");
  await postProfile(page, null, doc("nanoseconds", [3e6, 1e6]));
  assert.equal(await tip(), "self 3.00 ms (75.0%) · total 3.00 ms (75.0%)");
  // Not a time: the weight as it is, never as milliseconds.
  await postProfile(page, null, doc("none", [3, 1]));
  assert.equal(await tip(), "self 3 (75.0%) · total 3 (75.0%)");
  await postProfile(page, null, doc("bytes", [3072, 1024]));
  assert.equal(await tip(), "self 3072 bytes (75.0%) · total 3072 bytes (75.0%)");
  assert.deepEqual(problems.errors, []);
});

test("clicking a frame or a table row posts select with its file and line", async () => {
  await fresh();
  const box = await page.locator("#canvas").boundingBox();
  assert.ok(box);
  // Left Heavy row 1: crunch (one function frame, at its first line 7) covers [0, 1).
  await page.mouse.click(box.x + box.width * 0.3, box.y + 18 + 9);
  await page.mouse.click(box.x + box.width * 0.9, box.y + 18 + 9);
  await page.mouse.click(box.x + box.width * 0.5, box.y + 9);
  await page.mouse.click(box.x + box.width * 0.5, box.y + 3 * 18 + 9); // empty row: nothing
  await page.locator("#hot tbody tr").nth(1).click();
  await settle(page);
  const selects = (await posted(page)).filter((m) => m.type === "select");
  assert.deepEqual(selects, [
    { type: "select", file: "/w/demo.osp", line: 7 },
    { type: "select", file: "/w/demo.osp", line: 7 },
    { type: "select", file: "/w/demo.osp", line: 12 },
    { type: "select", file: "/w/demo.osp", line: 12 },
  ]);
});

test("the fiber selector and chips switch profiles and reset the zoom", async () => {
  await fresh();
  await page.locator("#search").fill("sleep");
  const box = await page.locator("#canvas").boundingBox();
  assert.ok(box);
  await page.mouse.move(box.x + 100, box.y + 9);
  await page.mouse.wheel(0, -300);
  await settle(page);
  assert.notDeepEqual(await debug(page, "view"), { start: 0, end: 1 });
  await page.locator("#fiber").selectOption("1");
  await settle(page);
  assert.equal(await debug(page, "profileName"), "fiber-1");
  assert.deepEqual(await debug(page, "view"), { start: 0, end: 1 });
  // fiber-1 only waited: with On-CPU only (the default) nothing is drawn, and the page says why.
  assert.equal(await text("#matches"), "0 matching frames · 0.0% of fiber-1", "the search is re-applied");
  assert.equal(await text("#empty"), "No on-CPU samples here: turn off On-CPU only to see the waiting ones");
  await page.locator("#oncpu").uncheck();
  await settle(page);
  assert.equal(await text("#matches"), "1 matching frame · 100.0% of fiber-1", "the search is re-applied");
  assert.deepEqual(await page.locator(".chip.active").allInnerTexts(), ["fiber-1 · 2 samples · waiting"]);
  assert.ok(await debug(page, "locate", "nap"));
  assert.equal(await debug(page, "locate", "crunch"), null);
  // A runtime frame posts its C file.
  const sleep = await debug(page, "locate", "osp_sleep_ms");
  assert.ok(sleep);
  await page.mouse.click(sleep.x, sleep.y);
  await settle(page);
  assert.deepEqual((await posted(page)).filter((m) => m.type === "select").pop(), {
    type: "select",
    file: "/opt/osprey/runtime/core/sleep.c",
    line: 31,
  });
  await page.locator(".chip").first().click();
  await settle(page);
  assert.equal(await debug(page, "profileName"), "main");
  assert.equal(await page.locator("#fiber").inputValue(), "0");
});

test("a zero-sample fiber between others does not shift chips against profiles", async () => {
  const summary = clone(DEMO_SUMMARY) as { fibers: unknown[] };
  // Row order: main, effect-2 (no samples), fiber-1.
  const f = summary.fibers as { label: string }[];
  summary.fibers = [f[0], f[2], f[1]];
  await fresh(summary, DEMO_SPEEDSCOPE);
  assert.deepEqual(await page.locator(".chip").allInnerTexts(), ["main · 3 samples · 100% on-CPU", "fiber-1 · 2 samples · waiting"]);
  await page.locator(".chip").nth(1).click();
  await settle(page);
  assert.equal(await debug(page, "profileName"), "fiber-1");
});

test("a chip counts one sample in the singular", async () => {
  const summary = clone(DEMO_SUMMARY) as { fibers: { label: string; samples: number }[] };
  const f = summary.fibers.find((x) => x.label === "fiber-1");
  assert.ok(f);
  f.samples = 1;
  await fresh(summary, DEMO_SPEEDSCOPE);
  assert.deepEqual(await page.locator(".chip").allInnerTexts(), ["main · 3 samples · 100% on-CPU", "fiber-1 · 1 sample · waiting"]);
});

test("Time Order toggle shows the flame chart", async () => {
  await fresh();
  await page.locator("#view-time-order").click();
  await settle(page);
  assert.equal(await debug(page, "viewKind"), "time-order");
  assert.equal(await page.locator("#view-time-order").getAttribute("aria-pressed"), "true");
  assert.equal(await debug(page, "rectCount"), 2);
  await page.locator("#view-left-heavy").click();
  await settle(page);
  assert.equal(await debug(page, "viewKind"), "left-heavy");
});

test("text from the profile is never markup; malformed documents show their error", async () => {
  const ss = clone(DEMO_SPEEDSCOPE) as { shared: { frames: { name: string }[] } };
  ss.shared.frames[0].name = `<img src=x onerror="document.title='pwned'">`;
  const sum = clone(DEMO_SUMMARY) as { hotFunctions: { name: string }[]; fibers: { label: string }[] };
  sum.hotFunctions[0].name = `<b id="inj">bold</b>`;
  sum.fibers[0].label = `<i id="inj2">m</i>`;
  await fresh(sum, ss);
  assert.equal(await page.locator("#inj").count(), 0);
  assert.equal(await page.locator("#inj2").count(), 0);
  assert.equal(await page.locator("img").count(), 0);
  assert.equal(await page.locator("#hot tbody tr td").nth(2).innerText(), `<b id="inj">bold</b>`);
  const bad = clone(DEMO_SPEEDSCOPE) as { profiles: { weights: unknown[] }[] };
  bad.profiles[1].weights[1] = -1;
  await postProfile(page, DEMO_SUMMARY, bad);
  assert.equal(await text("#error"), 'speedscope: profile 1 ("fiber-1"): weights[1] must be a finite non-negative number, got -1');
  assert.notEqual(await page.title(), "pwned");
});

test("a document that cannot be shown leaves nothing of the previous one but the error", async () => {
  const empty = clone(DEMO_SPEEDSCOPE) as { profiles: unknown[] };
  empty.profiles = [{ endValue: 0, name: "main", samples: [], startValue: 0, type: "sampled", unit: "seconds", weights: [] }];
  await fresh(DEMO_SUMMARY, empty);
  assert.equal(await text("#empty"), "No samples in this fiber");
  await postProfile(page, DEMO_SUMMARY, DEMO_SPEEDSCOPE);
  await page.locator("#search").fill("crunch");
  await page.locator("#view-sandwich").click();
  await settle(page);
  assert.equal(await text("#matches"), "1 matching function \u00b7 100.0% of main");
  await page.evaluate(() => window.postMessage({ type: "error", message: "x.speedscope.json: invalid JSON" }, "*"));
  await settle(page);
  assert.equal(await text("#error"), "x.speedscope.json: invalid JSON");
  // No counts, function list or empty-graph message of a profile that is no longer shown.
  assert.equal(await text("#matches"), "");
  assert.equal(await page.locator("#function-label").isVisible(), false);
  assert.equal(await page.locator("#function option").count(), 0);
  assert.equal(await page.locator("#sandwich-info").isVisible(), false);
  await postProfile(page, DEMO_SUMMARY, empty);
  await page.evaluate(() => window.postMessage({ type: "error", message: "bad" }, "*"));
  await settle(page);
  assert.equal(await text("#empty"), "", "the empty-graph message belonged to the previous profile");
  // The next profile is shown whole again, the search kept.
  await postProfile(page, DEMO_SUMMARY, DEMO_SPEEDSCOPE);
  assert.equal(await text("#error"), "");
  assert.equal(await page.locator("#function-label").isVisible(), true);
  assert.equal(await text("#matches"), "1 matching function \u00b7 100.0% of main");
  assert.deepEqual(problems.errors, []);
});

test("an empty profile says so; a 20,000-frame profile renders", async () => {
  const empty = clone(DEMO_SPEEDSCOPE) as { profiles: unknown[] };
  empty.profiles = [{ endValue: 0, name: "main", samples: [], startValue: 0, type: "sampled", unit: "seconds", weights: [] }];
  await fresh(DEMO_SUMMARY, empty);
  assert.equal(await text("#empty"), "No samples in this fiber");
  // chips exist only for fibers with samples (§(j)): none for an empty profile
  assert.equal(await page.locator(".chip").count(), 0);
  const g = generateProfile({ frames: 20_000, seed: 7 });
  await postProfile(page, g.summary, g.speedscope);
  assert.equal(await text("#empty"), "");
  assert.equal(await debug(page, "rectCount"), 20_000);
  assert.equal(await debug(page, "rows"), g.maxDepth);
  assert.ok((await distinctColors(page)) > 50);
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-20k.png") });
  assert.deepEqual(problems.errors, []);
});

test("a real driver export loads and renders", async () => {
  // fixtures/driver/ is checked in (scripts/make-driver-fixture.mjs writes it from
  // `build/bin/osprey examples/demo.osp` with --profile): its absence is a failure, never a skip.
  const dir = path.join(FIXTURES, "driver");
  assert.ok(fs.existsSync(dir), `${dir} is missing: run node editor/vscode/scripts/make-driver-fixture.mjs after make build`);
  const ss = fs.readdirSync(dir).find((f) => f.endsWith(".speedscope.json"));
  assert.ok(ss);
  const stem = ss.slice(0, -".speedscope.json".length);
  const summary = JSON.parse(fs.readFileSync(path.join(dir, `${stem}.profile.json`), "utf8"));
  const speedscope = JSON.parse(fs.readFileSync(path.join(dir, ss), "utf8"));
  // The program behind the fixture ran long enough for a meaningful profile (§(k) item 36).
  assert.ok(summary.sampleCount >= 100, `only ${summary.sampleCount} samples in the driver fixture`);
  await fresh(summary, speedscope);
  assert.equal(await text("#error"), "");
  assert.ok((await page.locator(".chip").count()) >= 1);
  assert.ok((await page.locator("#hot tbody tr").count()) >= 1);
  // Clicking the first user frame found posts its own file and line.
  const doc = validateSpeedscope(speedscope);
  const user = doc.frames.find((f) => /\.ospm?l?$/i.test(f.file) && f.line > 0);
  if (user) {
    const at = await debug(page, "locate", user.name);
    if (at) {
      await page.mouse.click(at.x, at.y);
      await settle(page);
      const sel = (await posted(page)).filter((m) => m.type === "select").pop();
      assert.deepEqual(sel, { type: "select", file: at.file, line: at.line });
    }
  }
  assert.ok((await distinctColors(page)) > 10);
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-driver.png") });
  assert.deepEqual(problems.errors, []);
});

test("frames are painted in exactly the colours of the spec's hsl formula", async () => {
  await fresh();
  // Chromium's own reading of every hsl() string equals the hex the renderer paints with.
  const g = generateProfile({ frames: 3000, seed: 3 });
  const frames = (g.speedscope as { shared: { frames: { file: string; name: string }[] } }).shared.frames;
  const css = frameColors(frames);
  const { palette, index } = framePalette(frames);
  const parsed = await page.evaluate((list) => {
    const ctx = document.createElement("canvas").getContext("2d") as CanvasRenderingContext2D;
    return list.map((c) => {
      ctx.fillStyle = "#000000";
      ctx.fillStyle = c;
      return ctx.fillStyle as string;
    });
  }, css);
  css.forEach((_, i) => assert.equal(parsed[i], palette[index[i]], `frame ${i}: ${css[i]}`));
  // And the pixels on the canvas carry them: crunch@7 of the running example.
  const doc = validateSpeedscope(DEMO_SPEEDSCOPE);
  const demo = framePalette(doc.frames);
  const crunch = await debug(page, "locate", "crunch");
  assert.ok(crunch);
  const px = await pixelAt(page, crunch.x + 150, crunch.y + 5);
  const hex = "#" + px.slice(0, 3).map((v) => v.toString(16).padStart(2, "0")).join("");
  assert.equal(hex, demo.palette[demo.index[0]]);
});

/** FNV-1a hash of every pixel of the canvas. */
function canvasHash(): Promise<string> {
  return page.evaluate(() => {
    const c = document.getElementById("canvas") as HTMLCanvasElement;
    const d = (c.getContext("2d") as CanvasRenderingContext2D).getImageData(0, 0, c.width, c.height).data;
    let h = 2166136261;
    for (let i = 0; i < d.length; i++) h = Math.imul(h ^ d[i], 16777619);
    return `${(h >>> 0).toString(16)} ${c.width}x${c.height}`;
  });
}

function hexAt(px: number[]): string {
  return "#" + px.slice(0, 3).map((v) => v.toString(16).padStart(2, "0")).join("");
}

test("culling: sub-pixel frames and their callees are skipped, a box of a few pixels among them is drawn and clickable", async () => {
  // main → 10,000 tiny_i → leaf_i, then `target` (50 samples), then `sliver` (25), then 10,000
  // more tiny_i → leaf_i; one sample each otherwise. At full width a tiny frame is about
  // 0.06 px (culled with its callee), target about 3 px, sliver about 1.5 px.
  const N = 20_000;
  const frames = [
    { name: "main", file: "/w/cull.osp", line: 1 },
    { name: "target", file: "/w/cull.osp", line: 42 },
    { name: "sliver", file: "/w/cull.osp", line: 43 },
  ];
  for (let i = 0; i < N; i++) frames.push({ name: `tiny_${i}`, file: "/w/cull.osp", line: 100 + i }, { name: `leaf_${i}`, file: "/w/cull.osp", line: 100 + i });
  const samples: number[][] = [];
  const tiny = (i: number): number[] => [0, 3 + 2 * i, 4 + 2 * i];
  for (let i = 0; i < N / 2; i++) samples.push(tiny(i));
  for (let r = 0; r < 50; r++) samples.push([0, 1]);
  for (let r = 0; r < 25; r++) samples.push([0, 2]);
  for (let i = N / 2; i < N; i++) samples.push(tiny(i));
  const T = samples.length;
  const speedscope = {
    $schema: "https://www.speedscope.app/file-format-schema.json",
    name: "cull",
    activeProfileIndex: 0,
    exporter: "test",
    shared: { frames },
    profiles: [{ type: "sampled", name: "main", unit: "seconds", startValue: 0, endValue: T / 1000, samples, weights: samples.map(() => 0.001) }],
  };
  if (page) await page.close();
  ({ page, problems } = await openPanel(browser));
  await postProfile(page, null, speedscope);
  const { palette, index } = framePalette(validateSpeedscope(speedscope).frames);
  const colorOf = (f: number): string => palette[index[f]];
  const box = await page.locator("#canvas").boundingBox();
  assert.ok(box);
  for (const view of ["time-order", "left-heavy"]) {
    await page.locator(`#view-${view}`).click();
    await settle(page);
    assert.equal(await debug(page, "rectCount"), 1 + 2 + 2 * N);
    assert.ok((box.width * 25) / T > 1, "the sliver is wider than 1 px");
    for (const [name, f, line] of [["target", 1, 42], ["sliver", 2, 43]] as const) {
      const at = await debug(page, "locate", name);
      assert.ok(at, name);
      assert.equal(hexAt(await pixelAt(page, at.x, at.y)), colorOf(f), `${view}: ${name} is painted`);
      await page.mouse.move(at.x, at.y);
      await settle(page);
      assert.equal((await text("#tooltip")).split("\n")[0], name, `${view}: ${name} has a tooltip`);
      await page.mouse.click(at.x, at.y);
      await settle(page);
      assert.deepEqual((await posted(page)).filter((m) => m.type === "select").pop(), { type: "select", file: "/w/cull.osp", line }, `${view}: ${name} is clickable`);
    }
    await page.mouse.move(box.x + box.width / 2, box.y + box.height - 2);
    // The culled redraw paints exactly what visiting every rectangle paints, at full width and
    // zoomed in until the tiny frames are tens of pixels wide (then they are drawn, callees too).
    for (const [a, b] of [[0, 1], [0.25, 0.252], [0.3, 0.34], [0.49, 0.51]]) {
      await debug(page, "setView", a, b);
      await settle(page);
      const culled = await canvasHash();
      await debug(page, "setCulling", false);
      await settle(page);
      const visited = await canvasHash();
      await debug(page, "setCulling", true);
      await settle(page);
      assert.equal(culled, visited, `${view} [${a}, ${b}]`);
    }
  }
  // Zoomed in (Time Order), a tiny frame and its callee are drawn and clickable.
  await page.locator("#view-time-order").click();
  await settle(page);
  await debug(page, "setView", 0.25, 0.252);
  await settle(page);
  const i = Math.floor(0.251 * T);
  const t = await debug(page, "locate", `tiny_${i}`);
  const leaf = await debug(page, "locate", `leaf_${i}`);
  assert.ok(t && leaf);
  assert.equal(hexAt(await pixelAt(page, t.x, t.y)), colorOf(3 + 2 * i));
  assert.equal(hexAt(await pixelAt(page, leaf.x, leaf.y + 4)), colorOf(4 + 2 * i));
  await page.mouse.click(leaf.x, leaf.y);
  await settle(page);
  assert.deepEqual((await posted(page)).filter((m) => m.type === "select").pop(), { type: "select", file: "/w/cull.osp", line: 100 + i });
  assert.deepEqual(problems.errors, []);
});

test("the canvas is scaled by the device pixel ratio", async () => {
  if (page) await page.close();
  ({ page, problems } = await openPanel(browser));
  const session = await page.context().newCDPSession(page);
  await session.send("Emulation.setDeviceMetricsOverride", { width: 1000, height: 700, deviceScaleFactor: 2, mobile: false });
  await page.evaluate(() => window.dispatchEvent(new Event("resize")));
  await postProfile(page, DEMO_SUMMARY, DEMO_SPEEDSCOPE);
  const dims = await page.evaluate(() => {
    const c = document.getElementById("canvas") as HTMLCanvasElement;
    return { dpr: window.devicePixelRatio, w: c.width, css: c.getBoundingClientRect().width };
  });
  assert.equal(dims.dpr, 2);
  assert.equal(dims.w, Math.round(dims.css * 2));
  const box = await page.locator("#canvas").boundingBox();
  assert.ok(box);
  await page.mouse.click(box.x + box.width * 0.9, box.y + 18 + 9);
  await settle(page);
  assert.deepEqual((await posted(page)).filter((m) => m.type === "select"), [{ type: "select", file: "/w/demo.osp", line: 7 }]);
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-demo-dpr2.png") });
  assert.deepEqual(problems.errors, []);
});
