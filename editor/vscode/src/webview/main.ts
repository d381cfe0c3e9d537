/**
 * The flame-graph page inside the webview (docs/spec/profiler.md §(j) "Panel", "Flame graph",
 * §(l.10)). Receives `{type: "profile", title, summary, speedscope}` (summary may be null for a
 * speedscope file without its `<stem>.profile.json`), `{type: "diff", title, text}` (a
 * `.diff.folded` file) or `{type: "error", message}` by postMessage, validates what it got, and
 * draws the selected samples (one fiber or all fibers, on-CPU only or all) in the chosen view:
 * Left Heavy, Time Order, Inverted or Sandwich; a diff file gets the differential view.
 * Posts `{type: "ready"}` once listening and `{type: "select", file, line}` on click-to-source.
 */
import { framePalette } from "../model/colors";
import { diffChanges, diffLayout, diffRgb, maxDelta, parseDiffFolded, type DiffDoc } from "../model/diff";
import { elideMiddleFitUnits } from "../model/elide";
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
import { formatPct, formatWeight, headerText, locationText, sampledFibers, tooltipLocation } from "../model/format";
import type { FiberSummary, Frame, ProfileSummary, SampledProfile, SpeedscopeDoc } from "../model/types";
import { validateSpeedscope, validateSummary } from "../model/validate";
import {
  functionTable,
  invertedLayout,
  onCpuCounts,
  profileStates,
  sandwichLayout,
  selectSamples,
  type FunctionTable,
  type ProfileStates,
} from "../model/views";
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
/** The Sandwich function selector lists this many functions (plus the focused one). */
const FUNCTION_CHOICES = 300;
/** Distinct colour steps on each side of the diff scale. */
const DIFF_STEPS = 32;

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
const fiberLabel = $("fiber-label");
const onCpuBox = $("oncpu") as HTMLInputElement;
const onCpuLabel = $("oncpu-label");
const functionSelect = $("function") as HTMLSelectElement;
const functionLabel = $("function-label");
const viewsGroup = $("views");
const note = $("note");
const sandwichInfo = $("sandwich-info");
const search = $("search") as HTMLInputElement;
const matches = $("matches");
const resetButton = $("reset");
const viewButtons: Record<Exclude<ViewKind, "diff">, HTMLElement> = {
  "left-heavy": $("view-left-heavy"),
  "time-order": $("view-time-order"),
  inverted: $("view-inverted"),
  sandwich: $("view-sandwich"),
};
const flame = $("flame");
const canvas = $("canvas") as HTMLCanvasElement;
const spacer = $("spacer");
const empty = $("empty");
const tooltip = $("tooltip");
const hotTitle = $("hot-title");
const hotTable = $("hot") as HTMLTableElement;
const hotBody = hotTable.tBodies[0];
const changesTable = $("changes") as HTMLTableElement;
const ctx = canvas.getContext("2d", { alpha: false }) as CanvasRenderingContext2D;

/** The samples of one selection and their statistics (computed on first use). */
interface Selection {
  profile: SampledProfile;
  frameStats?: FrameStats;
  funcStats?: FrameStats;
}

/** Everything derived from one loaded profile or diff. */
interface Loaded {
  /** null for a speedscope file opened without its summary, and for a diff. */
  summary: ProfileSummary | null;
  doc: SpeedscopeDoc;
  /** Distinct frame colours (#rrggbb) and each frame's index into them. */
  palette: string[];
  paletteIndex: Uint16Array;
  functions: FunctionTable;
  /** Per function: the palette index of its first frame (a function looks like its frames). */
  functionPaletteIndex: Uint16Array;
  /** Summary fibers aligned with the profiles (chip i ↔ profile i), or null. */
  fibers: FiberSummary[] | null;
  states: ProfileStates[];
  onCpu: number[];
  selections: Map<string, Selection>;
  layouts: Map<string, FlameLayout>;
  /** The diff file, in the differential view. */
  diff: DiffDoc | null;
  diffPalette: string[];
  diffColor: Uint16Array | null;
}

/** The fiber filter: a profile index, or every profile merged. */
type FiberChoice = number | "all";

let loaded: Loaded | null = null;
let fiberChoice: FiberChoice = 0;
let onCpuOnly = true;
let viewKind: ViewKind = "left-heavy";
/** Focused function of the Sandwich view (index into the function table), -1 before the first choice. */
let sandwichFocus = -1;
let view: View = FULL_VIEW;
let layout: FlameLayout | null = null;
let query = "";
let frameMask: Uint8Array | null = null;
let functionMask: Uint8Array | null = null;
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

function clearLoaded(title: string, message: string): void {
  loaded = null;
  layout = null;
  header.textContent = title;
  showError(message);
  chips.replaceChildren();
  fiberSelect.replaceChildren();
  hotBody.replaceChildren();
  changesTable.tBodies[0].replaceChildren();
  note.textContent = "";
  sandwichInfo.hidden = true;
  // Nothing of the previous document stays beside the error: its search counts, its
  // Sandwich function list, its empty-graph message, its tooltip.
  matches.textContent = "";
  empty.textContent = "";
  functionSelect.replaceChildren();
  functionSelectFor = "";
  functionLabel.hidden = true;
  hovered = -1;
  hideTooltip();
  scheduleDraw();
}

