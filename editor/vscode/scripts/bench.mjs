// Redraw-time benchmark of the flame graph (docs/spec/profiler.md §(k) item 29, §(l.10)): loads
// a generated profile with 200,000 distinct frames into the webview page in headless Chromium
// and, in every view (Left Heavy, Time Order, Inverted, Sandwich of the root function, and the
// differential view of the same stacks as a .diff.folded), draws the full view, zooms with the
// wheel and pans by dragging, recording the duration of every
// redraw (the page's draw() as run from requestAnimationFrame). Prints median / p95 / max per
// phase against the 16 ms frame budget, and one verdict line per view: ok when the p95 of every
// phase is under the budget, MISSED otherwise. Each measured redraw includes rasterisation (a
// 1-pixel read-back of the canvas after drawing). The load averages before and after are printed
// beside the figures: on a shared machine the p95 moves with other load. Usage: npm run bench
// [-- --frames N]
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const B = require(path.join(root, "out/test/support/browser.js"));
const G = require(path.join(root, "out/test/support/generate.js"));

const arg = process.argv.indexOf("--frames");
const FRAMES = arg > 0 ? Number(process.argv[arg + 1]) : 200_000;
const BUDGET_MS = 16;

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, median: q(0.5), p95: q(0.95), max: s[s.length - 1] };
}

const loadavg = () => os.loadavg().map((x) => x.toFixed(2)).join(" ");
let chromiumVersion = "";
try {
  chromiumVersion = execFileSync(B.CHROMIUM, ["--version"], { encoding: "utf8" }).trim();
} catch {
  chromiumVersion = B.CHROMIUM;
}
console.log(`${new Date().toISOString()} · ${chromiumVersion} · ${os.cpus().length} CPUs · load average before: ${loadavg()}`);
const t0 = Date.now();
const g = G.generateProfile({ frames: FRAMES, seed: 11 });
const frameCount = g.speedscope.shared.frames.length;
console.log(`profile: ${frameCount} distinct frames, ${g.sampleCount} samples, depth ${g.maxDepth} (generated in ${Date.now() - t0} ms)`);

// The same profile as a .diff.folded (every stack with a base and a new count) for the diff view.
const names = g.speedscope.shared.frames.map((fr) => fr.name);
const diffLines = [];
const counts = new Map();
for (const st of g.speedscope.profiles[0].samples) {
  const k = st.map((i) => names[i]).join(";");
  counts.set(k, (counts.get(k) ?? 0) + 1);
}
let n = 0;
for (const [k, c] of counts) diffLines.push(`${k} ${c + (n % 3)} ${c + (n++ % 5)}`);
const diffText = diffLines.join("\n") + "\n";
const firstUser = g.speedscope.shared.frames[0];

