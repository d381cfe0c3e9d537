/**
 * The flame-graph panel (docs/spec/profiler.md §(j) "Panel"): one webview panel of view type
 * `ospreyProfiler`, data sent by postMessage, `select` messages opening the source.
 */
import * as crypto from "crypto";
import * as vscode from "vscode";
import type { LoadedProfile } from "./loader";
import { clampLine0, parseSelectMessage } from "./model/format";
import { makeNonce, renderPage } from "./webview/page";

export const VIEW_TYPE = "ospreyProfiler";

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
        enableScripts: true,
        retainContextWhenHidden: true,
        localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, "dist")],
      });
      this.panel = panel;
      panel.onDidDispose(() => {
        this.panel = null;
        this.ready = false;
      });
      panel.webview.onDidReceiveMessage((m: unknown) => this.onMessage(m));
      const script = panel.webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js"));
      panel.webview.html = renderPage({
        nonce: makeNonce((n) => crypto.randomBytes(n)),
        scriptUri: script.toString(),
        title,
      });
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
    if (typeof m === "object" && m !== null && (m as { type?: unknown }).type === "ready") {
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
