/**
 * Heat decorations in the editors (docs/spec/profiler.md §(j) "Heat decorations"): one decoration type
 * per colour tier, after-line text, a mark in the right overview-ruler lane.
 */
import * as vscode from "vscode";
import { HEAT_TIERS, heatMarksFor, hostPathEnv, indexHotLines, type PathEnv } from "./model/heat";
import type { HotLine } from "./model/types";

export const INLINE_HEAT_SETTING = "osprey.profiler.inlineHeat";

/** Owns the decoration types and the hot lines of the profile last shown. */
export class HeatDecorations implements vscode.Disposable {
  private readonly types: vscode.TextEditorDecorationType[];
  private index: Map<string, HotLine[]> | null = null;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly env: PathEnv = hostPathEnv) {
    this.types = HEAT_TIERS.map((t) =>
      vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        overviewRulerColor: t.color,
        overviewRulerLane: vscode.OverviewRulerLane.Right,
        after: { color: t.color, fontStyle: "italic", margin: "0 0 0 1em" },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
      }),
    );
    this.subscriptions.push(
      vscode.window.onDidChangeVisibleTextEditors(() => this.refresh()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(INLINE_HEAT_SETTING)) this.refresh();
      }),
    );
  }

  /** Replaces the hot lines (null clears them) and redraws every visible editor. */
  setHotLines(hotLines: readonly HotLine[] | null): void {
    this.index = hotLines ? indexHotLines(hotLines, this.env) : null;
    this.refresh();
  }

  /** True while hot lines are held (whether or not the setting shows them). */
  get hasHotLines(): boolean {
    return this.index !== null;
  }

  private enabled(): boolean {
    return vscode.workspace.getConfiguration().get<boolean>(INLINE_HEAT_SETTING, true) !== false;
  }

  /** Recomputes the decorations of all visible editors. */
  refresh(): void {
    const show = this.index !== null && this.enabled();
    for (const editor of vscode.window.visibleTextEditors) {
      const perTier: vscode.DecorationOptions[][] = this.types.map(() => []);
      if (show && this.index && editor.document.uri.scheme === "file") {
        const marks = heatMarksFor(this.index, editor.document.uri.fsPath, editor.document.lineCount, this.env);
        for (const m of marks) {
          const line = editor.document.lineAt(m.line0);
          perTier[m.tier].push({
            range: new vscode.Range(line.range.end, line.range.end),
            renderOptions: { after: { contentText: m.text } },
          });
        }
      }
      this.types.forEach((t, i) => editor.setDecorations(t, perTier[i]));
    }
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
    for (const t of this.types) t.dispose();
  }
}