const browser = await B.launch();
const results = [];
try {
  const { page, problems } = await B.openPanel(browser, 1400, 900);
  // Every measured redraw ends with a 1-pixel read-back, so the time includes rasterising the
  // canvas, not only recording the drawing commands.
  await B.debug(page, "setFlushAfterDraw", true);
  const views = [
    ["left-heavy", async () => B.postProfileText(page, JSON.stringify(g.summary), JSON.stringify(g.speedscope))],
    ["time-order", async () => page.locator("#view-time-order").click()],
    ["inverted", async () => page.locator("#view-inverted").click()],
    // The Sandwich of the root function: its callees are the whole tree (the largest sandwich).
    ["sandwich", async () => B.debug(page, "sandwichOn", firstUser.name, firstUser.file)],
    ["diff", async () => page.evaluate((text) => window.postMessage({ type: "diff", title: "t", text }, "*"), diffText)],
  ];
  for (const [kind, setup] of views) {
    const tl = Date.now();
    await setup();
    await B.settle(page);
    const loadMs = Date.now() - tl;
    if ((await B.debug(page, "viewKind")) !== kind) throw new Error(`bench: expected the ${kind} view, got ${await B.debug(page, "viewKind")}`);
    const rects = await B.debug(page, "rectCount");
    const box = await page.locator("#canvas").boundingBox();
    // Full view, drawn 100 times: the worst case for culling (everything in view). With 100
    // draws the p95 is the 95th, not the second-worst of 30 (one preemption on a shared machine).
    await B.debug(page, "clearDrawTimes");
    const full = [];
    for (let i = 0; i < 100; i++) full.push(await B.debug(page, "drawNow"));
    // Wheel zoom in and out about several cursor positions.
    await B.debug(page, "clearDrawTimes");
    for (const fx of [0.2, 0.5, 0.8]) {
      await page.mouse.move(box.x + box.width * fx, box.y + 40);
      for (let i = 0; i < 40; i++) {
        await page.mouse.wheel(0, -100);
        await B.settle(page);
      }
      for (let i = 0; i < 40; i++) {
        await page.mouse.wheel(0, 100);
        await B.settle(page);
      }
    }
    const zoom = await B.debug(page, "drawTimes");
    // Pan by dragging while zoomed in to 1/8 and to 1/1000 of the profile.
    await B.debug(page, "clearDrawTimes");
    for (const span of [1 / 8, 1e-3]) {
      await B.debug(page, "setView", 0.45, 0.45 + span);
      await B.settle(page);
      await page.mouse.move(box.x + box.width * 0.5, box.y + 40);
      await page.mouse.down();
      for (let i = 1; i <= 40; i++) {
        await page.mouse.move(box.x + box.width * 0.5 + (i % 20 < 10 ? i * 8 : -i * 8), box.y + 40 + (i % 7));
        await B.settle(page);
      }
      await page.mouse.up();
    }
    const pan = await B.debug(page, "drawTimes");
    await page.screenshot({ path: path.join(root, "test-artifacts", `bench-${kind}.png`) });
    results.push({ kind, rects, loadMs, phases: await B.debug(page, "loadTimes"), full: stats(full), zoom: stats(zoom), pan: stats(pan) });
    await page.locator("#reset").click();
  }
  // Peer in the same run: the same canvas zoomed to the minimum span (1e-5), where a few
  // dozen rectangles are visible: the fixed cost of a redraw (clearing, uploading the canvas).
  await B.debug(page, "setView", 0.5, 0.5 + 1e-5);
  await B.settle(page);
  const peer = [];
  for (let i = 0; i < 30; i++) peer.push(await B.debug(page, "drawNow"));
  results.peer = stats(peer);
  if (problems.errors.length) console.log("page errors:", problems.errors);
} finally {
  await browser.close();
}

const f = (x) => x.toFixed(2).padStart(7);
console.log(`\nredraw time in headless Chromium (ms; budget ${BUDGET_MS} ms per redraw)`);
console.log("view         rects  load incl. transfer  phase       n   median      p95      max   p95/budget");
for (const r of results) {
  for (const phase of ["full", "zoom", "pan"]) {
    const s = r[phase];
    console.log(
      `${r.kind.padEnd(11)} ${String(r.rects).padStart(7)} ${String(r.loadMs + " ms").padStart(14)}      ${phase.padEnd(6)} ${String(s.n).padStart(4)} ${f(s.median)} ${f(s.p95)} ${f(s.max)}   ${(s.p95 / BUDGET_MS).toFixed(2)}`,
    );
  }
}
fs.mkdirSync(path.join(root, "test-artifacts"), { recursive: true });
fs.writeFileSync(path.join(root, "test-artifacts", "bench.json"), JSON.stringify({ frames: frameCount, samples: g.sampleCount, results, peer: results.peer }, null, 2));
for (const r of results) console.log(`${r.kind}: in-page load phases (ms): ${Object.entries(r.phases).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ")}`);
console.log(
  `peer: redraw of the same canvas zoomed to the minimum span (few rectangles): median ${results.peer.median.toFixed(2)} ms; ` +
    results.map((r) => `${r.kind} full/peer ${(r.full.median / results.peer.median).toFixed(2)}x`).join(", "),
);
console.log(`load average after: ${loadavg()}`);
console.log(`\nverdicts (target: redraw p95 < ${BUDGET_MS} ms in every phase of every view at ${frameCount} frames):`);
for (const r of results) {
  const p = [r.full.p95, r.zoom.p95, r.pan.p95];
  const worstPhase = Math.max(...p);
  console.log(
    `${r.kind.padEnd(11)} p95 full ${r.full.p95.toFixed(2)} / zoom ${r.zoom.p95.toFixed(2)} / pan ${r.pan.p95.toFixed(2)} ms: ` +
      `${worstPhase < BUDGET_MS ? "ok" : "MISSED"}`,
  );
}
const worst = Math.max(...results.flatMap((r) => [r.full.p95, r.zoom.p95, r.pan.p95]));
const worstView = results.find((r) => [r.full.p95, r.zoom.p95, r.pan.p95].includes(worst))?.kind;
console.log(`worst redraw p95 over every view and phase: ${worst.toFixed(2)} ms (${worstView}; ${worst < BUDGET_MS ? "within" : "OVER"} the ${BUDGET_MS} ms budget)`);
