/**
 * The webview's HTML (docs/spec/profiler.md §(j) "Panel"): strict content-security policy
 * `default-src 'none'` with a nonce for the one script and the one style element; no profile
 * data in the markup (it arrives by postMessage). Shared by the panel, the custom editor for
 * profile files (§(l.10)) and the browser tests.
 */
import { escapeHtml } from "../model/format";

export interface PageOptions {
  /** Random base64/alnum token, fresh per page. */
  nonce: string;
  /** URI of the bundled webview script (dist/webview.js). */
  scriptUri: string;
  /** Text for <title>; escaped here. */
  title: string;
}

/** A fresh nonce: 32 characters from [A-Za-z0-9] taken from a cryptographic source. */
export function makeNonce(randomBytes: (n: number) => Uint8Array): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = randomBytes(32);
  let s = "";
  for (let i = 0; i < 32; i++) s += alphabet[bytes[i] % alphabet.length];
  return s;
}

/** The content-security policy for a nonce. */
export function contentSecurityPolicy(nonce: string): string {
  return `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'`;
}

const STYLE = `
:root { color-scheme: light dark; }
body { margin: 0; padding: 8px 12px; font-family: var(--vscode-font-family, system-ui, sans-serif);
  font-size: var(--vscode-font-size, 13px); color: var(--vscode-foreground, #ccc);
  background: var(--vscode-editor-background, #1e1e1e); }
#header { font-weight: 600; margin: 2px 0 6px; }
#error { color: var(--vscode-errorForeground, #f48771); white-space: pre-wrap; }
#chips { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 6px; }
.chip { border: 1px solid var(--vscode-panel-border, #555); border-radius: 10px; padding: 1px 8px;
  cursor: pointer; background: transparent; color: inherit; font: inherit; font-size: 12px; }
.chip.active { background: var(--vscode-button-background, #0e639c); color: var(--vscode-button-foreground, #fff); }
#toolbar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-bottom: 6px; }
button.tool { background: var(--vscode-button-secondaryBackground, #3a3d41); color: var(--vscode-button-secondaryForeground, #fff);
  border: 1px solid transparent; padding: 2px 8px; font: inherit; cursor: pointer; }
button.tool[aria-pressed="true"] { background: var(--vscode-button-background, #0e639c); color: var(--vscode-button-foreground, #fff); }
select, input { background: var(--vscode-input-background, #3c3c3c); color: var(--vscode-input-foreground, #ccc);
  border: 1px solid var(--vscode-input-border, #555); font: inherit; padding: 2px 4px; }
#search { width: 16em; }
#matches { opacity: 0.85; min-width: 10em; }
#views { display: inline-flex; gap: 2px; }
#note { opacity: 0.85; font-size: 12px; margin-bottom: 4px; }
#note:empty { display: none; }
#sandwich-info { font-size: 12px; margin-bottom: 4px; }
#function { max-width: 28em; }
[hidden] { display: none !important; }
#flame { position: relative; height: 160px; overflow-y: auto; overflow-x: hidden;
  border: 1px solid var(--vscode-panel-border, #444); }
#canvas { position: sticky; top: 0; display: block; width: 100%; cursor: default; }
#spacer { width: 1px; }
#empty { position: absolute; top: 40%; width: 100%; text-align: center; opacity: 0.7; pointer-events: none; }
#tooltip { position: fixed; z-index: 10; pointer-events: none; display: none; max-width: 60vw;
  background: var(--vscode-editorHoverWidget-background, #252526); color: var(--vscode-editorHoverWidget-foreground, #ccc);
  border: 1px solid var(--vscode-editorHoverWidget-border, #454545); padding: 4px 8px; font-size: 12px; }
#tooltip .name { font-weight: 600; word-break: break-all; }
#tooltip .loc { opacity: 0.8; word-break: break-all; }
h2 { font-size: 13px; margin: 12px 0 4px; }
table { border-collapse: collapse; font-size: 12px; }
th, td { text-align: left; padding: 1px 10px 1px 0; white-space: nowrap; }
td.num, th.num { text-align: right; }
tr.link { cursor: pointer; }
tr.link:hover { background: var(--vscode-list-hoverBackground, #2a2d2e); }
`;

/** The complete HTML document of the panel. */
export function renderPage(o: PageOptions): string {
  const n = escapeHtml(o.nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(o.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(o.title)}</title>
<style nonce="${n}">${STYLE}</style>
</head>
<body>
<div id="header">Loading profile…</div>
<div id="error" role="alert"></div>
<div id="chips" role="group" aria-label="Fibers"></div>
<div id="toolbar">
  <span id="views" role="group" aria-label="View">
  <button class="tool" id="view-left-heavy" aria-pressed="true" title="Identical stacks merged, heaviest first">Left Heavy</button>
  <button class="tool" id="view-time-order" aria-pressed="false" title="Samples in the order they were taken">Time Order</button>
  <button class="tool" id="view-inverted" aria-pressed="false" title="Bottom-up: the functions the time was spent in, their callers below">Inverted</button>
  <button class="tool" id="view-sandwich" aria-pressed="false" title="One function: its callers above, its callees below (S on a frame)">Sandwich</button>
  </span>
  <label id="fiber-label">Fiber <select id="fiber"></select></label>
  <label id="oncpu-label" title="Hide the samples taken while a thread was waiting"><input id="oncpu" type="checkbox" checked> On-CPU only</label>
  <label id="function-label" hidden>Function <select id="function"></select></label>
  <input id="search" type="search" placeholder="Search frames" aria-label="Search frames" spellcheck="false">
  <span id="matches"></span>
  <button class="tool" id="reset" title="Reset zoom (0)">Reset zoom</button>
</div>
<div id="note"></div>
<div id="sandwich-info" hidden></div>
<div id="flame" tabindex="0"><canvas id="canvas"></canvas><div id="spacer"></div><div id="empty"></div></div>
<div id="tooltip"></div>
<h2 id="hot-title">Hot functions</h2>
<table id="hot"><thead><tr><th class="num">SELF%</th><th class="num">TOTAL%</th><th>FUNCTION</th><th>LOCATION</th></tr></thead><tbody></tbody></table>
<table id="changes" hidden><thead><tr><th class="num">BASE SELF%</th><th class="num">NEW SELF%</th><th class="num">CHANGE</th><th>FUNCTION</th></tr></thead><tbody></tbody></table>
<script nonce="${n}" src="${escapeHtml(o.scriptUri)}"></script>
</body>
</html>
`;
}