function load(summaryRaw: unknown, speedscopeRaw: unknown): void {
  const t0 = performance.now();
  let summary: ProfileSummary | null;
  let doc: SpeedscopeDoc;
  try {
    summary = summaryRaw === null || summaryRaw === undefined ? null : validateSummary(summaryRaw);
    doc = validateSpeedscope(speedscopeRaw);
  } catch (e) {
    clearLoaded("Profile could not be shown", e instanceof Error ? e.message : String(e));
    return;
  }
  showError("");
  const t1 = performance.now();
  loadTimes.validate = t1 - t0;
  const { palette, index } = framePalette(doc.frames);
  const t2 = performance.now();
  loadTimes.colors = t2 - t1;
  const functions = functionTable(doc.frames);
  const functionPaletteIndex = new Uint16Array(functions.functions.length);
  for (let f = 0; f < functions.functions.length; f++) functionPaletteIndex[f] = index[functions.firstFrame[f]];
  loadTimes.functions = performance.now() - t2;
  const fibers = summary ? chipFibers(summary, doc) : null;
  const states = profileStates(doc, fibers);
  loaded = {
    summary,
    doc,
    palette,
    paletteIndex: index,
    functions,
    functionPaletteIndex,
    fibers,
    states,
    onCpu: onCpuCounts(doc, states, fibers),
    selections: new Map(),
    layouts: new Map(),
    diff: null,
    diffPalette: [],
    diffColor: null,
  };
  header.textContent = summary ? headerText(summary) : speedscopeHeader(doc);
  setMode("profile");
  buildChips();
  buildFiberSelect();
  buildHotTable();
  sandwichFocus = -1;
  // The Function selector was built for the previous document: its key (selection and focus
  // index) can be the same for this one, whose functions are others.
  functionSelectFor = "";
  if (viewKind === "diff") viewKind = "left-heavy";
  pressViewButtons();
  onCpuOnly = true;
  onCpuBox.checked = true;
  selectFiber(firstChoice());
}

/** Header of a speedscope file shown without its summary: samples and fibers only. */
function speedscopeHeader(doc: SpeedscopeDoc): string {
  let n = 0;
  let k = 0;
  for (const p of doc.profiles) {
    n += p.samples.length;
    if (p.samples.length > 0) k++;
  }
  return `${n} ${n === 1 ? "sample" : "samples"} \u00b7 ${k} ${k === 1 ? "fiber" : "fibers"} \u00b7 no profile summary beside this file`;
}

/** Loads a `.diff.folded` text into the differential view. */
function loadDiff(text: string): void {
  const t0 = performance.now();
  let d: DiffDoc;
  try {
    d = parseDiffFolded(text);
  } catch (e) {
    clearLoaded("Diff could not be shown", e instanceof Error ? e.message : String(e));
    return;
  }
  showError("");
  loadTimes.parse = performance.now() - t0;
  const frames: Frame[] = d.names.map((name) => ({ name, file: "", line: 0 }));
  const profile: SampledProfile = { name: "new", unit: "samples", startValue: 0, endValue: d.newTotal, samples: d.stacks, weights: d.next };
  const doc: SpeedscopeDoc = { name: "", activeProfileIndex: 0, frames, profiles: [profile] };
  const functions = functionTable(frames);
  loaded = {
    summary: null,
    doc,
    palette: [],
    paletteIndex: new Uint16Array(frames.length),
    functions,
    functionPaletteIndex: new Uint16Array(functions.functions.length),
    fibers: null,
    states: ["on-cpu"],
    onCpu: [d.stacks.length],
    selections: new Map(),
    layouts: new Map(),
    diff: d,
    diffPalette: [],
    diffColor: null,
  };
  header.textContent =
    `diff \u00b7 base ${d.baseTotal} ${d.baseTotal === 1 ? "sample" : "samples"} \u00b7 new ${d.newTotal} ` +
    `${d.newTotal === 1 ? "sample" : "samples"} \u00b7 ${d.stacks.length} ${d.stacks.length === 1 ? "stack" : "stacks"} \u00b7 red: more than in base, blue: less`;
  setMode("diff");
  buildChangesTable(d);
  viewKind = "diff";
  fiberChoice = 0;
  view = FULL_VIEW;
  hovered = -1;
  hideTooltip();
  flame.scrollTop = 0;
  ensureLayout();
  applySearch();
}

/** Shows the controls of a profile or of a diff. */
function setMode(mode: "profile" | "diff"): void {
  const diff = mode === "diff";
  chips.hidden = diff;
  viewsGroup.hidden = diff;
  fiberLabel.hidden = diff;
  onCpuLabel.hidden = diff;
  functionLabel.hidden = diff || viewKind !== "sandwich";
  hotTitle.textContent = diff ? "Changed functions (self share)" : "Hot functions";
  hotTable.hidden = diff;
  changesTable.hidden = !diff;
  note.textContent = "";
  sandwichInfo.hidden = true;
  if (diff) chips.replaceChildren();
}

