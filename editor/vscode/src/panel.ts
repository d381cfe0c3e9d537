/**
 * The flame-graph panel (docs/spec/profiler.md §(j) "Panel"): one webview panel of view type
 * `ospreyProfiler`, data sent by postMessage, `select` messages opening the source; and the
 * custom editor (§(l.10)) that shows `*.speedscope.json`, `*.profile.json` and `*.diff.folded`
 * files with the same page.
 */
import * as crypto from "crypto";
import * as vscode from "vscode";
import { loadForEditor, type LoadedProfile } from "./loader";
import { clampLine0, parseSelectMessage } from "./model/format";
import { makeNonce, renderPage } from "./webview/page";

export const VIEW_TYPE = "ospreyProfiler";
/** View type of the custom editor for profile files (package.json `customEditors`). */
export const EDITOR_VIEW_TYPE = "osprey.profileViewer";

/** Webview options of every page: scripts on, local resources limited to dist/. */
function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions {
  return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, "dist")] };
}

/** Puts the profile page (fresh nonce, strict CSP) into `webview`. */
function renderInto(webview: vscode.Webview, extensionUri: vscode.Uri, title: string): void {
  const script = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview.js"));
  webview.html = renderPage({ nonce: makeNonce((n) => crypto.randomBytes(n)), scriptUri: script.toString(), title });
}

/** True for the page's `{type: "ready"}`. */
function isReady(m: unknown): boolean {
  return typeof m === "object" && m !== null && (m as { type?: unknown }).type === "ready";
}

/** Opens `file` in the first editor column and selects 1-based `line` (clamped), centred. */
export async function revealSource(file: string, line: number): Promise<boolean> {
  try {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
    const editor = await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, preserveFocus: false });
    const l0 = clampLine0(line, doc.lineCount);
    const range = doc.lineAt(l0).range;
    editor.selection = new vscode.Selection(range.start, range.end);
    editor.revealRange(range, vscode.TextEditorRevealType.InCenter);
    return true;
  } catch (e) {
    void vscode.window.showWarningMessage(`Osprey: cannot open ${file}: ${e instanceof Error ? e.message : String(e)}`);
    return false;
  }
}

/** The single profiler panel; created on first show, re-used and revealed afterwards. */
export class ProfilerPanel {
  private panel: vscode.WebviewPanel | null = null;
  private ready = false;
  private current: LoadedProfile | null = null;

  constructor(private readonly extensionUri: vscode.Uri) {}

  /** Shows `p` in the panel (creating or revealing it beside the active editor). */
  show(p: LoadedProfile): void {
    this.current = p;
    const title = `Profile: ${p.title}`;
    if (!this.panel) {
      this.ready = false;
      const panel = vscode.window.createWebviewPanel(VIEW_TYPE, title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, {
        ...webviewOptions(this.extensionUri),
        retainContextWhenHidden: true,
      });
      this.panel = panel;
      panel.onDidDispose(() => {
        this.panel = null;
        this.ready = false;
      });
      panel.webview.onDidReceiveMessage((m: unknown) => this.onMessage(m));
      renderInto(panel.webview, this.extensionUri, title);
    } else {
      this.panel.title = title;
      this.panel.reveal(vscode.ViewColumn.Beside, true);
      if (this.ready) this.post();
    }
  }

  /** True while the panel is open. */
  get isOpen(): boolean {
    return this.panel !== null;
  }

  private post(): void {
    if (!this.panel || !this.current) return;
    void this.panel.webview.postMessage({
      type: "profile",
      title: this.current.title,
      summary: this.current.rawSummary,
      speedscope: this.current.rawSpeedscope,
    });
  }

  private onMessage(m: unknown): void {
    if (isReady(m)) {
      this.ready = true;
      this.post();
      return;
    }
    const sel = parseSelectMessage(m);
    if (sel) void revealSource(sel.file, sel.line);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

/**
 * The custom editor for profile files (§(l.10)): opening `<stem>.speedscope.json` or
 * `<stem>.profile.json` shows the pair as a flame graph, `<stem>.diff.folded` the differential
 * view. Read-only; the file is read again each time the page (re)loads. `onProfile` is called
 * with each profile pair shown (the extension shows its heat and remembers it).
 */
export class ProfileEditorProvider implements vscode.CustomReadonlyEditorProvider {
  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly onProfile: (p: LoadedProfile) => void,
  ) {}

  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): void {
    const file = document.uri.fsPath;
    panel.webview.options = webviewOptions(this.extensionUri);
    panel.webview.onDidReceiveMessage((m: unknown) => {
      if (isReady(m)) {
        const { message, profile } = loadForEditor(file);
        void panel.webview.postMessage(message);
        if (profile) this.onProfile({ ...profile, title: profile.title });
        return;
      }
      const sel = parseSelectMessage(m);
      if (sel) void revealSource(sel.file, sel.line);
    });
    renderInto(panel.webview, this.extensionUri, `Profile: ${document.uri.fsPath.split(/[\\/]/).pop() ?? ""}`);
  }
}
