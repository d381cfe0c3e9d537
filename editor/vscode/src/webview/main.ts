/**
 * The flame-graph page inside the webview (docs/spec/profiler.md §(j) "Panel", "Flame graph").
 * Receives `{type: "profile", title, summary, speedscope}` by postMessage, validates both
 * documents, and draws the selected fiber's Left Heavy or Time Order layout on a canvas.
 * Posts `{type: "ready"}` once listening and `{type: "select", file, line}` on click-to-source.
 */
import { framePalette } from "../model/colors";
import { elideMiddle } from "../model/elide";
import {
  buildLayout,
  firstInRow,
  frameStats,
  hitTest,
  matchFrames,
  searchShare,
  type FlameLayout,
  type FrameStats,
  type ViewKind,
} from "../model/flame";
import { formatMs, formatPct, headerText, locationText, sampledFibers, tooltipLocation } from "../model/format";
import type { ProfileSummary, SpeedscopeDoc } from "../model/types";
import { validateSpeedscope, validateSummary } from "../model/validate";
import { DRAG_THRESHOLD_PX, FULL_VIEW, clampView, panBy, zoomAt, zoomTo, type View } from "../model/viewport";

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const ROW = 18;
const FONT_PX = 11;
const MIN_RECT_PX = 0.3;
const DIM_ALPHA = 0.22;
const LABEL_PAD = 3;
/** Rectangles at least this wide get a label (room for the padding and an ellipsis). */
const LABEL_MIN_PX = 2 * LABEL_PAD + 6;

const vscode = acquireVsCodeApi();

function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el;
}

const header = $("header");
const errorBox = $("error");
const chips = $("chips");
const fiberSelect = $("fiber") as HTMLSelectElement;
const search = $("search") as HTMLInputElement;
const matches = $("matches");
const resetButton = $("reset");
const lhButton = $("view-left-heavy");
const toButton = $("view-time-order");
const flame = $("flame");
const canvas = $("canvas") as HTMLCanvasElement;
const spacer = $("spacer");
const empty = $("empty");
const tooltip = $("tooltip");
const hotBody = ($("hot") as HTMLTableElement).tBodies[0];
const ctx = canvas.getContext("2d", { alpha: false }) as CanvasRenderingContext2D;

/** Everything derived from one loaded profile. */
interface Loaded {
  summary: ProfileSummary;
  doc: SpeedscopeDoc;
  /** Distinct frame colours (#rrggbb) and each frame's index into them. */
  palette: string[];
  paletteIndex: Uint16Array;
  /** Per profile, computed on first use. */
  stats: (FrameStats | undefined)[];
  /** Per profile and view kind, computed once. */
  layouts: Map<string, FlameLayout>;
}

let loaded: Loaded | null = null;
let profileIndex = 0;
let viewKind: ViewKind = "left-heavy";
let view: View = FULL_VIEW;
let layout: FlameLayout | null = null;
let query = "";
let mask: Uint8Array | null = null;
let hovered = -1;
let drawPending = false;
/** Durations of the last draws in ms (for the benchmark and tests). */
const drawTimes: number[] = [];

// ---------------------------------------------------------------- loading

function showError(message: string): void {
  errorBox.textContent = message;
}

/** Milliseconds spent in the phases of the last load (for the benchmark). */
const loadTimes: Record<string, number> = {};

function load(summaryRaw: unknown, speedscopeRaw: unknown): void {
  const t0 = performance.now();
  let summary: ProfileSummary;
  let doc: SpeedscopeDoc;
  try {
    summary = validateSummary(summaryRaw);
    doc = validateSpeedscope(speedscopeRaw);
  } catch (e) {
    loaded = null;
    layout = null;
    header.textContent = "Profile could not be shown";
    showError(e instanceof Error ? e.message : String(e));
    scheduleDraw();
    return;
  }
  showError("");
  const t1 = performance.now();
  loadTimes.validate = t1 - t0;
  const { palette, index } = framePalette(doc.frames);
  loadTimes.colors = performance.now() - t1;
  loaded = { summary, doc, palette, paletteIndex: index, stats: [], layouts: new Map() };
  header.textContent = headerText(summary);
  buildChips();
  buildFiberSelect();
  buildHotTable();
  selectProfile(firstProfile(summary, doc));
}

