/**
 * Text shown by the panel (docs/spec/profiler.md §(j) "Panel"): header, locations, durations, and the
 * HTML escaping used for everything placed in markup. No DOM or vscode import.
 */
import type { ProfileSummary } from "./types";

/** Escapes `& < > " '` for use in HTML text and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Seconds with 1 decimal below 100, else 0 decimals. */
export function formatSeconds(s: number): string {
  return s < 100 ? s.toFixed(1) : s.toFixed(0);
}

/** Summary fibers that have samples, in row order: chip i ↔ speedscope profile i. */
export function sampledFibers<T extends { samples: number }>(fibers: readonly T[]): T[] {
  return fibers.filter((f) => f.samples > 0);
}

/**
 * `<N> samples · <R>Hz · <W>s wall · <C>s CPU · <k> fibers` plus ` · <D> dropped` when
 * droppedSamples > 0; `fiber` when k = 1; k = fibers with at least one sample.
 */
export function headerText(s: ProfileSummary): string {
  const k = sampledFibers(s.fibers).length;
  let t =
    `${s.sampleCount} samples \u00b7 ${s.rateHz}Hz \u00b7 ${formatSeconds(s.wallSeconds)}s wall \u00b7 ` +
    `${formatSeconds(s.cpuSeconds)}s CPU \u00b7 ${k} ${k === 1 ? "fiber" : "fibers"}`;
  if (s.droppedSamples > 0) t += ` \u00b7 ${s.droppedSamples} dropped`;
  return t;
}

/** Last path component, for either separator. */
export function basename(file: string): string {
  const i = Math.max(file.lastIndexOf("/"), file.lastIndexOf("\\"));
  return i >= 0 ? file.slice(i + 1) : file;
}

/** Table location: `<basename>:<line>`, `<basename>` without a line, `—` without a file. */
export function locationText(file: string, line: number): string {
  if (file === "") return "\u2014";
  return line > 0 ? `${basename(file)}:${line}` : basename(file);
}

/** Tooltip location: `file:line` (or the file alone) or `(runtime)` without a file. */
export function tooltipLocation(file: string, line: number): string {
  if (file === "") return "(runtime)";
  return line > 0 ? `${file}:${line}` : file;
}

/** A weight in seconds as milliseconds with adaptive precision: `12.3 ms`, `0.125 ms`, `1234 ms`. */
export function formatMs(seconds: number): string {
  const ms = seconds * 1000;
  if (ms >= 1000) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(ms >= 1 ? 2 : 3)} ms`;
}

/** Seconds per unit of speedscope's time units; other units (`none`, `bytes`) are not times. */
const SECONDS_PER_UNIT: Record<string, number> = { seconds: 1, milliseconds: 1e-3, microseconds: 1e-6, nanoseconds: 1e-9 };

/**
 * A weight in a profile's `unit` (osprey writes seconds; a speedscope file from another tool
 * may use another): a time as {@link formatMs}, `bytes` as `<n> bytes`, anything else (`none`:
 * plain counts) as the number alone.
 */
export function formatWeight(value: number, unit: string): string {
  const k = Object.prototype.hasOwnProperty.call(SECONDS_PER_UNIT, unit) ? SECONDS_PER_UNIT[unit] : undefined;
  if (k !== undefined) return formatMs(value * k);
  const n = Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
  return unit === "bytes" ? `${n} bytes` : n;
}

/** A share in [0, 1] as a percentage with one decimal: `42.0%`. */
export function formatPct(share: number): string {
  return `${(share * 100).toFixed(1)}%`;
}

/**
 * A `{type: "select", file, line}` message from the webview, checked: type "select", file a
 * non-empty string, line a finite number. Returns null for anything else.
 */
export function parseSelectMessage(m: unknown): { file: string; line: number } | null {
  if (typeof m !== "object" || m === null) return null;
  const o = m as Record<string, unknown>;
  if (o.type !== "select") return null;
  if (typeof o.file !== "string" || o.file === "") return null;
  if (typeof o.line !== "number" || !Number.isFinite(o.line)) return null;
  return { file: o.file, line: o.line };
}

/** 0-based line for a 1-based `line` clamped into a document of `lineCount` lines. */
export function clampLine0(line: number, lineCount: number): number {
  const l = Math.trunc(line) - 1;
  return Math.max(0, Math.min(Math.max(0, lineCount - 1), l));
}
