// The SVG flame graph (docs/spec/profiler.md §(l.6), docs/profile-formats.md "The SVG flame
// graph") in the real browser: Debian's Chromium driven by playwright-core, the file opened
// straight from disk as a user would (file://, no server, no network).
//
//  1. It renders: frames drawn, the title `<program> · <cpu>s CPU · <n> samples`, no console
//     error, no page error, no request leaving the file.
//  2. Hover shows the frame's details on the status line; a click zooms to the frame (it
//     takes the full width) and the reset control brings the whole graph back.
//  3. Search highlights the matching frames and shows the matched % — the function's total
//     share from .profile.json, since search counts nested matches once.
//  4. A 200,000-frame profile (bench/post_svg_gen.py: every frame exactly 0.1 % wide, all
//     drawn) loads, zooms, resets and searches; the times are printed (bench/post_svg.sh
//     prints the same figures as a benchmark).
//  5. The differential SVG of `osprey --diff` (docs/profile-formats.md "Comparing two
//     profiles"): no console error; red frames grew, blue frames shrank; hover shows both
//     shares; zoom and search work as in the flame graph.
// Screenshots of the SVG (whole and zoomed) go to $OSPPROF_ARTIFACTS (ctest sets
// build/test/postprocess/artifacts).
//
// Environment (set by ctest): OSPPROF_CLI, OSPPROF_FIXTURE, OSPPROF_GOLDEN, OSPPROF_ARTIFACTS,
// OSPREY_BIN (the driver, for test 5). A missing variable fails the run: no test is skipped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = process.env.OSPPROF_CLI;
const fixture = process.env.OSPPROF_FIXTURE;
const golden = process.env.OSPPROF_GOLDEN;
const artifacts = process.env.OSPPROF_ARTIFACTS;

let work, browser, profileDir;

function generate(raw, stem, program, env = {}) {
  const prefix = path.join(work, stem);
  execFileSync(cli, [raw, '-o', prefix, '--program', program, '--no-report'],
               { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  return prefix;
}

before(async () => {
  assert.ok(cli && fixture && golden, 'OSPPROF_CLI, OSPPROF_FIXTURE and OSPPROF_GOLDEN must be set');
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'ospprof-svg-'));
  if (artifacts) fs.mkdirSync(artifacts, { recursive: true });
  generate(path.join(golden, 'demo.raw.json'), 'demo', 'demo.osp', { OSPREY_PROFILE_SYMBOLIZER: 'none' });
  const raw = path.join(work, 'fixture.osprof.json');
  execFileSync(fixture, [raw]);
  generate(raw, 'fixture', 'symbolize_fixture.c', { OSPREY_PROFILE_SYMBOLIZER: 'llvm' });
  const many = path.join(work, 'many.osprof.json');
  execFileSync('python3', [path.join(here, '..', '..', 'bench', 'post_svg_gen.py'), many, '1000', '200']);
  generate(many, 'many', 'many.osp', { OSPREY_PROFILE_SYMBOLIZER: 'none' });
  assert.ok(process.env.OSPREY_BIN, 'OSPREY_BIN (the osprey driver) is not set');
  fs.writeFileSync(path.join(work, 'base.folded'),
                   'main;work 40\nmain;helper;libfoo 20\nmain;std::sort(int*, int*) 40\n');
  fs.writeFileSync(path.join(work, 'new.folded'),
                   'main;work 10\nmain;helper;libfoo 60\nmain;helper 20\nmain;new_fn 10\n');
  execFileSync(process.env.OSPREY_BIN, ['--diff', 'base.folded', 'new.folded', '-o', 'cmp'],
               { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] });
  profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ospprof-svg-chromium-'));
  browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (profileDir) fs.rmSync(profileDir, { recursive: true, force: true });
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/* Open <stem>.svg; returns the page and the list of problems seen so far (kept updated). */
async function open(stem) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('request', (r) => { if (!r.url().startsWith('file:')) problems.push(`request: ${r.url()}`); });
  const t0 = performance.now();
  await page.goto(pathToFileURL(path.join(work, `${stem}.svg`)).href, { timeout: 300000 });
  await page.waitForFunction(() => document.documentElement.__flame !== undefined, null,
                             { timeout: 120000 });
  return { page, problems, loadMs: performance.now() - t0 };
}

/* Frame i (depth-first order) as drawn on the screen: the hover outline placed on it (in
 * the same zoomed group as the frames) and its bounding box in px. */
function frameBox(page, i) {
  return page.evaluate((k) => document.documentElement.__flame.box(k), i);
}