/** The fiber shown first: the profile whose chip has the most on-CPU samples. */
function firstProfile(summary: ProfileSummary, doc: SpeedscopeDoc): number {
  const fibers = chipFibers(summary, doc);
  if (fibers) {
    let best = 0;
    for (let i = 1; i < fibers.length; i++) if (fibers[i].oncpuSamples > fibers[best].oncpuSamples) best = i;
    return best;
  }
  return doc.activeProfileIndex;
}

/**
 * Summary fibers with samples, index-aligned with the profiles (chip i ↔ profile i); null when
 * the two documents disagree about how many fibers have samples.
 */
function chipFibers(summary: ProfileSummary, doc: SpeedscopeDoc): ProfileSummary["fibers"] | null {
  const f = sampledFibers(summary.fibers);
  return f.length === doc.profiles.length ? f : null;
}

/** `1 sample`, `2 samples`. */
function countText(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function buildChips(): void {
  if (!loaded) return;
  chips.replaceChildren();
  const fibers = chipFibers(loaded.summary, loaded.doc);
  loaded.doc.profiles.forEach((p, i) => {
    const chip = document.createElement("button");
    chip.className = "chip";
    chip.dataset.index = String(i);
    const f = fibers ? fibers[i] : null;
    // chips only for fibers with samples (docs/spec/profiler.md §(j)); an empty profile gets none
    if (!f && p.samples.length === 0) return;
    const label = f ? f.label : p.name;
    const detail = f
      ? f.oncpuSamples > 0
        ? `${countText(f.samples, "sample")} · ${Math.round((100 * f.oncpuSamples) / f.samples)}% on-CPU`
        : `${countText(f.samples, "sample")} · waiting`
      : countText(p.samples.length, "sample");
    chip.textContent = `${label} · ${detail}`;
    chip.addEventListener("click", () => selectProfile(i));
    chips.appendChild(chip);
  });
}

function buildFiberSelect(): void {
  if (!loaded) return;
  fiberSelect.replaceChildren();
  loaded.doc.profiles.forEach((p, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = p.name;
    fiberSelect.appendChild(o);
  });
}

function buildHotTable(): void {
  if (!loaded) return;
  hotBody.replaceChildren();
  for (const h of loaded.summary.hotFunctions) {
    const tr = document.createElement("tr");
    const cells = [`${h.selfPct.toFixed(1)}%`, `${h.totalPct.toFixed(1)}%`, h.name, locationText(h.file, h.line)];
    cells.forEach((text, i) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (i < 2) td.className = "num";
      tr.appendChild(td);
    });
    if (h.file !== "") {
      tr.className = "link";
      tr.title = tooltipLocation(h.file, h.line);
      tr.addEventListener("click", () => vscode.postMessage({ type: "select", file: h.file, line: h.line }));
    }
    hotBody.appendChild(tr);
  }
}

// ---------------------------------------------------------------- state changes

function currentStats(): FrameStats | null {
  if (!loaded) return null;
  let s = loaded.stats[profileIndex];
  if (!s) {
    s = frameStats(loaded.doc.profiles[profileIndex], loaded.doc.frames.length);
    loaded.stats[profileIndex] = s;
  }
  return s;
}

