/**
 * Opens the webview page in Debian's chromium through playwright-core, with a stand-in for
 * acquireVsCodeApi that records posted messages. Never downloads a browser.
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { pathToFileURL } from "url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { makeNonce, renderPage } from "../../src/webview/page";
import { ROOT } from "./paths";

export const CHROMIUM = process.env.OSPREY_CHROMIUM || "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Launches chromium with a fresh user-data directory (removed on close). */
export async function launch(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`chromium not found at ${CHROMIUM} (scripts/setup.sh installs it)`);
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "osprey-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1200, height: 800 },
    deviceScaleFactor: 1,
  });
  return {
    context,
    close: async () => {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Problems the page reported: console errors (CSP violations among them) and uncaught errors. */
export interface PageProblems {
  errors: string[];
}

const pageDirs: string[] = [];
// Each page's HTML file lives as long as the page; remove them all when the test process ends.
process.on("exit", () => {
  for (const d of pageDirs) fs.rmSync(d, { recursive: true, force: true });
});

/** Writes the panel's HTML next to nothing but a file:// URL of dist/webview.js and opens it. */
export async function openPanel(b: Browser, width = 1200, height = 800): Promise<{ page: Page; problems: PageProblems }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "osprey-page-"));
  pageDirs.push(dir);
  const nonce = makeNonce((n) => new Uint8Array(n).map(() => Math.floor(Math.random() * 256)));
  const html = renderPage({
    nonce,
    scriptUri: pathToFileURL(path.join(ROOT, "dist", "webview.js")).toString(),
    title: "Profile: test",
  });
  const file = path.join(dir, "panel.html");
  fs.writeFileSync(file, html);
  const page = await b.context.newPage();
  await page.setViewportSize({ width, height });
  const problems: PageProblems = { errors: [] };
  page.on("console", (m) => {
    if (m.type() === "error") problems.errors.push(m.text());
  });
  page.on("pageerror", (e) => problems.errors.push(String(e)));
  await page.addInitScript(() => {
    const w = window as unknown as { __posted: unknown[]; acquireVsCodeApi: () => unknown };
    w.__posted = [];
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => w.__posted.push(m),
      getState: () => undefined,
      setState: () => undefined,
    });
  });
  await page.goto(pathToFileURL(file).toString());
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
  return { page, problems };
}

/** Sends a profile to the page as the extension does and waits for it to be drawn. */
export async function postProfile(page: Page, summary: unknown, speedscope: unknown): Promise<void> {
  await page.evaluate(
    ([summary, speedscope]) => window.postMessage({ type: "profile", title: "t", summary, speedscope }, "*"),
    [summary, speedscope] as const,
  );
  await settle(page);
}

/** Waits two animation frames so pending redraws have happened. */
export async function settle(page: Page): Promise<void> {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(undefined)))));
}

/** Messages the page posted so far. */
export async function posted(page: Page): Promise<Record<string, unknown>[]> {
  return page.evaluate(() => (window as unknown as { __posted: Record<string, unknown>[] }).__posted.slice());
}

/** Debug view of the page's state (window.ospreyProfiler). */
export interface ProfilerDebug {
  view(): { start: number; end: number };
  viewKind(): string;
  profileIndex(): number;
  profileName(): string;
  fiberChoice(): string;
  onCpuOnly(): boolean;
  selectionTotals(): { weight: number; samples: number };
  functionStats(): Record<string, { self: number; total: number; selfSamples: number; samples: number }>;
  row(d: number): { name: string; file: string; weight: number; base?: number }[];
  sandwich(): { focus: string; file: string; focusRow: number; info: string } | null;
  sandwichOn(name: string, file: string): boolean;
  rows(): number;
  rectCount(): number;
  locate(name: string): { x: number; y: number; file: string; line: number } | null;
  drawTimes(): number[];
  loadTimes(): Record<string, number>;
  setFlushAfterDraw(on: boolean): void;
  setCulling(on: boolean): void;
  clearDrawTimes(): void;
  drawNow(): number;
  setView(start: number, end: number): void;
}

export async function debug<K extends keyof ProfilerDebug>(page: Page, fn: K, ...args: Parameters<ProfilerDebug[K]>): Promise<ReturnType<ProfilerDebug[K]>> {
  return page.evaluate(
    ([fn, args]) => {
      const d = (window as unknown as { ospreyProfiler: Record<string, (...a: unknown[]) => unknown> }).ospreyProfiler;
      return d[fn as string](...(args as unknown[]));
    },
    [fn, args] as const,
  ) as Promise<ReturnType<ProfilerDebug[K]>>;
}

/** RGBA of the canvas pixel at client coordinates (x, y). */
export async function pixelAt(page: Page, x: number, y: number): Promise<number[]> {
  return page.evaluate(
    ([x, y]) => {
      const c = document.getElementById("canvas") as HTMLCanvasElement;
      const r = c.getBoundingClientRect();
      const s = c.width / r.width;
      const d = (c.getContext("2d") as CanvasRenderingContext2D).getImageData(Math.floor((x - r.left) * s), Math.floor((y - r.top) * s), 1, 1).data;
      return Array.from(d);
    },
    [x, y] as const,
  );
}

/** Number of distinct colours on the canvas (1 means blank). */
export async function distinctColors(page: Page): Promise<number> {
  return page.evaluate(() => {
    const c = document.getElementById("canvas") as HTMLCanvasElement;
    const d = (c.getContext("2d") as CanvasRenderingContext2D).getImageData(0, 0, c.width, c.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < d.length; i += 4) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    return seen.size;
  });
}

/** Like postProfile, but ships the documents as JSON text parsed inside the page (fast for big ones). */
export async function postProfileText(page: Page, summary: string, speedscope: string): Promise<void> {
  await page.evaluate(
    ([summary, speedscope]) =>
      window.postMessage({ type: "profile", title: "t", summary: JSON.parse(summary), speedscope: JSON.parse(speedscope) }, "*"),
    [summary, speedscope] as const,
  );
  await settle(page);
}
