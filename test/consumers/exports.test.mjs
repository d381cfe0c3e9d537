// Real consumers of the post-processor's exports (docs/spec/profiler.md §(g.2)–(g.4), §(k) 25–28).
//
//  1. The .speedscope.json validates against the JSON schema shipped in the `speedscope`
//     npm package (ajv), plus the cross-field rules the schema cannot express.
//  2. The .speedscope.json, .cpuprofile and .folded files each load without error in the
//     real speedscope viewer (the package's built index.html, served from 127.0.0.1) in
//     headless Debian Chromium driven by playwright-core.
//
// The exports are generated here from raw files by the library (ospprof-cli): the
// docs/spec/profiler.md running example, and a raw file written by a real -g -O2 program whose
// frames are symbolized by LLVM (inline chain, libc, the dynamic loader).
//
//  3. Frames are functions (docs/spec/profiler.md §(l.6)): (name, file) is unique in
//     shared.frames and speedscope's Sandwich view lists each function once.
// Screenshots of the viewer (flame graph and Sandwich) go to $OSPPROF_ARTIFACTS (ctest sets
// build/test/postprocess/artifacts).
//
// Environment (set by ctest): OSPPROF_CLI, OSPPROF_FIXTURE, OSPPROF_GOLDEN, OSPPROF_ARTIFACTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { createRequire } from 'node:module';
import Ajv from 'ajv';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const speedscopeDir = path.join(path.dirname(require.resolve('speedscope/package.json')),
                                'dist', 'release');
const cli = process.env.OSPPROF_CLI;
const fixture = process.env.OSPPROF_FIXTURE;
const golden = process.env.OSPPROF_GOLDEN;
const artifacts = process.env.OSPPROF_ARTIFACTS;

let work;
const prefixes = [];

function generate(raw, stem, program, env = {}) {
  const prefix = path.join(work, stem);
  execFileSync(cli, [raw, '-o', prefix, '--program', program, '--no-report'],
               { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  prefixes.push(prefix);
  return prefix;
}

before(() => {
  assert.ok(cli && fixture && golden, 'OSPPROF_CLI, OSPPROF_FIXTURE and OSPPROF_GOLDEN must be set');
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'ospprof-consumers-'));
  generate(path.join(golden, 'demo.raw.json'), 'demo', 'demo.osp',
           { OSPREY_PROFILE_SYMBOLIZER: 'none' });
  const raw = path.join(work, 'fixture.osprof.json');
  execFileSync(fixture, [raw]);
  generate(raw, 'fixture', 'symbolize_fixture.c', { OSPREY_PROFILE_SYMBOLIZER: 'llvm' });
  // no samples at all: the single empty `main` profile and the (idle) cpuprofile
  const empty = path.join(work, 'empty.osprof.json');
  fs.writeFileSync(empty, JSON.stringify({
    version: 1, pid: 1, exe: '/w/empty', rate_hz: 997, platform: 'linux-x86_64',
    start_unix_ns: 0, end_unix_ns: 0, images: [], threads: [{ fiber: 0, label: 'main' }],
    stacks: [], samples: [], dropped: 0 }));
  generate(empty, 'empty', 'empty.osp');
});

after(() => { if (work) fs.rmSync(work, { recursive: true, force: true }); });

test('speedscope export validates against the speedscope package schema', () => {
  const schema = JSON.parse(fs.readFileSync(path.join(speedscopeDir, 'file-format-schema.json'), 'utf8'));
  const ajv = new Ajv({ allErrors: true, strict: false });
  const validate = ajv.compile(schema);
  for (const prefix of prefixes) {
    const file = `${prefix}.speedscope.json`;
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.ok(validate(doc), `${file}: ${ajv.errorsText(validate.errors)}`);
    // cross-field rules (§(k) 25)
    assert.equal(doc.$schema, 'https://www.speedscope.app/file-format-schema.json');
    assert.ok(Array.isArray(doc.profiles) && doc.profiles.length >= 1, `${file}: no profile`);
    const nframes = doc.shared.frames.length;
    doc.profiles.forEach((p, i) => {
      assert.equal(p.type, 'sampled');
      assert.equal(p.unit, 'seconds');
      assert.equal(p.samples.length, p.weights.length, `${file}: profile ${i} lengths differ`);
      let sum = 0;
      p.weights.forEach((w) => {
        assert.ok(Number.isFinite(w) && w >= 0, `${file}: profile ${i}: weight ${w}`);
        sum += w;
      });
      assert.ok(Math.abs(sum - (p.endValue - p.startValue)) < 1e-9 * Math.max(1, p.weights.length),
                `${file}: profile ${i}: endValue ${p.endValue} but weights sum to ${sum}`);
      p.samples.forEach((s, j) => s.forEach((f) => assert.ok(
        Number.isInteger(f) && f >= 0 && f < nframes,
        `${file}: profile ${i} sample ${j}: frame ${f} out of range (${nframes} frames)`)));
    });
    assert.ok(doc.activeProfileIndex >= 0 && doc.activeProfileIndex < doc.profiles.length);
  }
});