function ensureLayout(): void {
  if (!loaded) {
    layout = null;
    return;
  }
  const key = `${profileIndex}:${viewKind}`;
  let l = loaded.layouts.get(key);
  if (!l) {
    const t0 = performance.now();
    l = buildLayout(viewKind, loaded.doc.profiles[profileIndex], loaded.doc.frames.length);
    loaded.layouts.set(key, l);
    loadTimes[`layout-${viewKind}`] = performance.now() - t0;
  }
  layout = l;
  fitHeight();
  empty.textContent = l.totalWeight > 0 && l.count > 0 ? "" : "No samples in this fiber";
}

/** Makes the graph as tall as its rows (plus a spare one), between 160 px and 65% of the window. */
function fitHeight(): void {
  const rows = layout ? layout.rows : 0;
  const want = Math.min(Math.max(160, (rows + 1) * ROW + 2), Math.max(160, Math.floor(window.innerHeight * 0.65)));
  flame.style.height = `${want}px`;
  resizeCanvas();
  spacer.style.height = `${Math.max(0, rows * ROW - canvasCssHeight())}px`;
}

/** Switches fiber: resets the zoom and re-applies the search (§(j) "Fiber filter"). */
function selectProfile(i: number): void {
  if (!loaded) return;
  profileIndex = Math.max(0, Math.min(loaded.doc.profiles.length - 1, i));
  fiberSelect.value = String(profileIndex);
  for (const c of Array.from(chips.children)) {
    c.classList.toggle("active", (c as HTMLElement).dataset.index === String(profileIndex));
  }
  view = FULL_VIEW;
  hovered = -1;
  hideTooltip();
  flame.scrollTop = 0;
  ensureLayout();
  applySearch();
}

function setViewKind(k: ViewKind): void {
  viewKind = k;
  lhButton.setAttribute("aria-pressed", String(k === "left-heavy"));
  toButton.setAttribute("aria-pressed", String(k === "time-order"));
  view = FULL_VIEW;
  hovered = -1;
  ensureLayout();
  scheduleDraw();
}

function applySearch(): void {
  query = search.value;
  if (!loaded || query === "") {
    mask = null;
    matches.textContent = "";
  } else {
    mask = matchFrames(loaded.doc.frames, query);
    const r = searchShare(loaded.doc.profiles[profileIndex], mask);
    matches.textContent = `${r.frames} matching ${r.frames === 1 ? "frame" : "frames"} · ${formatPct(r.share)} of ${
      loaded.doc.profiles[profileIndex].name
    }`;
  }
  scheduleDraw();
}

function resetZoom(): void {
  view = FULL_VIEW;
  scheduleDraw();
}

// ---------------------------------------------------------------- drawing

let cssWidth = 0;
let cssHeight = 0;

function canvasCssHeight(): number {
  return Math.max(ROW, flame.clientHeight);
}

function resizeCanvas(): void {
  const dpr = window.devicePixelRatio || 1;
  cssWidth = Math.max(1, flame.clientWidth);
  cssHeight = canvasCssHeight();
  canvas.style.height = `${cssHeight}px`;
  canvas.width = Math.round(cssWidth * dpr);
  canvas.height = Math.round(cssHeight * dpr);
  if (layout) spacer.style.height = `${Math.max(0, layout.rows * ROW - cssHeight)}px`;
}

function scheduleDraw(): void {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    draw();
  });
}

const charWidths = new Map<number, number>();
let fontFamily = "";

/** Width of a string as the sum of cached per-code-unit widths (measureText once per character). */
function measure(s: string): number {
  let w = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let cw = charWidths.get(c);
    if (cw === undefined) {
      cw = ctx.measureText(s[i]).width;
      charWidths.set(c, cw);
    }
    w += cw;
  }
  return w;
}

