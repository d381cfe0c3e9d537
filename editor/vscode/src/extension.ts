/**
 * The Osprey profiler extension (docs/spec/profiler.md §(j), §(l.10)): commands
 * `osprey.profileCurrentFile`, `osprey.profiler.openLast` and `osprey.profiler.openFile`, the
 * flame-graph panel, the custom editor for profile files, the run settings, and the heat
 * decorations.
 */
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { HeatDecorations } from "./decorations";
import { exportPaths, loadProfile, siblingSummary, type LoadedProfile } from "./loader";
import { basename } from "./model/format";
import { isUserFile } from "./model/kind";
import { EDITOR_VIEW_TYPE, ProfileEditorProvider, ProfilerPanel } from "./panel";
import { ARGS_SETTING, CWD_SETTING, RATE_SETTING, SettingError, resolveRunSettings, type RunSettings } from "./runSettings";
import { exportStem, lastLines, makeRunDir, profileArgs, runProfile, type RunResult } from "./runner";

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
  outcome: "no-editor" | "not-osprey" | "untrusted" | "cancelled" | "failed" | "shown";
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

  // The run in flight, if any: a new run or deactivation cancels it (SIGINT, then SIGKILL).
  let inFlight: AbortController | null = null;
  // Runs cancelled because another started (or the extension stopped): their profile is not shown.
  const superseded = new WeakSet<AbortController>();

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
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showInformationMessage(
        "Osprey: profiling compiles and runs the program; trust this workspace to profile from it (viewing profiles works without).",
      );
      return { outcome: "untrusted" };
    }
    await doc.save();
    const source = doc.uri.fsPath;
    const stem = exportStem(source);
    const config = vscode.workspace.getConfiguration();
    let settings: RunSettings;
    try {
      settings = resolveRunSettings(
        { args: config.get(ARGS_SETTING), cwd: config.get(CWD_SETTING), rateHz: config.get(RATE_SETTING) },
        { workspaceFolder: vscode.workspace.getWorkspaceFolder(doc.uri)?.uri.fsPath, sourceDir: path.dirname(source) },
      );
    } catch (e) {
      const message = `Osprey: ${(e as Error).message}`;
      void vscode.window.showErrorMessage(message);
      return { outcome: "failed", message: e instanceof SettingError ? message : String(e) };
    }
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
    const osprey = config.get<string>("osprey.path", "osprey") || "osprey";
    const env = settings.rateHz !== undefined ? `OSPREY_PROFILE_HZ=${settings.rateHz} ` : "";
    output.appendLine(`$ ${env}${[osprey, ...profileArgs(source, path.join(dir, stem), settings.args)].map(quoteForLog).join(" ")}   (in ${settings.cwd})`);

    if (inFlight) {
      superseded.add(inFlight);
      inFlight.abort();
    }
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
          cwd: settings.cwd,
          runDir: dir,
          args: settings.args,
          rateHz: settings.rateHz,
          signal: abort.signal,
          onStdout: (t) => output.append(t),
          onStderr: (t) => output.append(t),
        });
      },
    );

    if (inFlight === abort) inFlight = null;
    const paths = exportPaths(dir, stem);
    if (result.outcome === "cancelled") {
      output.appendLine(
        result.killed
          ? "[cancelled: the run did not stop within 5 s of SIGINT and was killed]"
          : `[cancelled: SIGINT sent; exit status ${result.status}]`,
      );
      // SIGINT keeps the profile (§(l.5)): show what was written, unless another run replaced this one.
      if (!superseded.has(abort) && fs.existsSync(paths.summary) && fs.existsSync(paths.speedscope)) {
        try {
          const kept = loadProfile(paths.summary, paths.speedscope, basename(source));
          output.appendLine(`[profile: ${paths.speedscope}]`);
          void vscode.window.showInformationMessage(`Osprey: profiling of ${basename(source)} was cancelled; showing the profile up to that point.`);
          show(kept);
          return { outcome: "cancelled", dir, status: result.status, message: "shown" };
        } catch (e) {
          output.appendLine(`[${(e as Error).message}]`);
        }
      }
      removeDir(dir);
      return { outcome: "cancelled", dir, status: result.status };
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

  const editorProvider = new ProfileEditorProvider(context.extensionUri, (p) => {
    last = p;
    heat.setHotLines(p.summary.hotLines);
  });

  context.subscriptions.push(
    output,
    heat,
    { dispose: () => panel.dispose() },
    {
      dispose: () => {
        if (inFlight) superseded.add(inFlight);
        inFlight?.abort();
      },
    },
    vscode.window.registerCustomEditorProvider(EDITOR_VIEW_TYPE, editorProvider, {
      webviewOptions: { retainContextWhenHidden: true },
      supportsMultipleEditorsPerDocument: true,
    }),
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
