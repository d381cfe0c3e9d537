/**
 * A stand-in for the `vscode` module: just enough of the API for the extension's command,
 * panel and decoration logic, recording every call so tests can assert on it.
 */
import * as fs from "fs";
import * as path from "path";

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (l: Listener<T>): { dispose(): void } => {
    this.listeners.push(l);
    return { dispose: () => (this.listeners = this.listeners.filter((x) => x !== l)) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
}

export class Uri {
  private constructor(readonly scheme: string, readonly fsPath: string) {}
  static file(p: string): Uri {
    return new Uri("file", path.resolve(p));
  }
  static parse(s: string): Uri {
    return new Uri(s.split(":")[0], s);
  }
  static joinPath(u: Uri, ...parts: string[]): Uri {
    return new Uri(u.scheme, path.join(u.fsPath, ...parts));
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class Position {
  constructor(readonly line: number, readonly character: number) {}
}
export class Range {
  constructor(readonly start: Position, readonly end: Position) {}
}
export class Selection extends Range {
  constructor(readonly anchor: Position, readonly active: Position) {
    super(anchor, active);
  }
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
  Two = 2,
}
export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}
export enum OverviewRulerLane {
  Left = 1,
  Center = 2,
  Right = 4,
  Full = 7,
}
export enum DecorationRangeBehavior {
  OpenOpen = 0,
  ClosedClosed = 1,
}
export enum TextEditorRevealType {
  Default = 0,
  InCenter = 2,
}

export class FakeDocument {
  saved = 0;
  readonly lines: string[];
  constructor(readonly uri: Uri, text: string) {
    this.lines = text.split("\n");
  }
  get lineCount(): number {
    return this.lines.length;
  }
  lineAt(i: number): { range: Range; text: string } {
    if (i < 0 || i >= this.lines.length) throw new Error(`line ${i} out of range`);
    return { text: this.lines[i], range: new Range(new Position(i, 0), new Position(i, this.lines[i].length)) };
  }
  async save(): Promise<boolean> {
    this.saved++;
    return true;
  }
}

export class FakeEditor {
  decorations = new Map<unknown, { range: Range; renderOptions?: { after?: { contentText?: string } } }[]>();
  selection: Selection | null = null;
  revealed: { range: Range; type: TextEditorRevealType }[] = [];
  constructor(readonly document: FakeDocument, public viewColumn = 1) {}
  setDecorations(type: unknown, ranges: { range: Range }[]): void {
    this.decorations.set(type, ranges as never);
  }
  revealRange(range: Range, type: TextEditorRevealType): void {
    this.revealed.push({ range, type });
  }
}

export class FakeWebviewPanel {
  disposed = false;
  title: string;
  revealed: unknown[] = [];
  readonly posted: unknown[] = [];
  private readonly receive = new EventEmitter<unknown>();
  private readonly disposeEmitter = new EventEmitter<void>();
  readonly webview = {
    html: "",
    options: {} as unknown,
    cspSource: "vscode-webview://stub",
    postMessage: async (m: unknown): Promise<boolean> => {
      this.posted.push(m);
      return true;
    },
    onDidReceiveMessage: this.receive.event,
    asWebviewUri: (u: Uri): Uri => Uri.parse(`vscode-webview://stub${u.fsPath}`),
  };
  onDidDispose = this.disposeEmitter.event;
  constructor(readonly viewType: string, title: string, readonly showOptions: unknown, readonly options: unknown) {
    this.title = title;
  }
  reveal(column?: unknown, preserveFocus?: boolean): void {
    this.revealed.push([column, preserveFocus]);
  }
  dispose(): void {
    this.disposed = true;
    this.disposeEmitter.fire();
  }
  /** Simulates a message posted by the page. */
  fromPage(m: unknown): void {
    this.receive.fire(m);
  }
}

export interface Recorded {
  info: string[];
  warnings: string[];
  errors: string[];
  output: string[];
  outputShown: number;
  progress: { options: unknown; cancel: () => void }[];
  panels: FakeWebviewPanel[];
  decorationTypes: { options: Record<string, unknown>; disposed: boolean }[];
  shown: { document: FakeDocument; options: unknown }[];
  commands: Map<string, (...args: unknown[]) => unknown>;
  settings: Map<string, unknown>;
  openDialogResult: Uri[] | undefined;
  customEditors: Map<string, { provider: unknown; options: unknown }>;
}

export const recorded: Recorded = {
  info: [],
  warnings: [],
  errors: [],
  output: [],
  outputShown: 0,
  progress: [],
  panels: [],
  decorationTypes: [],
  shown: [],
  commands: new Map(),
  settings: new Map(),
  openDialogResult: undefined,
  customEditors: new Map(),
};

const visibleEditorsChanged = new EventEmitter<FakeEditor[]>();
const configurationChanged = new EventEmitter<{ affectsConfiguration(s: string): boolean }>();

export const window = {
  activeTextEditor: undefined as FakeEditor | undefined,
  visibleTextEditors: [] as FakeEditor[],
  async showInformationMessage(m: string): Promise<undefined> {
    recorded.info.push(m);
    return undefined;
  },
  async showWarningMessage(m: string): Promise<undefined> {
    recorded.warnings.push(m);
    return undefined;
  },
  async showErrorMessage(m: string): Promise<undefined> {
    recorded.errors.push(m);
    return undefined;
  },
  createOutputChannel(name: string) {
    return {
      name,
      append: (t: string) => recorded.output.push(t),
      appendLine: (t: string) => recorded.output.push(t + "\n"),
      show: () => recorded.outputShown++,
      dispose: () => undefined,
    };
  },
  withProgress<T>(options: unknown, task: (p: unknown, token: unknown) => Promise<T>): Promise<T> {
    const cancelled = new EventEmitter<void>();
    let isCancellationRequested = false;
    recorded.progress.push({
      options,
      cancel: () => {
        isCancellationRequested = true;
        cancelled.fire();
      },
    });
    const token = {
      get isCancellationRequested() {
        return isCancellationRequested;
      },
      onCancellationRequested: cancelled.event,
    };
    return task({ report: () => undefined }, token);
  },
  createTextEditorDecorationType(options: Record<string, unknown>) {
    const t = { options, disposed: false, dispose: () => (t.disposed = true) };
    recorded.decorationTypes.push(t);
    return t;
  },
  onDidChangeVisibleTextEditors: visibleEditorsChanged.event,
  createWebviewPanel(viewType: string, title: string, showOptions: unknown, options: unknown): FakeWebviewPanel {
    const p = new FakeWebviewPanel(viewType, title, showOptions, options);
    recorded.panels.push(p);
    return p;
  },
  async showTextDocument(document: FakeDocument, options: unknown): Promise<FakeEditor> {
    recorded.shown.push({ document, options });
    return new FakeEditor(document);
  },
  async showOpenDialog(): Promise<Uri[] | undefined> {
    return recorded.openDialogResult;
  },
  registerCustomEditorProvider(viewType: string, provider: unknown, options: unknown) {
    recorded.customEditors.set(viewType, { provider, options });
    return { dispose: () => recorded.customEditors.delete(viewType) };
  },
};

export const workspace = {
  isTrusted: true,
  /** Folders by path; getWorkspaceFolder finds the one containing a file. */
  workspaceFolders: [] as { uri: Uri; name: string; index: number }[],
  getWorkspaceFolder(uri: Uri): { uri: Uri; name: string; index: number } | undefined {
    return workspace.workspaceFolders.find((f) => uri.fsPath === f.uri.fsPath || uri.fsPath.startsWith(f.uri.fsPath + path.sep));
  },
  getConfiguration() {
    return {
      get<T>(key: string, fallback: T): T {
        return recorded.settings.has(key) ? (recorded.settings.get(key) as T) : fallback;
      },
    };
  },
  onDidChangeConfiguration: configurationChanged.event,
  async openTextDocument(uri: Uri): Promise<FakeDocument> {
    return new FakeDocument(uri, fs.readFileSync(uri.fsPath, "utf8"));
  },
};

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown) {
    recorded.commands.set(id, fn);
    return { dispose: () => recorded.commands.delete(id) };
  },
};

/** Test controls that are not part of the vscode API. */
export const testing = {
  setVisibleEditors(editors: FakeEditor[]): void {
    window.visibleTextEditors = editors;
    visibleEditorsChanged.fire(editors);
  },
  setSetting(key: string, value: unknown): void {
    recorded.settings.set(key, value);
    configurationChanged.fire({ affectsConfiguration: (s: string) => key === s || key.startsWith(s + ".") });
  },
  reset(): void {
    recorded.info.length = 0;
    recorded.warnings.length = 0;
    recorded.errors.length = 0;
    recorded.output.length = 0;
    recorded.progress.length = 0;
    recorded.shown.length = 0;
  },
};
