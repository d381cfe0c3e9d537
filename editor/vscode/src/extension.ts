/**
 * The Osprey profiler extension (docs/spec/profiler.md §(j)): commands `osprey.profileCurrentFile`,
 * `osprey.profiler.openLast` and `osprey.profiler.openFile`, the flame-graph panel and the
 * heat decorations.
 */
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { HeatDecorations } from "./decorations";
import { exportPaths, loadProfile, siblingSummary, type LoadedProfile } from "./loader";
import { basename } from "./model/format";
import { isUserFile } from "./model/kind";
import { ProfilerPanel } from "./panel";
import { exportStem, lastLines, makeRunDir, runProfile, type RunResult } from "./runner";

export const OUTPUT_CHANNEL = "Osprey Profiler";
const STDERR_TAIL_LINES = 12;

/** The extension's live state; exported for the tests through {@link activate}'s return. */
export interface ProfilerApi {
  profileCurrentFile(): Promise<ProfileRunReport>;
  openLast(): Promise<void>;
  openFile(uri?: vscode.Uri): Promise<void>;
  readonly last: LoadedProfile | null;
  readonly heat: HeatDecorations;
  readonly panel: ProfilerPanel;
}

/** What one run of the profile command did (for tests and logs). */
export interface ProfileRunReport {
  outcome: "no-editor" | "not-osprey" | "cancelled" | "failed" | "shown";
  dir?: string;
  status?: number;
  message?: string;
}

let api: ProfilerApi | null = null;

export function activate(context: vscode.ExtensionContext): ProfilerApi {
  const output = vscode.window.createOutputChannel(OUTPUT_CHANNEL);
  const heat = new HeatDecorations();
  const panel = new ProfilerPanel(context.extensionUri);
  let last: LoadedProfile | null = null;

  const show = (p: LoadedProfile): void => {
    last = p;
    panel.show(p);
    heat.setHotLines(p.summary.hotLines);
  };

  // The run in flight, if any: a new run or deactivation cancels it (kills its process group).
  let inFlight: AbortController | null = null;

  const profileCurrentFile = async (): Promise<ProfileRunReport> => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage("Osprey: open an .osp or .ospml file to profile it.");
      return { outcome: "no-editor" };
    }
    const doc = editor.document;
    if (doc.uri.scheme !== "file" || !isUserFile(doc.uri.fsPath)) {
      void vscode.window.showInformationMessage("Osprey: the active editor is not an .osp or .ospml file.");
      return { outcome: "not-osprey" };
    }
    await doc.save();
    const source = doc.uri.fsPath;
    const stem = exportStem(source);
    let dir: string;
    try {
      dir = makeRunDir();
    } catch (e) {
      const message = `Osprey: cannot create a temporary directory: ${(e as Error).message}`;
      void vscode.window.showErrorMessage(message);
      return { outcome: "failed", message };
    }
    output.show(true);
    heat.setHotLines(null);
    const osprey = vscode.workspace.getConfiguration().get<string>("osprey.path", "osprey") || "osprey";
    output.appendLine(`$ ${[osprey, source, "--run", "--profile"].map(quoteForLog).join(" ")}   (in ${dir})`);

    inFlight?.abort();
    const abort = new AbortController();
    inFlight = abort;
    const result: RunResult = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Profiling ${basename(source)}`,
        cancellable: true,
      },
      (_progress, token) => {
        token.onCancellationRequested(() => abort.abort());
        return runProfile({
          osprey,
          source,
          cwd: dir,
          signal: abort.signal,
          onStdout: (t) => output.append(t),
          onStderr: (t) => output.append(t),
        });
      },
    );

    if (inFlight === abort) inFlight = null;
    if (result.outcome === "cancelled") {
      output.appendLine("[cancelled: the process group was killed]");
      removeDir(dir);
      return { outcome: "cancelled", dir };
    }
    if (result.outcome === "failed") {
      const err = result.error as NodeJS.ErrnoException | undefined;
      const hint = err?.code === "ENOENT" ? ` — set "osprey.path" to the osprey executable` : "";
      const message = `Osprey: cannot run ${osprey}: ${err?.message ?? "unknown error"}${hint}`;
      output.appendLine(`[${message}]`);
      void vscode.window.showErrorMessage(message);
      removeDir(dir);
      return { outcome: "failed", dir, message };
    }
    output.appendLine(
      `[exit status ${result.status}${result.signalName ? ` (killed by ${result.signalName})` : ""}]`,
    );
    const paths = exportPaths(dir, stem);
    let loaded: LoadedProfile;
    try {
      loaded = loadProfile(paths.summary, paths.speedscope, basename(source));
    } catch (e) {
      // A missing export means the run went wrong: its stderr says why. A present but
      // malformed export is reported as such.
      const missing = !fs.existsSync(paths.summary) || !fs.existsSync(paths.speedscope);
      const tail = lastLines(result.stderr, STDERR_TAIL_LINES);
      const message =
        missing && tail.length > 0
          ? `Osprey: profiling ${basename(source)} failed (status ${result.status}):\n${tail.join("\n")}`
          : `Osprey: no profile was loaded: ${(e as Error).message}`;
      output.appendLine(`[${(e as Error).message}]`);
      void vscode.window.showErrorMessage(message);
      removeDir(dir);
      return { outcome: "failed", dir, status: result.status, message };
    }
    if (result.status !== 0) {
      void vscode.window.showWarningMessage(`The program exited with status ${result.status}; showing its profile.`);
    }
    output.appendLine(`[profile: ${paths.speedscope}]`);
    show(loaded);
    return { outcome: "shown", dir, status: result.status };
  };

  const openLast = async (): Promise<void> => {
    if (!last) {
      void vscode.window.showInformationMessage("Osprey: no profile yet. Run \"Osprey: Profile Current File\" first.");
      return;
    }
    show(last);
  };

  const openFile = async (uri?: vscode.Uri): Promise<void> => {
    let target = uri;
    if (!target) {
      const picked = await vscode.window.showOpenDialog({
        canSelectMany: false,
        filters: { "Speedscope profile": ["json"] },
        openLabel: "Open Profile",
      });
      if (!picked || picked.length === 0) return;
      target = picked[0];
    }
    const speedscope = target.fsPath;
    const summary = siblingSummary(speedscope);
    if (!summary) {
      void vscode.window.showErrorMessage(`Osprey: ${path.basename(speedscope)} is not a <stem>.speedscope.json file.`);
      return;
    }
    try {
      const p = loadProfile(summary, speedscope, "");
      const program = p.summary.program || p.speedscope.name || path.basename(speedscope);
      show({ ...p, title: basename(program) });
    } catch (e) {
      void vscode.window.showErrorMessage(`Osprey: cannot show the profile: ${(e as Error).message}`);
    }
  };

  context.subscriptions.push(
    output,
    heat,
    { dispose: () => panel.dispose() },
    { dispose: () => inFlight?.abort() },
    vscode.commands.registerCommand("osprey.profileCurrentFile", profileCurrentFile),
    vscode.commands.registerCommand("osprey.profiler.openLast", openLast),
    vscode.commands.registerCommand("osprey.profiler.openFile", openFile),
  );

  api = {
    profileCurrentFile,
    openLast,
    openFile,
    get last() {
      return last;
    },
    heat,
    panel,
  };
  return api;
}

export function deactivate(): void {
  api = null;
}

function quoteForLog(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

function removeDir(dir: string): void {
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    // Best effort: the directory is private and in the temporary area.
  }
}