/**
 * The selection shown first (§(l.10)): All fibers when more than one fiber has on-CPU samples,
 * otherwise the fiber with the most on-CPU samples (the export's active profile on ties).
 */
function firstChoice(): FiberChoice {
  if (!loaded) return 0;
  const counts = loaded.onCpu;
  const busy = counts.filter((c) => c !== 0).length;
  if (loaded.doc.profiles.length > 1 && busy > 1) return "all";
  let best = loaded.doc.activeProfileIndex;
  for (let i = 0; i < counts.length; i++) if (counts[i] > counts[best]) best = i;
  return best;
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
  const fibers = loaded.fibers;
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
        ? `${countText(f.samples, "sample")} \u00b7 ${Math.round((100 * f.oncpuSamples) / f.samples)}% on-CPU`
        : `${countText(f.samples, "sample")} \u00b7 waiting`
      : countText(p.samples.length, "sample");
    chip.textContent = `${label} \u00b7 ${detail}`;
    chip.addEventListener("click", () => selectFiber(i));
    chips.appendChild(chip);
  });
}

function buildFiberSelect(): void {
  if (!loaded) return;
  fiberSelect.replaceChildren();
  if (loaded.doc.profiles.length > 1) {
    const o = document.createElement("option");
    o.value = "all";
    o.textContent = "All fibers";
    fiberSelect.appendChild(o);
  }
  loaded.doc.profiles.forEach((p, i) => {
    const o = document.createElement("option");
    o.value = String(i);
    o.textContent = p.name;
    fiberSelect.appendChild(o);
  });
}

function buildHotTable(): void {
  if (!loaded || !loaded.summary) {
    hotBody.replaceChildren();
    return;
  }
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

/** The 20 functions whose self share changed most, either way. */
function buildChangesTable(d: DiffDoc): void {
  const body = changesTable.tBodies[0];
  body.replaceChildren();
  for (const c of diffChanges(d).slice(0, 20)) {
    const tr = document.createElement("tr");
    const delta = (c.newSelf - c.baseSelf) * 100;
    const cells = [formatPct(c.baseSelf), formatPct(c.newSelf), `${delta >= 0 ? "+" : "\u2212"}${Math.abs(delta).toFixed(1)}`, c.name];
    cells.forEach((text, i) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (i < 3) td.className = "num";
      tr.appendChild(td);
    });
    body.appendChild(tr);
  }
}

// ---------------------------------------------------------------- state changes

function selectionKey(): string {
  return `${fiberChoice}:${onCpuOnly ? "on-cpu" : "all"}`;
}

function selectionName(): string {
  if (!loaded) return "";
  if (loaded.diff) return "new";
  return fiberChoice === "all" ? "all fibers" : loaded.doc.profiles[fiberChoice].name;
}

function currentSelection(): Selection | null {
  if (!loaded) return null;
  const key = selectionKey();
  let s = loaded.selections.get(key);
  if (!s) {
    const which = fiberChoice === "all" ? loaded.doc.profiles.map((_, i) => i) : [fiberChoice];
    s = { profile: selectSamples(loaded.doc, which, onCpuOnly && !loaded.diff, loaded.states, selectionName()) };
    loaded.selections.set(key, s);
  }
  return s;
}

/** The unit of the selection's weights (`seconds` in osprey's exports). */
function currentUnit(): string {
  return currentSelection()?.profile.unit ?? "seconds";
}

/** Frame-level statistics of the selection (Left Heavy, Time Order). */
function currentFrameStats(): FrameStats | null {
  const s = currentSelection();
  if (!loaded || !s) return null;
  if (!s.frameStats) s.frameStats = frameStats(s.profile, loaded.doc.frames.length);
  return s.frameStats;
}

/** Function-level statistics of the selection (Inverted, Sandwich). */
function currentFunctionStats(): FrameStats | null {
  const s = currentSelection();
  if (!loaded || !s) return null;
  if (!s.funcStats) s.funcStats = frameStats(s.profile, loaded.doc.frames.length, loaded.functions.funcOf, loaded.functions.functions.length);
  return s.funcStats;
}

/** The function the Sandwich shows when none was picked: the one with the most self weight. */
function defaultFocus(): number {
  const st = currentFunctionStats();
  if (!st) return -1;
  let best = -1;
  for (let f = 0; f < st.self.length; f++) if (st.total[f] > 0 && (best < 0 || st.self[f] > st.self[best])) best = f;
  return best;
}