/* Screen y of the middle of frame i's row. */
function rowY(page, i) {
  return page.evaluate((k) => {
    const f = document.documentElement.__flame;
    f.box(k);
    const r = document.getElementById('hover').getBoundingClientRect();
    return r.y + r.height / 2;
  }, i);
}

/* Names of the frames in document order (from the hover text: the name comes first). */
function frameNames(page) {
  return page.evaluate(() => {
    const f = document.documentElement.__flame;
    const out = [];
    for (let i = 0; i < f.count; i++) out.push(f.tip(i).split(' \u2014 ')[0]);
    return out;
  });
}

/* The labels drawn now. */
function labels(page) {
  return page.$$eval('#labels text', (ts) => ts.map((t) => t.textContent));
}

test('the SVG renders with its title, hover, zoom, reset and search', { timeout: 120000 }, async () => {
  const summary = JSON.parse(fs.readFileSync(path.join(work, 'fixture.profile.json'), 'utf8'));
  const { page, problems } = await open('fixture');
  const title = await page.locator('#title').textContent();
  assert.match(title, /^symbolize_fixture\.c · \d+\.\d\ds CPU · \d+ samples$/);
  const n = await page.evaluate(() => document.documentElement.__flame.count);
  assert.ok(n >= 8, `only ${n} frames drawn`);
  const names = await frameNames(page);
  assert.equal(names[0], 'all');
  // the root spans the width (1200 - 2 x 10 margin)
  const root = await frameBox(page, 0);
  // (the bounding box includes the 0.5 px separating stroke)
  assert.ok(Math.abs(root.w - 1180) < 0.1 && Math.abs(root.x - 10) < 0.1, `root ${JSON.stringify(root)}`);
  if (artifacts) await page.screenshot({ path: path.join(artifacts, 'svg-fixture.png') });

  // hover: the status line shows the frame's tooltip (name — file:line — samples, self, total)
  const leaf = names.indexOf('fixture_capture');
  assert.ok(leaf > 0, `no fixture_capture frame among ${names}`);
  const lb = await frameBox(page, leaf);
  await page.mouse.move(lb.x + lb.w / 2, await rowY(page, leaf));
  const status = await page.locator('#status').textContent();
  assert.match(status, /^fixture_capture — \/.*symbolize_fixture\.c:\d+ — \d+ samples?, self \d+\.\d%, total \d+\.\d%$/);

  // click-to-zoom on a frame narrower than the root: it then takes the full width
  const mid = names.indexOf('mid2');
  const before = await frameBox(page, mid);
  assert.ok(before.w < 1179, `mid2 already full width (${before.w})`);
  await page.mouse.click(before.x + before.w / 2, await rowY(page, mid));
  const zoomed = await frameBox(page, mid);
  assert.ok(Math.abs(zoomed.w - 1180) < 0.1 && Math.abs(zoomed.x - 10) < 0.1,
            `zoomed mid2 at x ${zoomed.x} width ${zoomed.w}`);
  assert.ok((await labels(page)).includes('mid2'), 'mid2 labelled once zoomed');
  assert.ok(await page.locator('#reset').isVisible(), 'no reset control while zoomed');
  if (artifacts) await page.screenshot({ path: path.join(artifacts, 'svg-fixture-zoomed.png') });
  await page.locator('#reset').click();
  const back = await frameBox(page, mid);
  assert.ok(Math.abs(back.w - before.w) < 0.01 && Math.abs(back.x - before.x) < 0.01, 'reset');
  assert.ok(!(await page.locator('#reset').isVisible()), 'reset control still shown');

  // search: matched % is the function's total share (nested matches counted once)
  const fn = summary.hotFunctions.find((f) => f.name === 'leaf3');
  assert.ok(fn, 'leaf3 in hotFunctions');
  await page.locator('#search').fill('^leaf3$');
  const matched = await page.locator('#matched').textContent();
  const pct = Number(/^matched: (\d+\.\d)%$/.exec(matched)?.[1]);
  assert.ok(Math.abs(pct - fn.totalPct) <= 0.2, `matched ${matched}, leaf3 total ${fn.totalPct}%`);
  const hitCount = () => page.evaluate(() =>
    (document.getElementById('hits').getAttribute('d').match(/M/g) || []).length);
  assert.ok((await hitCount()) >= 1, 'no frame highlighted');
  await page.locator('#search').fill('');
  assert.equal(await hitCount(), 0);
  // an invalid regular expression is searched as text, without an error
  await page.locator('#search').fill('leaf3(');
  assert.equal(await page.locator('#matched').textContent(), 'matched: 0.0%');
  assert.deepEqual(problems, []);
  await page.close();
});

