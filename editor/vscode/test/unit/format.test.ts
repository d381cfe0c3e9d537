import { strict as assert } from "node:assert";
import { test } from "node:test";
import { ELLIPSIS, elideMiddle, elideMiddleFit, elideMiddleFitUnits } from "../../src/model/elide";
import {
  clampLine0,
  escapeHtml,
  formatSeconds,
  formatWeight,
  headerText,
  locationText,
  parseSelectMessage,
  sampledFibers,
  tooltipLocation,
} from "../../src/model/format";
import { validateSummary } from "../../src/model/validate";
import { FULL_VIEW, MIN_SPAN, clampView, panBy, zoomAt, zoomTo } from "../../src/model/viewport";
import { contentSecurityPolicy, makeNonce, renderPage } from "../../src/webview/page";
import { clone, readFixture } from "../support/paths";

const SUM = readFixture("demo.profile.json") as Record<string, any>;

test("header text", () => {
  assert.equal(headerText(validateSummary(SUM)), "5 samples · 1000Hz · 0.0s wall · 0.0s CPU · 2 fibers");
  const d = clone(SUM);
  d.fibers = [d.fibers[0]];
  d.droppedSamples = 12;
  d.wallSeconds = 123.456;
  d.cpuSeconds = 99.96;
  assert.equal(headerText(validateSummary(d)), "5 samples · 1000Hz · 123s wall · 100.0s CPU · 1 fiber · 12 dropped");
  assert.equal(formatSeconds(99.94), "99.9");
  assert.equal(formatSeconds(100), "100");
});

test("chips: zero-sample fibers are skipped without shifting the others", () => {
  const fibers = [
    { label: "main", samples: 3 },
    { label: "effect-1", samples: 0 },
    { label: "fiber-2", samples: 2 },
  ];
  assert.deepEqual(sampledFibers(fibers).map((f) => f.label), ["main", "fiber-2"]);
});

test("locations", () => {
  assert.equal(locationText("/w/demo.osp", 7), "demo.osp:7");
  assert.equal(locationText("C:\\w\\demo.osp", 7), "demo.osp:7");
  assert.equal(locationText("/w/demo.osp", 0), "demo.osp");
  assert.equal(locationText("", 0), "—");
  assert.equal(tooltipLocation("/w/demo.osp", 7), "/w/demo.osp:7");
  assert.equal(tooltipLocation("", 0), "(runtime)");
});

test("weights in a profile's unit", () => {
  assert.equal(formatWeight(0.0123, "seconds"), "12.3 ms");
  assert.equal(formatWeight(12.3, "milliseconds"), "12.3 ms");
  assert.equal(formatWeight(12300, "microseconds"), "12.3 ms");
  assert.equal(formatWeight(1.23e7, "nanoseconds"), "12.3 ms");
  assert.equal(formatWeight(42, "none"), "42");
  assert.equal(formatWeight(1 / 3, "none"), "0.333333");
  assert.equal(formatWeight(2048, "bytes"), "2048 bytes");
  assert.equal(formatWeight(5, "constructor"), "5", "an unknown unit is not a key of an object's prototype");
});

test("escaping", () => {
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;");
});

test("select messages are checked", () => {
  assert.deepEqual(parseSelectMessage({ type: "select", file: "/w/a.osp", line: 3 }), { file: "/w/a.osp", line: 3 });
  assert.equal(parseSelectMessage({ type: "select", file: "", line: 3 }), null);
  assert.equal(parseSelectMessage({ type: "select", file: 3, line: 3 }), null);
  assert.equal(parseSelectMessage({ type: "select", file: "/w/a.osp", line: Infinity }), null);
  assert.equal(parseSelectMessage({ type: "select", file: "/w/a.osp", line: "3" }), null);
  assert.equal(parseSelectMessage({ type: "open", file: "/w/a.osp", line: 3 }), null);
  assert.equal(parseSelectMessage(null), null);
  assert.equal(clampLine0(7, 10), 6);
  assert.equal(clampLine0(0, 10), 0);
  assert.equal(clampLine0(-5, 10), 0);
  assert.equal(clampLine0(99, 10), 9);
  assert.equal(clampLine0(3, 0), 0);
});

test("middle elision", () => {
  const mono = (s: string): number => s.length * 6;
  assert.equal(elideMiddle("crunch", 100, mono), "crunch");
  assert.equal(elideMiddle("abcdefghij", 36, mono), "abc…ij");
  assert.equal(elideMiddle("abcdefghij", 6, mono), ELLIPSIS);
  assert.equal(elideMiddle("abcdefghij", 5, mono), "");
  // Surrogate pairs are never split: 4 code points fit, so "ab" + "…" + "d".
  const cp = (t: string): number => Array.from(t).length * 6;
  assert.equal(elideMiddle("ab\u{1f600}\u{1f600}cd", 24, cp), "ab" + ELLIPSIS + "d");
  assert.equal(elideMiddle("\u{1f600}\u{1f600}\u{1f600}\u{1f600}", 18, cp), "\u{1f600}" + ELLIPSIS + "\u{1f600}");
});