function ensureLayout(): void {
  const sel = currentSelection();
  if (!loaded || !sel) {
    layout = null;
    return;
  }
  if (viewKind === "sandwich" && sandwichFocus < 0) sandwichFocus = defaultFocus();
  const key = `${selectionKey()}:${viewKind}${viewKind === "sandwich" ? `:${sandwichFocus}` : ""}`;
  let l = loaded.layouts.get(key);
  if (!l) {
    const t0 = performance.now();
    const p = sel.profile;
    if (viewKind === "diff" && loaded.diff) l = diffLayout(loaded.diff);
    else if (viewKind === "inverted") l = invertedLayout(p, loaded.functions);
    else if (viewKind === "sandwich") l = sandwichLayout(p, loaded.functions, Math.max(0, sandwichFocus));
    else l = buildLayout(viewKind === "time-order" ? "time-order" : "left-heavy", p, loaded.doc.frames.length);
    loaded.layouts.set(key, l);
    loadTimes[`layout-${viewKind}`] = performance.now() - t0;
  }
  layout = l;
  if (l.kind === "diff") prepareDiffColors(l);
  fitHeight();
  updateNotes();
  empty.textContent = l.totalWeight > 0 && l.count > 0 ? "" : emptyText();
}

function emptyText(): string {
  if (!loaded) return "";
  if (loaded.diff) return "No samples in the new profile";
  const sel = currentSelection();
  if (viewKind === "sandwich" && sel && sel.profile.samples.length > 0) {
    // The selection has samples, so the focused function (kept across fiber switches) is
    // simply not in them: say so rather than blame the On-CPU only toggle.
    if (sandwichFocus < 0) return "No function to show";
    const fn = loaded.functions.functions[sandwichFocus];
    return `${fn.name} has no ${onCpuOnly ? "on-CPU " : ""}samples in ${selectionName()}`;
  }
  if (onCpuOnly) {
    const all = selectSamples(loaded.doc, fiberChoice === "all" ? loaded.doc.profiles.map((_, i) => i) : [fiberChoice], false, loaded.states, "");
    if (all.samples.length > 0) return "No on-CPU samples here: turn off On-CPU only to see the waiting ones";
  }
  return fiberChoice === "all" ? "No samples" : "No samples in this fiber";
}

/** The note under the toolbar (fibers whose waiting samples cannot be hidden) and the Sandwich line. */
function updateNotes(): void {
  if (!loaded || loaded.diff) {
    note.textContent = "";
    sandwichInfo.hidden = true;
    return;
  }
  const which = fiberChoice === "all" ? loaded.doc.profiles.map((_, i) => i) : [fiberChoice];
  const mixed = which.filter((i) => loaded && loaded.states[i] === "mixed").map((i) => loaded?.doc.profiles[i].name ?? "");
  note.textContent =
    onCpuOnly && mixed.length > 0
      ? `This export does not mark which samples of ${mixed.join(", ")} were waiting, so they are all shown.`
      : "";
  functionLabel.hidden = viewKind !== "sandwich";
  sandwichInfo.hidden = viewKind !== "sandwich";
  if (viewKind === "sandwich") {
    buildFunctionSelect();
    const st = currentFunctionStats();
    if (st && sandwichFocus >= 0) {
      const fn = loaded.functions.functions[sandwichFocus];
      const tw = st.totalWeight > 0 ? st.totalWeight : 1;
      const unit = currentUnit();
      sandwichInfo.textContent =
        `${fn.name} \u00b7 ${tooltipLocation(fn.file, fn.line)} \u00b7 self ${formatWeight(st.self[sandwichFocus], unit)} (${formatPct(st.self[sandwichFocus] / tw)}, ` +
        `${countText(st.selfSamples[sandwichFocus], "sample")}) \u00b7 total ${formatWeight(st.total[sandwichFocus], unit)} (${formatPct(st.total[sandwichFocus] / tw)}, ` +
        `${countText(st.samples[sandwichFocus], "sample")}) \u00b7 callers above, callees below`;
    } else {
      sandwichInfo.textContent = "";
    }
  }
}

/** The Sandwich function selector: the heaviest functions of the selection by total weight, and the focused one. */
let functionSelectFor = "";
function buildFunctionSelect(): void {
  if (!loaded) return;
  const key = `${selectionKey()}:${sandwichFocus}`;
  if (functionSelectFor === key) return;
  functionSelectFor = key;
  const st = currentFunctionStats();
  if (!st) return;
  const ids: number[] = [];
  for (let f = 0; f < st.total.length; f++) if (st.total[f] > 0) ids.push(f);
  ids.sort((a, b) => st.total[b] - st.total[a] || a - b);
  const shown = ids.slice(0, FUNCTION_CHOICES);
  if (sandwichFocus >= 0 && !shown.includes(sandwichFocus)) shown.push(sandwichFocus);
  functionSelect.replaceChildren();
  const tw = st.totalWeight > 0 ? st.totalWeight : 1;
  for (const f of shown) {
    const fn = loaded.functions.functions[f];
    const o = document.createElement("option");
    o.value = String(f);
    o.textContent = `${fn.name} \u2014 ${locationText(fn.file, fn.line)} \u00b7 ${formatPct(st.total[f] / tw)}`;
    functionSelect.appendChild(o);
  }
  functionSelect.value = String(sandwichFocus);
}

