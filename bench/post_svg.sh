#!/usr/bin/env bash
# The SVG flame graph at scale (issue 13 benchmark): a raw profile of 1,000 stacks x 200
# distinct frames (bench/post_svg_gen.py: every frame exactly 0.1 % wide, so all 200,000 are
# drawn, the worst case), post-processed by build/bin/ospprof-cli, then opened from disk in
# Debian's Chromium (playwright-core from test/consumers/node_modules). Prints the SVG's
# size, the post-processing time, and the browser's load, zoom, reset and search times, with
# the same page's load of a small SVG (the fixture) as the peer figure.
# Usage: bench/post_svg.sh [stacks] [depth]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cli=$root/build/bin/ospprof-cli
[ -x "$cli" ] || { echo "build first (make build)"; exit 1; }
[ -d test/consumers/node_modules/playwright-core ] || { echo "run npm ci in test/consumers first"; exit 1; }
stacks=${1:-1000} depth=${2:-200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/post_svg_gen.py "$tmp/many.json" "$stacks" "$depth"
start=$(date +%s.%N)
OSPREY_PROFILE_SYMBOLIZER=none "$cli" "$tmp/many.json" -o "$tmp/many" --program many.osp --no-report
end=$(date +%s.%N)
build/test/postprocess/symbolize_fixture.exe "$tmp/small.json"
"$cli" "$tmp/small.json" -o "$tmp/small" --program small.c --no-report
echo "raw profile: $stacks stacks x $depth frames; many.svg $(( $(stat -c %s "$tmp/many.svg") / 1000000 )) MB;" \
     "post-processing $(python3 -c "print(f'{$end - $start:.2f}')") s"
cat > "$tmp/measure.mjs" <<'JS'
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
const require = createRequire(process.env.CONSUMERS + '/package.json');
const { chromium } = require('playwright-core');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu'] });
async function measure(file) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const t0 = performance.now();
  await page.goto(pathToFileURL(file).href, { timeout: 600000 });
  await page.waitForFunction(() => document.documentElement.__flame !== undefined, null, { timeout: 600000 });
  const load = performance.now() - t0;
  const t = await page.evaluate(() => {
    const f = document.documentElement.__flame, out = {};
    let t0 = performance.now(); f.zoom(f.count - 1); out.zoom = performance.now() - t0;
    t0 = performance.now(); f.zoom(null); out.reset = performance.now() - t0;
    t0 = performance.now(); f.find('a'); out.search = performance.now() - t0;
    out.frames = f.count;
    return out;
  });
  await page.close();
  return { load, ...t, errors };
}
const small = await measure(process.env.SMALL);
const many = await measure(process.env.MANY);
await browser.close();
for (const [name, m] of [['small (peer)', small], ['200k frames', many]])
  console.log(`${name}: ${m.frames} frames drawn, load ${m.load.toFixed(0)} ms, zoom ${m.zoom.toFixed(0)} ms, ` +
              `reset ${m.reset.toFixed(0)} ms, search ${m.search.toFixed(0)} ms, console errors ${m.errors.length}`);
console.log(`ratio load 200k / small: ${(many.load / small.load).toFixed(1)}x; ` +
            `interactive (zoom, reset and search each under 1 s): ${many.zoom < 1000 && many.reset < 1000 && many.search < 1000 ? 'ok' : 'MISSED'}`);
JS
CONSUMERS=$root/test/consumers SMALL=$tmp/small.svg MANY=$tmp/many.svg node "$tmp/measure.mjs"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