function themeColor(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

let highlight = "#ffffff";

function readTheme(): void {
  backgroundRgb = cssToRgb(themeColor("--vscode-editor-background", "#1e1e1e"));
  highlight = themeColor("--vscode-focusBorder", "#ffffff");
  const ff = themeColor("--vscode-font-family", "system-ui, sans-serif");
  if (ff !== fontFamily) {
    fontFamily = ff;
    charWidths.clear();
  }
}

/** A CSS colour as [r, g, b] (0..255), resolved by the browser; opaque black if unparsable. */
function cssToRgb(color: string): [number, number, number] {
  const c = document.createElement("canvas");
  c.width = c.height = 1;
  const x = c.getContext("2d") as CanvasRenderingContext2D;
  x.fillStyle = "#000000";
  x.fillStyle = color;
  x.fillRect(0, 0, 1, 1);
  const d = x.getImageData(0, 0, 1, 1).data;
  return [d[0], d[1], d[2]];
}

/** A colour packed as one RGBA pixel of an ImageData buffer (little-endian: 0xAABBGGRR). */
function packRgb(r: number, g: number, b: number): number {
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

let backgroundRgb: [number, number, number] = [30, 30, 30];
/** Per palette entry p: packed[2p] the colour, packed[2p + 1] the colour at alpha 0.22 over the background. */
let packedPalette = new Uint32Array(0);
let packedFor: { palette: string[]; bg: string } | null = null;

function ensurePackedPalette(palette: string[]): void {
  const key = backgroundRgb.join(",");
  if (packedFor && packedFor.palette === palette && packedFor.bg === key) return;
  packedPalette = new Uint32Array(2 * palette.length);
  palette.forEach((hex, i) => {
    const r = parseInt(hex.slice(1, 3), 16);
    const g = parseInt(hex.slice(3, 5), 16);
    const b = parseInt(hex.slice(5, 7), 16);
    const [R, G, B] = backgroundRgb;
    const dim = (c: number, bg: number): number => Math.round(DIM_ALPHA * c + (1 - DIM_ALPHA) * bg);
    packedPalette[2 * i] = packRgb(r, g, b);
    packedPalette[2 * i + 1] = packRgb(dim(r, R), dim(g, G), dim(b, B));
  });
  packedFor = { palette, bg: key };
}

let image: ImageData | null = null;
let pixels = new Uint32Array(0);
let scanline = new Uint32Array(0);

/**
 * Draws the rows in the vertical viewport; within each row starts at the first rectangle that
 * reaches the view (binary search), stops past its end, skips rectangles under 0.3 px.
 * Rectangles are painted into a pixel buffer, one scanline per row copied down the row's
 * height, then put on the canvas at once: the cost is bounded by the visible rectangles plus
 * the canvas area, however many tiny frames there are. Edges snap to device pixels and a
 * device-pixel column of a row is painted once (a sliver falling in a column its left
 * neighbour already filled is not painted again). Labels and the hover outline go on top.
 */
function draw(): void {
  const t0 = performance.now();
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(cssWidth * dpr) || cssHeight !== canvasCssHeight()) resizeCanvas();
  const W = canvas.width;
  const H = canvas.height;
  if (!image || image.width !== W || image.height !== H) {
    image = ctx.createImageData(Math.max(1, W), Math.max(1, H));
    pixels = new Uint32Array(image.data.buffer);
    scanline = new Uint32Array(Math.max(1, W));
  }
  const bgPacked = packRgb(backgroundRgb[0], backgroundRgb[1], backgroundRgb[2]);
  pixels.fill(bgPacked);
  const l = layout;
  if (!loaded || !l || l.totalWeight <= 0) {
    ctx.putImageData(image, 0, 0);
    recordDraw(t0);
    return;
  }
  const { palette, paletteIndex } = loaded;
  ensurePackedPalette(palette);
  const frames = loaded.doc.frames;
  const span = view.end - view.start;
  const scale = (cssWidth / span) * dpr; // device pixels per unit of x
  const top = flame.scrollTop;
  const firstRow = Math.max(0, Math.floor(top / ROW));
  const lastRow = Math.min(l.rows - 1, Math.floor((top + cssHeight) / ROW));
  const m = mask;
  const minRect = MIN_RECT_PX * dpr;
  const labelMin = LABEL_MIN_PX * dpr;
  const gap = Math.max(1, Math.round(0.5 * dpr));
  const labels: number[] = [];
  for (let d = firstRow; d <= lastRow; d++) {
    const end = l.rowStart[d + 1];
    let filledTo = 0;
    let any = false;
    for (let k = firstInRow(l, d, view.start); k < end; k++) {
      const x0 = l.x0[k];
      if (x0 >= view.end) break;
      const w = (l.x1[k] - x0) * scale;
      if (w < minRect) continue;
      const left = (x0 - view.start) * scale;
      let a = Math.round(left);
      let b = Math.round(left + w);
      if (b - a < 1) b = a + 1;
      if (a < filledTo) a = filledTo;
      if (b > W) b = W;
      if (b <= a) continue;
      if (!any) {
        scanline.fill(bgPacked);
        any = true;
      }
      filledTo = b;
      const f = l.frame[k];
      const color = packedPalette[2 * paletteIndex[f] + (m !== null && m[f] === 0 ? 1 : 0)];
      const stop = b - a >= 3 ? b - gap : b;
      if (stop - a < 16) for (let x = a; x < stop; x++) scanline[x] = color;
      else scanline.fill(color, a, stop);
      if (w >= labelMin) labels.push(k);
    }
    if (!any) continue;
    // Copy the scanline down the row, leaving its last device pixel(s) as the row gap.
    const y0 = Math.max(0, Math.round((d * ROW - top) * dpr));
    const y1 = Math.min(H, Math.round((d * ROW - top + ROW - 1) * dpr));
    for (let y = y0; y < y1; y++) pixels.set(scanline, y * W);
  }
  ctx.putImageData(image, 0, 0);
  // Labels.
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = `${FONT_PX}px ${fontFamily}`;
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#000000";
  let alpha = -1;
  const cssScale = scale / dpr;
  for (const k of labels) {
    const px0 = Math.max(0, (l.x0[k] - view.start) * cssScale);
    const px1 = Math.min(cssWidth, (l.x1[k] - view.start) * cssScale);
    const text = elideMiddle(frames[l.frame[k]].name, px1 - px0 - 2 * LABEL_PAD, measure);
    if (text === "") continue;
    const a = m !== null && m[l.frame[k]] === 0 ? DIM_ALPHA : 1;
    if (a !== alpha) ctx.globalAlpha = alpha = a;
    ctx.fillText(text, px0 + LABEL_PAD, l.depth[k] * ROW - top + (ROW - 1) / 2);
  }
  ctx.globalAlpha = 1;
  if (hovered >= 0 && hovered < l.count) {
    const px0 = (l.x0[hovered] - view.start) * cssScale;
    const w = (l.x1[hovered] - l.x0[hovered]) * cssScale;
    ctx.strokeStyle = highlight;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(Math.max(-1, px0) + 0.75, l.depth[hovered] * ROW - top + 0.75, Math.min(w, cssWidth + 2) - 1.5, ROW - 2.5);
  }
  recordDraw(t0);
}

/** When set (benchmark), each draw is followed by a 1-pixel read so its time includes rasterising. */
let flushAfterDraw = false;

function recordDraw(t0: number): void {
  if (flushAfterDraw) ctx.getImageData(0, 0, 1, 1);
  drawTimes.push(performance.now() - t0);
  if (drawTimes.length > 1000) drawTimes.splice(0, drawTimes.length - 1000);
}

// ---------------------------------------------------------------- pointer interaction

function rectAt(clientX: number, clientY: number): number {
  if (!layout) return -1;
  const r = canvas.getBoundingClientRect();
  const x = view.start + ((clientX - r.left) / cssWidth) * (view.end - view.start);
  const row = Math.floor((clientY - r.top + flame.scrollTop) / ROW);
  const k = hitTest(layout, x, row);
  if (k < 0) return -1;
  // Rectangles too narrow to be drawn cannot be hovered either.
  if ((layout.x1[k] - layout.x0[k]) * (cssWidth / (view.end - view.start)) < MIN_RECT_PX) return -1;
  return k;
}

function hideTooltip(): void {
  tooltip.style.display = "none";
}

function showTooltip(k: number, clientX: number, clientY: number): void {
  const stats = currentStats();
  if (!loaded || !layout || !stats) return;
  const f = layout.frame[k];
  const frame = loaded.doc.frames[f];
  const tw = stats.totalWeight > 0 ? stats.totalWeight : 1;
  tooltip.replaceChildren();
  const line = (cls: string, text: string): void => {
    const div = document.createElement("div");
    div.className = cls;
    div.textContent = text;
    tooltip.appendChild(div);
  };
  line("name", frame.name);
  line("loc", tooltipLocation(frame.file, frame.line));
  line("", `self ${formatMs(stats.self[f])} (${formatPct(stats.self[f] / tw)}) · total ${formatMs(stats.total[f])} (${formatPct(stats.total[f] / tw)})`);
  line("", `${stats.samples[f]} ${stats.samples[f] === 1 ? "sample" : "samples"}`);
  tooltip.style.display = "block";
  const pad = 12;
  const w = tooltip.offsetWidth;
  const h = tooltip.offsetHeight;
  let x = clientX + pad;
  let y = clientY + pad;
  if (x + w > window.innerWidth) x = Math.max(0, clientX - pad - w);
  if (y + h > window.innerHeight) y = Math.max(0, clientY - pad - h);
  tooltip.style.left = `${x}px`;
  tooltip.style.top = `${y}px`;
}

let dragStart: { x: number; y: number; view: View; scrollTop: number } | null = null;
let dragging = false;

canvas.addEventListener("wheel", (e) => {
  e.preventDefault();
  const r = canvas.getBoundingClientRect();
  const unit = e.deltaMode === 1 ? ROW : e.deltaMode === 2 ? cssHeight : 1;
  const cursor = Math.min(1, Math.max(0, (e.clientX - r.left) / cssWidth));
  view = zoomAt(view, cursor, e.deltaY * unit);
  scheduleDraw();
}, { passive: false });

canvas.addEventListener("mousedown", (e) => {
  if (e.button !== 0) return;
  dragStart = { x: e.clientX, y: e.clientY, view, scrollTop: flame.scrollTop };
  dragging = false;
});

window.addEventListener("mousemove", (e) => {
  if (dragStart) {
    const dx = e.clientX - dragStart.x;
    const dy = e.clientY - dragStart.y;
    if (!dragging && Math.hypot(dx, dy) > DRAG_THRESHOLD_PX) {
      dragging = true;
      canvas.style.cursor = "grabbing";
      hideTooltip();
    }
    if (dragging) {
      view = panBy(dragStart.view, dx / cssWidth);
      flame.scrollTop = dragStart.scrollTop - dy;
      scheduleDraw();
      return;
    }
  }
  if (e.target !== canvas) {
    if (hovered !== -1) {
      hovered = -1;
      hideTooltip();
      scheduleDraw();
    }
    return;
  }
  const k = rectAt(e.clientX, e.clientY);
  if (k !== hovered) {
    hovered = k;
    scheduleDraw();
  }
  if (k >= 0) showTooltip(k, e.clientX, e.clientY);
  else hideTooltip();
});

window.addEventListener("mouseup", (e) => {
  if (!dragStart) return;
  const wasDrag = dragging;
  dragStart = null;
  dragging = false;
  canvas.style.cursor = "default";
  if (wasDrag || e.target !== canvas || e.button !== 0 || e.detail > 1) return;
  const k = rectAt(e.clientX, e.clientY);
  if (k < 0 || !loaded || !layout) return;
  const frame = loaded.doc.frames[layout.frame[k]];
  if (frame.file !== "") vscode.postMessage({ type: "select", file: frame.file, line: frame.line });
});

canvas.addEventListener("mouseleave", () => {
  if (dragStart) return;
  hovered = -1;
  hideTooltip();
  scheduleDraw();
});

canvas.addEventListener("dblclick", (e) => {
  const k = rectAt(e.clientX, e.clientY);
  if (k < 0 || !layout) return;
  view = zoomTo(layout.x0[k], layout.x1[k]);
  scheduleDraw();
});

flame.addEventListener("scroll", () => scheduleDraw());

window.addEventListener("keydown", (e) => {
  if (e.key === "Escape") {
    if (search.value !== "") {
      search.value = "";
      applySearch();
    }
    return;
  }
  if (e.key === "0" && document.activeElement !== search && !e.ctrlKey && !e.metaKey && !e.altKey) resetZoom();
});

search.addEventListener("input", () => applySearch());
resetButton.addEventListener("click", () => resetZoom());
lhButton.addEventListener("click", () => setViewKind("left-heavy"));
toButton.addEventListener("click", () => setViewKind("time-order"));
fiberSelect.addEventListener("change", () => selectProfile(Number(fiberSelect.value)));

window.addEventListener("resize", () => {
  fitHeight();
  scheduleDraw();
});

new ResizeObserver(() => {
  resizeCanvas();
  scheduleDraw();
}).observe(flame);

// Theme changes re-style the body's class list in VS Code.
new MutationObserver(() => {
  readTheme();
  scheduleDraw();
}).observe(document.body, { attributes: true, attributeFilter: ["class", "style"] });

window.addEventListener("message", (e: MessageEvent) => {
  const m = e.data as { type?: unknown; summary?: unknown; speedscope?: unknown; title?: unknown };
  if (!m || m.type !== "profile") return;
  load(m.summary, m.speedscope);
});

/** Read-only introspection for the browser tests and the benchmark. */
(window as unknown as { ospreyProfiler: unknown }).ospreyProfiler = {
  view: (): View => ({ ...view }),
  viewKind: (): ViewKind => viewKind,
  profileIndex: (): number => profileIndex,
  profileName: (): string => (loaded ? loaded.doc.profiles[profileIndex].name : ""),
  rows: (): number => (layout ? layout.rows : 0),
  rectCount: (): number => (layout ? layout.count : 0),
  /** The first rectangle of `frameName` on the current layout, in client coordinates of its centre. */
  locate(frameName: string): { x: number; y: number; file: string; line: number } | null {
    if (!loaded || !layout) return null;
    const r = canvas.getBoundingClientRect();
    const scale = cssWidth / (view.end - view.start);
    for (let k = 0; k < layout.count; k++) {
      const frame = loaded.doc.frames[layout.frame[k]];
      if (frame.name !== frameName) continue;
      const a = Math.max(view.start, layout.x0[k]);
      const b = Math.min(view.end, layout.x1[k]);
      if (b <= a) continue;
      return {
        x: r.left + ((a + b) / 2 - view.start) * scale,
        y: r.top + layout.depth[k] * ROW - flame.scrollTop + ROW / 2,
        file: frame.file,
        line: frame.line,
      };
    }
    return null;
  },
  drawTimes: (): number[] => drawTimes.slice(),
  loadTimes: (): Record<string, number> => ({ ...loadTimes }),
  setFlushAfterDraw: (on: boolean): void => {
    flushAfterDraw = on;
  },
  clearDrawTimes: (): void => {
    drawTimes.length = 0;
  },
  /** Draws synchronously and returns the time it took in ms. */
  drawNow: (): number => {
    draw();
    return drawTimes[drawTimes.length - 1];
  },
  setView: (start: number, end: number): void => {
    view = clampView(start, end - start);
    scheduleDraw();
  },
};

readTheme();
resizeCanvas();
scheduleDraw();
vscode.postMessage({ type: "ready" });