/** Per-rectangle palette indices of a diff layout: the colour scale quantised to DIFF_STEPS per side. */
function prepareDiffColors(l: FlameLayout): void {
  if (!loaded || !l.base) return;
  if (loaded.diffColor && loaded.diffColor.length === l.count) return;
  const m = maxDelta(l);
  const palette: string[] = [];
  for (let i = -DIFF_STEPS; i <= DIFF_STEPS; i++) {
    const [r, g, b] = diffRgb(i, DIFF_STEPS);
    palette.push(`#${[r, g, b].map((v) => v.toString(16).padStart(2, "0")).join("")}`);
  }
  const idx = new Uint16Array(l.count);
  for (let k = 0; k < l.count; k++) {
    const delta = (l.x1[k] - l.x0[k]) * l.totalWeight - l.base[k];
    const step = m > 0 ? Math.round((delta / m) * DIFF_STEPS) : 0;
    idx[k] = step + DIFF_STEPS;
  }
  loaded.diffPalette = palette;
  loaded.diffColor = idx;
}

/** Makes the graph as tall as its rows (plus a spare one), between 160 px and 65% of the window. */
function fitHeight(): void {
  const rows = layout ? layout.rows : 0;
  const want = Math.min(Math.max(160, (rows + 1) * ROW + 2), Math.max(160, Math.floor(window.innerHeight * 0.65)));
  flame.style.height = `${want}px`;
  resizeCanvas();
  spacer.style.height = `${Math.max(0, rows * ROW - canvasCssHeight())}px`;
}

/** Resets the zoom, the hover and the vertical scroll (after the layout changed). */
function resetViewState(): void {
  view = FULL_VIEW;
  hovered = -1;
  hideTooltip();
  flame.scrollTop = 0;
}

/** Switches fiber (or All fibers): resets the zoom and re-applies the search (§(j) "Fiber filter"). */
function selectFiber(choice: FiberChoice): void {
  if (!loaded) return;
  fiberChoice = choice === "all" ? (loaded.doc.profiles.length > 1 ? "all" : 0) : Math.max(0, Math.min(loaded.doc.profiles.length - 1, choice));
  fiberSelect.value = String(fiberChoice);
  for (const c of Array.from(chips.children)) {
    c.classList.toggle("active", (c as HTMLElement).dataset.index === String(fiberChoice));
  }
  resetViewState();
  ensureLayout();
  applySearch();
}

function pressViewButtons(): void {
  for (const [k, b] of Object.entries(viewButtons)) b.setAttribute("aria-pressed", String(k === viewKind));
}

function setViewKind(k: ViewKind): void {
  if (!loaded || loaded.diff) return;
  viewKind = k;
  pressViewButtons();
  resetViewState();
  ensureLayout();
  applySearch();
}

function setOnCpuOnly(on: boolean): void {
  onCpuOnly = on;
  onCpuBox.checked = on;
  if (!loaded || loaded.diff) return;
  resetViewState();
  ensureLayout();
  applySearch();
}

/** Shows function `f` (index into the function table) in the Sandwich view. */
function focusSandwich(f: number): void {
  if (!loaded || loaded.diff || f < 0 || f >= loaded.functions.functions.length) return;
  sandwichFocus = f;
  if (viewKind !== "sandwich") {
    setViewKind("sandwich");
    return;
  }
  resetViewState();
  ensureLayout();
  applySearch();
}

/** The function of rectangle k of the current layout. */
function functionOfRect(k: number): number {
  if (!loaded || !layout) return -1;
  const f = layout.frame[k];
  return layout.table === "functions" ? f : loaded.functions.funcOf[f];
}

function applySearch(): void {
  query = search.value;
  const sel = currentSelection();
  if (!loaded || !sel || query === "") {
    frameMask = null;
    functionMask = null;
    matches.textContent = "";
  } else {
    frameMask = matchFrames(loaded.doc.frames, query);
    functionMask = matchFrames(loaded.functions.functions, query);
    const r = searchShare(sel.profile, frameMask);
    const n = layout && layout.table === "functions" ? countMatches(functionMask) : r.frames;
    const noun = layout && layout.table === "functions" ? "function" : "frame";
    matches.textContent = `${n} matching ${noun}${n === 1 ? "" : "s"} \u00b7 ${formatPct(r.share)} of ${selectionName()}`;
  }
  scheduleDraw();
}