test('the demo SVG: fibers under the root, colours by the editor rule', { timeout: 60000 }, async () => {
  const { page, problems } = await open('demo');
  const names = await frameNames(page);
  const fills = await page.$$eval('#frames path.f', (ps) => ps.map((p) => p.getAttribute('fill')));
  // on-CPU only: the waiting fiber-1 is absent; main (the fiber frame) then main (the function)
  assert.deepEqual(names, ['all', 'main', '0x5555555551a5', '0x555555555130', '0x555555555142']);
  assert.ok(fills.every((f) => /^#[0-9a-f]{6}$/.test(f)), 'fill colours');
  if (artifacts) await page.screenshot({ path: path.join(artifacts, 'svg-demo.png') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a 200,000-frame SVG stays interactive', { timeout: 600000 }, async () => {
  const { page, problems, loadMs } = await open('many');
  const n = await page.evaluate(() => document.documentElement.__flame.count);
  assert.ok(n >= 200000, `${n} frames drawn`);
  const timing = await page.evaluate(() => {
    const f = document.documentElement.__flame;
    const t = [];
    let t0 = performance.now();
    f.zoom(f.count - 1); // the deepest frame of the last stack
    t.push(performance.now() - t0);
    const zoomedW = f.box(f.count - 1).w;
    t0 = performance.now();
    f.zoom(null);
    t.push(performance.now() - t0);
    t0 = performance.now();
    const share = f.find('^0x7f0000');
    t.push(performance.now() - t0);
    return { zoomMs: t[0], resetMs: t[1], searchMs: t[2], zoomedW, share };
  });
  assert.ok(Math.abs(timing.zoomedW - 1180) < 0.1, `zoomed width ${timing.zoomedW}`); // 0.5 px stroke
  assert.ok(Math.abs(timing.share - 1) < 1e-6, `search share ${timing.share}`);
  console.log(`svg 200k frames: ${n} drawn, load ${loadMs.toFixed(0)} ms, zoom ${timing.zoomMs.toFixed(0)} ms, ` +
              `reset ${timing.resetMs.toFixed(0)} ms, search ${timing.searchMs.toFixed(0)} ms`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the differential SVG of osprey --diff', { timeout: 60000 }, async () => {
  const { page, problems } = await open('cmp.diff');
  const title = await page.locator('#title').textContent();
  assert.equal(title, 'new.folded vs base.folded · red: more than base, blue: less');
  const names = await frameNames(page);
  // the new profile's frames only: std::sort (base only) is not drawn
  assert.ok(!names.includes('std::sort(int*, int*)'), `names ${names}`);
  // a frame's colour: the fill of the frame path drawn under its middle
  const rgb = async (i) => {
    const b = await frameBox(page, i);
    const y = await rowY(page, i);
    const fill = await page.evaluate(([x, yy]) => {
      const el = document.elementsFromPoint(x, yy).find((e) => e.matches('#frames path.f'));
      return el ? el.getAttribute('fill') : null;
    }, [b.x + b.w / 2, y]);
    const m = /^#(..)(..)(..)$/.exec(fill || '');
    assert.ok(m, `no frame colour at frame ${i} (${fill})`);
    return m.slice(1).map((h) => parseInt(h, 16));
  };
  const [hr, hg, hb] = await rgb(names.indexOf('helper')); // 20% -> 80%: the largest growth, full red
  assert.ok(hr === 255 && hg < 100 && hb < 100, `helper ${[hr, hg, hb]}`);
  const [wr, wg, wb] = await rgb(names.indexOf('work')); // 40% -> 10%: blue, lighter than helper's red
  assert.ok(wb === 255 && wr < 255 && wr > hg, `work ${[wr, wg, wb]}`);
  assert.deepEqual(await rgb(names.indexOf('main')), [255, 255, 255]); // 100% -> 100%: white
  // hover shows both shares
  const h = names.indexOf('helper');
  const hbx = await frameBox(page, h);
  await page.mouse.move(hbx.x + hbx.w / 2, await rowY(page, h));
  const status = await page.locator('#status').textContent();
  assert.match(status, /^helper — base 20\.00% · new 80\.00% \(\+60\.00\) — 80 samples, self 20\.0%, total 80\.0%$/);
  // zoom, reset, search
  await page.mouse.click(hbx.x + hbx.w / 2, await rowY(page, h));
  const z = await frameBox(page, h);
  assert.ok(Math.abs(z.w - 1180) < 0.1, `zoomed helper width ${z.w}`);
  await page.locator('#reset').click();
  await page.locator('#search').fill('^libfoo$');
  assert.equal(await page.locator('#matched').textContent(), 'matched: 60.0%');
  if (artifacts) await page.screenshot({ path: path.join(artifacts, 'svg-diff.png') });
  assert.deepEqual(problems, []);
  await page.close();
});