test('frames are functions: (name, file) once in shared.frames', () => {
  for (const prefix of prefixes) {
    const doc = JSON.parse(fs.readFileSync(`${prefix}.speedscope.json`, 'utf8'));
    const keys = doc.shared.frames.map((f) => JSON.stringify([f.name, f.file]));
    assert.equal(new Set(keys).size, keys.length, `${prefix}: a function is two frames`);
  }
});

test('fixture export carries the LLVM-symbolized inline chain root first', () => {
  const doc = JSON.parse(fs.readFileSync(path.join(work, 'fixture.speedscope.json'), 'utf8'));
  const names = doc.profiles[0].samples[0].map((f) => doc.shared.frames[f].name);
  assert.deepEqual(names, ['main', 'fixture_outer', 'top1', 'mid2', 'leaf3', 'fixture_capture']);
});

// ---- the real viewer -------------------------------------------------------------------

function serve() {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
                  '.json': 'application/json', '.wasm': 'application/wasm' };
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    const root = url.startsWith('/profiles/') ? work : speedscopeDir;
    const rel = url.startsWith('/profiles/') ? url.slice('/profiles/'.length) : url.slice(1);
    const file = path.resolve(root, rel || 'index.html');
    if (!file.startsWith(root + path.sep) || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] || 'application/octet-stream',
                         'access-control-allow-origin': '*' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('speedscope viewer loads the .speedscope.json, .cpuprofile and .folded exports',
     { timeout: 180000 }, async () => {
  const server = await serve();
  const port = server.address().port;
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ospprof-chromium-'));
  let browser;
  try {
    // a fresh --user-data-dir: playwright passes it for a persistent context
    browser = await chromium.launchPersistentContext(profileDir, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
             '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    for (const prefix of prefixes) {
      for (const ext of ['.speedscope.json', '.cpuprofile', '.folded']) {
        const name = path.basename(prefix) + ext;
        if (ext !== '.speedscope.json' && name.startsWith('empty.folded')) continue; // empty file: nothing to show
        const page = await browser.newPage();
        const problems = [];
        page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
        page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
        page.on('dialog', async (d) => { problems.push(`dialog: ${d.message()}`); await d.dismiss(); });
        const profileURL = `http://127.0.0.1:${port}/profiles/${encodeURIComponent(name)}`;
        await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=${encodeURIComponent(profileURL)}`);
        try {
          await page.waitForFunction(() => / - speedscope$/.test(document.title), null, { timeout: 30000 });
        } catch (e) {
          problems.push(`not loaded (title "${await page.title()}")`);
        }
        const failed = await page.locator('text=Something went wrong').count();
        if (failed) problems.push('viewer shows "Something went wrong"');
        // a loaded profile draws into canvases
        if (!problems.length) assert.ok(await page.locator('canvas').count() > 0, `${name}: no canvas`);
        if (!problems.length && ext === '.speedscope.json' && !name.startsWith('empty')) {
          if (artifacts) {
            fs.mkdirSync(artifacts, { recursive: true });
            await page.screenshot({ path: path.join(artifacts, `speedscope-${path.basename(prefix)}.png`) });
          }
          // Sandwich (key 3): one row per function, each name once
          // The table's header is drawn before its rows (a virtualized list laid out on a
          // later frame): wait until rows are there too, or the 30 s run out.
          await page.keyboard.press('3');
          const sandwichRows = () => {
            const text = document.body.innerText;
            const at = text.indexOf('Symbol Name');
            if (at < 0) return null;
            return text.slice(at + 'Symbol Name'.length).split('\n').filter((l) => l.startsWith('\t'))
              .map((l) => l.trim()).filter((l) => !/^[0-9.]+\s*[a-zµ]*s \(.*%\)$/.test(l));
          };
          await page.waitForFunction(`((${sandwichRows})() || []).length >= 2`, null,
                                     { timeout: 30000 }).catch(() => {});
          const rows = await page.evaluate(sandwichRows);
          assert.ok(rows.length >= 2, `${name}: Sandwich rows ${JSON.stringify(rows)}`);
          assert.equal(new Set(rows).size, rows.length, `${name}: Sandwich lists a function twice: ${rows}`);
          if (artifacts) await page.screenshot({ path: path.join(artifacts, `speedscope-${path.basename(prefix)}-sandwich.png`) });
        }
        assert.deepEqual(problems, [], `${name}: ${problems.join('; ')}`);
        await page.close();
      }
    }
  } finally {
    if (browser) await browser.close();
    server.close();
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
});