/** Functions in `mask` that the selection contains. */
function countMatches(mask: Uint8Array): number {
  const st = currentFunctionStats();
  let n = 0;
  for (let f = 0; f < mask.length; f++) if (mask[f] === 1 && st && st.total[f] > 0) n++;
  return n;
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

/** Width in CSS px of each UTF-16 code unit in the label font, -1 until measured. */
const charWidths = new Float64Array(65536).fill(-1);
let fontFamily = "";
/** The canvas font of labels (FONT_PX in the theme's family), rebuilt when the theme changes. */
let labelFont = "";

/** Width of UTF-16 code unit `c` in the label font (measureText once per code unit and font). */
function unitWidth(c: number): number {
  let cw = charWidths[c];
  if (cw < 0) {
    cw = ctx.measureText(String.fromCharCode(c)).width;
    charWidths[c] = cw;
  }
  return cw;
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
    labelFont = `${FONT_PX}px ${fontFamily}`;
    charWidths.fill(-1);
    labelCaches = new WeakMap();
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
/** Rectangles of the current draw that get a label (reused from draw to draw). */
let labelBuf = new Int32Array(0);
/** Off only in the browser tests, which compare a culled redraw with one visiting every rectangle. */
let culling = true;

/**
 * The last label fitted for each name of a name table (frames or functions), in the current
 * font: its text and the range of room [min, max) in CSS px it is the answer for (elideMiddleFit).
 * A label is measured and elided again only when its room leaves that range.
 */
interface LabelCache {
  text: (string | undefined)[];
  min: Float64Array;
  max: Float64Array;
}
let labelCaches = new WeakMap<readonly Frame[], LabelCache>();

function labelCache(names: readonly Frame[]): LabelCache {
  let c = labelCaches.get(names);
  if (!c) {
    c = { text: new Array<string | undefined>(names.length), min: new Float64Array(names.length), max: new Float64Array(names.length) };
    labelCaches.set(names, c);
  }
  return c;
}

/** The label of name `f` in `room` CSS px (the name, elided in the middle, or ""). */
function fitLabel(c: LabelCache, names: readonly Frame[], f: number, room: number): string {
  const t = c.text[f];
  if (t !== undefined && c.min[f] <= room && room < c.max[f]) return t;
  const fit = elideMiddleFitUnits(names[f].name, room, unitWidth);
  c.text[f] = fit.text;
  c.min[f] = fit.min;
  c.max[f] = fit.max;
  return fit.text;
}

/**
 * Draws the rows in the vertical viewport; within each row starts at the first rectangle that
 * reaches the view (binary search), stops past its end, skips rectangles under 0.3 px — and
 * with them every rectangle up to the next wider one of the row (`FlameLayout.nextWider`), so
 * a sub-pixel frame's whole subtree costs one step, not one per frame. Rectangles are painted
 * into a pixel buffer, one scanline per row copied down the row's height, then put on the
 * canvas at once: the cost is bounded by the drawn rectangles plus the canvas area, however
 * many tiny frames there are. Edges snap to device pixels and a device-pixel column of a row
 * is painted once (a sliver falling in a column its left neighbour already filled is not
 * painted again). Labels (each fitted once and reused while its room allows) and the hover outline go on top.
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
  const l = layout;
  if (!loaded || !l || l.totalWeight <= 0) {
    pixels.fill(bgPacked);
    ctx.putImageData(image, 0, 0);
    recordDraw(t0);
    return;
  }
  const diffColor = l.kind === "diff" ? loaded.diffColor : null;
  const palette = diffColor ? loaded.diffPalette : loaded.palette;
  const paletteIndex = l.table === "functions" ? loaded.functionPaletteIndex : loaded.paletteIndex;
  ensurePackedPalette(palette);
  const names = l.table === "functions" ? loaded.functions.functions : loaded.doc.frames;
  const span = view.end - view.start;
  const scale = (cssWidth / span) * dpr; // device pixels per unit of x
  const top = flame.scrollTop;
  const firstRow = Math.max(0, Math.floor(top / ROW));
  const lastRow = Math.min(l.rows - 1, Math.floor((top + cssHeight) / ROW));
  const m = l.table === "functions" ? functionMask : frameMask;
  const minRect = MIN_RECT_PX * dpr;
  const labelMin = LABEL_MIN_PX * dpr;
  const gap = Math.max(1, Math.round(0.5 * dpr));
  let labelCount = 0;
  if (labelBuf.length < 64) labelBuf = new Int32Array(64);
  const { x0: xs0, x1: xs1, frame: frames, rowStart, nextWider } = l;
  const viewStart = view.start;
  const viewEnd = view.end;
  const cull = culling;
  // Device-pixel rows above `yDone` are painted; every pixel is written once or twice (a
  // frame's row scanline over nothing, the gaps and empty rows in the background colour).
  let yDone = 0;
  for (let d = firstRow; d <= lastRow; d++) {
    const end = rowStart[d + 1];
    let filledTo = 0;
    let any = false;
    let k = firstInRow(l, d, viewStart);
    while (k < end) {
      const x0 = xs0[k];
      if (x0 >= viewEnd) break;
      const w = (xs1[k] - x0) * scale;
      if (w < minRect) {
        // Too narrow to draw: so is every rectangle up to the next wider one (its callees
        // among them), which the walk jumps to (FlameLayout.nextWider).
        k = cull ? nextWider[k] : k + 1;
        continue;
      }
      const left = (x0 - viewStart) * scale;
      let a = Math.round(left);
      let b = Math.round(left + w);
      if (b - a < 1) b = a + 1;
      if (a < filledTo) a = filledTo;
      if (b > W) b = W;
      if (b <= a) {
        k++;
        continue;
      }
      if (!any) {
        scanline.fill(bgPacked);
        any = true;
      }
      filledTo = b;
      const f = frames[k];
      const pi = diffColor ? diffColor[k] : paletteIndex[f];
      const color = packedPalette[2 * pi + (m !== null && m[f] === 0 ? 1 : 0)];
      const stop = b - a >= 3 ? b - gap : b;
      if (stop - a < 16) for (let x = a; x < stop; x++) scanline[x] = color;
      else scanline.fill(color, a, stop);
      if (w >= labelMin) {
        if (labelCount === labelBuf.length) {
          const grown = new Int32Array(2 * labelCount);
          grown.set(labelBuf);
          labelBuf = grown;
        }
        labelBuf[labelCount++] = k;
      }
      k++;
    }
    // Copy the scanline down the row, leaving its last device pixel(s) as the row gap.
    const y0 = Math.max(0, Math.round((d * ROW - top) * dpr));
    const y1 = Math.min(H, Math.round((d * ROW - top + ROW - 1) * dpr));
    if (y0 > yDone) pixels.fill(bgPacked, yDone * W, y0 * W);
    if (any) for (let y = y0; y < y1; y++) pixels.set(scanline, y * W);
    else if (y1 > y0) pixels.fill(bgPacked, y0 * W, y1 * W);
    if (y1 > yDone) yDone = y1;
  }
  if (yDone < H) pixels.fill(bgPacked, yDone * W, H * W);
  ctx.putImageData(image, 0, 0);
  // Labels.
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.font = labelFont;
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#000000";
  let alpha = -1;
  const cssScale = scale / dpr;
  const fits = labelCache(names);
  for (let i = 0; i < labelCount; i++) {
    const k = labelBuf[i];
    const px0 = Math.max(0, (l.x0[k] - view.start) * cssScale);
    const px1 = Math.min(cssWidth, (l.x1[k] - view.start) * cssScale);
    const text = fitLabel(fits, names, l.frame[k], px1 - px0 - 2 * LABEL_PAD);
    if (text === "") continue;
    const a = m !== null && m[l.frame[k]] === 0 ? DIM_ALPHA : 1;
    if (a !== alpha) ctx.globalAlpha = alpha = a;
    ctx.fillText(text, px0 + LABEL_PAD, l.depth[k] * ROW - top + (ROW - 1) / 2);
  }
  ctx.globalAlpha = 1;
  if (l.kind === "sandwich") {
    // The focused function's row: a rule above and below separates callers from callees.
    const y = (l as FlameLayout & { focusRow: number }).focusRow * ROW - top;
    ctx.fillStyle = highlight;
    ctx.fillRect(0, y - 1, cssWidth, 1);
    ctx.fillRect(0, y + ROW - 1, cssWidth, 1);
  }
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

/** The frame (or function) shown by rectangle k of the current layout. */
function frameOfRect(k: number): Frame | null {
  if (!loaded || !layout) return null;
  const f = layout.frame[k];
  return layout.table === "functions" ? loaded.functions.functions[f] : loaded.doc.frames[f];
}

/** Tooltip lines of rectangle k: name, location, self and total, samples (diff: both shares). */
function tooltipLines(k: number): string[] {
  const frame = frameOfRect(k);
  if (!loaded || !layout || !frame) return [];
  if (layout.kind === "diff" && layout.base) {
    const now = (layout.x1[k] - layout.x0[k]) * layout.totalWeight;
    const was = layout.base[k];
    const d = (now - was) * 100;
    return [frame.name, `base ${formatPct(was)} \u00b7 new ${formatPct(now)} (${d >= 0 ? "+" : "\u2212"}${Math.abs(d).toFixed(1)} points)`];
  }
  const stats = layout.table === "functions" ? currentFunctionStats() : currentFrameStats();
  if (!stats) return [];
  const f = layout.frame[k];
  const tw = stats.totalWeight > 0 ? stats.totalWeight : 1;
  const unit = currentUnit();
  const lines = [
    frame.name,
    tooltipLocation(frame.file, frame.line),
    `self ${formatWeight(stats.self[f], unit)} (${formatPct(stats.self[f] / tw)}) \u00b7 total ${formatWeight(stats.total[f], unit)} (${formatPct(stats.total[f] / tw)})`,
    `${stats.samples[f]} ${stats.samples[f] === 1 ? "sample" : "samples"}`,
  ];
  if (layout.kind === "inverted" || layout.kind === "sandwich") {
    // What this rectangle itself stands for: a path through the function, not the whole function.
    lines.push(`this path: ${formatWeight(layout.weight[k], unit)} (${formatPct(layout.weight[k] / tw)})`);
  }
  return lines;
}

function showTooltip(k: number, clientX: number, clientY: number): void {
  const lines = tooltipLines(k);
  if (lines.length === 0) return;
  tooltip.replaceChildren();
  lines.forEach((text, i) => {
    const div = document.createElement("div");
    div.className = i === 0 ? "name" : i === 1 ? "loc" : "";
    div.textContent = text;
    tooltip.appendChild(div);
  });
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
  const frame = frameOfRect(k);
  if (frame && frame.file !== "") vscode.postMessage({ type: "select", file: frame.file, line: frame.line });
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
  if (document.activeElement === search || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === "0") resetZoom();
  // S: the Sandwich of the function under the pointer.
  if ((e.key === "s" || e.key === "S") && hovered >= 0) focusSandwich(functionOfRect(hovered));
});

search.addEventListener("input", () => applySearch());
resetButton.addEventListener("click", () => resetZoom());
for (const [k, b] of Object.entries(viewButtons)) b.addEventListener("click", () => setViewKind(k as ViewKind));
fiberSelect.addEventListener("change", () => selectFiber(fiberSelect.value === "all" ? "all" : Number(fiberSelect.value)));
onCpuBox.addEventListener("change", () => setOnCpuOnly(onCpuBox.checked));
functionSelect.addEventListener("change", () => focusSandwich(Number(functionSelect.value)));

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
  const m = e.data as { type?: unknown; summary?: unknown; speedscope?: unknown; text?: unknown; message?: unknown };
  if (!m) return;
  if (m.type === "profile") load(m.summary, m.speedscope);
  else if (m.type === "diff" && typeof m.text === "string") loadDiff(m.text);
  else if (m.type === "error" && typeof m.message === "string") clearLoaded("Profile could not be shown", m.message);
});