test("middle elision: the range of widths a fitted label holds for", () => {
  // A proportional font: per-character widths between 3 and 9, summed in string order as the
  // page's measure() does.
  const widths = new Map<string, number>();
  let seed = 7;
  const charWidth = (c: string): number => {
    let w = widths.get(c);
    if (w === undefined) {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      w = 3 + (seed / 2147483648) * 6;
      widths.set(c, w);
    }
    return w;
  };
  // Per UTF-16 code unit, as the page measures (a surrogate half has a width of its own).
  const measure = (s: string): number => {
    let w = 0;
    for (let i = 0; i < s.length; i++) w += charWidth(s[i]);
    return w;
  };
  // Reference: the longest head…tail that fits, by trying every length.
  const brute = (text: string, room: number): string => {
    if (measure(text) <= room) return text;
    const cps = Array.from(text);
    let best = measure(ELLIPSIS) <= room ? ELLIPSIS : "";
    for (let k = 1; k < cps.length; k++) {
      const t = cps.slice(0, Math.ceil(k / 2)).join("") + ELLIPSIS + cps.slice(cps.length - Math.floor(k / 2)).join("");
      if (measure(t) <= room) best = t;
    }
    return best;
  };
  for (const text of ["fn_123456", "osprey.runtime.sched.park", "ab\u{1f600}\u{1f600}cd", "x"]) {
    for (let room = -2; room <= measure(text) + 4; room += 0.37) {
      const fit = elideMiddleFit(text, room, measure);
      assert.equal(fit.text, brute(text, room), `${text} in ${room}`);
      assert.equal(fit.text, elideMiddle(text, room, measure));
      // Summing code-unit widths directly gives the same answer and range, bit for bit.
      assert.deepEqual(elideMiddleFitUnits(text, room, (c) => charWidth(String.fromCharCode(c))), fit);
      assert.ok(fit.min <= room && room < fit.max, `${room} in [${fit.min}, ${fit.max})`);
      // The answer holds over the whole range and changes at its ends.
      if (Number.isFinite(fit.min)) assert.equal(brute(text, fit.min), fit.text);
      if (Number.isFinite(fit.max)) {
        assert.equal(brute(text, fit.max - 1e-9), fit.text);
        assert.notEqual(brute(text, fit.max), fit.text);
      }
    }
  }
});

test("view: zoom about the cursor, pan, clamp, minimum span", () => {
  const z = zoomAt(FULL_VIEW, 0.25, -385);
  const span = Math.pow(1.0018, -385);
  assert.ok(Math.abs(z.end - z.start - span) < 1e-12);
  // The point under the cursor stays put.
  assert.ok(Math.abs(z.start + 0.25 * (z.end - z.start) - 0.25) < 1e-12);
  assert.deepEqual(zoomAt(FULL_VIEW, 0.5, 500), FULL_VIEW, "never wider than [0, 1]");
  const tiny = zoomAt(FULL_VIEW, 0.9, -1e6);
  assert.ok(Math.abs(tiny.end - tiny.start - MIN_SPAN) < 1e-15);
  const p = panBy({ start: 0.4, end: 0.6 }, 0.5);
  assert.ok(Math.abs(p.start - 0.3) < 1e-12 && Math.abs(p.end - 0.5) < 1e-12);
  assert.deepEqual(panBy({ start: 0.1, end: 0.3 }, 5), { start: 0, end: 0.19999999999999998 });
  const right = panBy({ start: 0.7, end: 0.9 }, -5);
  assert.ok(Math.abs(right.end - 1) < 1e-12 && Math.abs(right.start - 0.8) < 1e-12);
  assert.deepEqual(zoomTo(0.25, 0.5), { start: 0.25, end: 0.5 });
  const narrow = zoomTo(0.5, 0.5);
  assert.ok(Math.abs(narrow.end - narrow.start - MIN_SPAN) < 1e-15);
  assert.deepEqual(clampView(NaN, NaN), { start: 0, end: 1 });
});

test("page: strict CSP with nonces, no inline data, escaped title", () => {
  const nonce = makeNonce((n) => new Uint8Array(n).map((_, i) => i * 7));
  assert.match(nonce, /^[A-Za-z0-9]{32}$/);
  const html = renderPage({ nonce, scriptUri: "https://x/dist/webview.js?a=1&b=2", title: "Profile: <b>&x.osp" });
  assert.ok(html.includes(`content="${contentSecurityPolicy(nonce).replace(/'/g, "&#39;")}"`));
  assert.equal(contentSecurityPolicy(nonce), `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'`);
  assert.ok(html.includes(`<script nonce="${nonce}" src="https://x/dist/webview.js?a=1&#38;b=2"></script>`));
  assert.ok(html.includes(`<style nonce="${nonce}">`));
  assert.ok(html.includes("<title>Profile: &#60;b&#62;&#38;x.osp</title>"));
  assert.equal((html.match(/<script/g) || []).length, 1);
  assert.ok(!/\sstyle=/.test(html), "no inline style attributes (blocked by the CSP)");
});