/** Read-only introspection for the browser tests and the benchmark. */
(window as unknown as { ospreyProfiler: unknown }).ospreyProfiler = {
  view: (): View => ({ ...view }),
  viewKind: (): ViewKind => viewKind,
  profileIndex: (): number => (fiberChoice === "all" ? -1 : fiberChoice),
  profileName: (): string => selectionName(),
  fiberChoice: (): string => String(fiberChoice),
  onCpuOnly: (): boolean => onCpuOnly,
  /** Weight and sample count of the current selection. */
  selectionTotals: (): { weight: number; samples: number } => {
    const s = currentSelection();
    return s ? { weight: s.profile.weights.reduce((a, b) => a + b, 0), samples: s.profile.samples.length } : { weight: 0, samples: 0 };
  },
  /** Per-function statistics of the current selection, keyed `name\u0000file`, for functions present in it. */
  functionStats: (): Record<string, { self: number; total: number; selfSamples: number; samples: number }> => {
    const st = currentFunctionStats();
    const out: Record<string, { self: number; total: number; selfSamples: number; samples: number }> = {};
    if (!loaded || !st) return out;
    loaded.functions.functions.forEach((fn, f) => {
      if (st.total[f] > 0) out[`${fn.name}\u0000${fn.file}`] = { self: st.self[f], total: st.total[f], selfSamples: st.selfSamples[f], samples: st.samples[f] };
    });
    return out;
  },
  /** Rectangles of one row of the current layout: name, file and weight (layout units). */
  row: (d: number): { name: string; file: string; weight: number; base?: number }[] => {
    const out: { name: string; file: string; weight: number; base?: number }[] = [];
    if (!layout || d < 0 || d >= layout.rows) return out;
    for (let k = layout.rowStart[d]; k < layout.rowStart[d + 1]; k++) {
      const fr = frameOfRect(k);
      if (fr) out.push({ name: fr.name, file: fr.file, weight: layout.weight[k], ...(layout.base ? { base: layout.base[k] } : {}) });
    }
    return out;
  },
  sandwich: (): { focus: string; file: string; focusRow: number; info: string } | null => {
    if (!loaded || !layout || layout.kind !== "sandwich") return null;
    const fn = loaded.functions.functions[sandwichFocus];
    return { focus: fn.name, file: fn.file, focusRow: (layout as unknown as { focusRow: number }).focusRow, info: sandwichInfo.textContent ?? "" };
  },
  /** Focuses the Sandwich on the function `name` in `file` (first match). */
  sandwichOn: (name: string, file: string): boolean => {
    if (!loaded) return false;
    const f = loaded.functions.functions.findIndex((fn) => fn.name === name && fn.file === file);
    if (f < 0) return false;
    focusSandwich(f);
    return true;
  },
  rows: (): number => (layout ? layout.rows : 0),
  rectCount: (): number => (layout ? layout.count : 0),
  /** The first rectangle of `frameName` on the current layout, in client coordinates of its centre. */
  locate(frameName: string): { x: number; y: number; file: string; line: number } | null {
    if (!loaded || !layout) return null;
    const r = canvas.getBoundingClientRect();
    const scale = cssWidth / (view.end - view.start);
    for (let k = 0; k < layout.count; k++) {
      const frame = frameOfRect(k);
      if (!frame || frame.name !== frameName) continue;
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
  /** Culling on (the default) or off (every rectangle of the visible rows visited, for comparison). */
  setCulling: (on: boolean): void => {
    culling = on;
    scheduleDraw();
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
