/**
 * The Osprey TextMate grammar (syntaxes/osprey.tmLanguage.json, docs/spec/profiler.md §(l.10))
 * run through the tokenizer VS Code itself uses (vscode-textmate + vscode-oniguruma): every
 * `.osp` file under examples/ and test/programs/ tokenises with no region left open at the end
 * of the file and no `invalid` token, and the scopes of the language's constructs are right.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { before, test } from "node:test";
import * as oniguruma from "vscode-oniguruma";
import * as textmate from "vscode-textmate";
import { ROOT } from "../support/paths";

const REPO = path.resolve(ROOT, "..", "..");
const GRAMMAR = path.join(ROOT, "syntaxes", "osprey.tmLanguage.json");
let grammar: textmate.IGrammar;

before(async () => {
  const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) as ArrayBuffer);
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns: string[]) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s: string) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName: string) =>
      scopeName === "source.osprey" ? textmate.parseRawGrammar(fs.readFileSync(GRAMMAR, "utf8"), GRAMMAR) : null,
  });
  const g = await registry.loadGrammar("source.osprey");
  assert.ok(g, "the grammar loads");
  grammar = g;
});

interface Tok {
  text: string;
  scopes: string[];
  line: number;
  col: number;
}

/** Tokenises `text`; returns the tokens and the rule-stack depth after the last line (1 = nothing open). */
function tokenize(text: string): { tokens: Tok[]; depth: number } {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  let stack = textmate.INITIAL;
  const tokens: Tok[] = [];
  lines.forEach((line, i) => {
    const r = grammar.tokenizeLine(line, stack);
    for (const t of r.tokens) tokens.push({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes, line: i + 1, col: t.startIndex + 1 });
    stack = r.ruleStack;
  });
  return { tokens, depth: stack.depth };
}

/** The innermost scope of the first token whose text is `text`. */
function scopeOf(tokens: Tok[], text: string): string {
  const t = tokens.find((x) => x.text === text);
  assert.ok(t, `no token ${JSON.stringify(text)} in ${JSON.stringify(tokens.map((x) => x.text))}`);
  return t.scopes[t.scopes.length - 1];
}

function ospFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...ospFiles(p));
    else if (e.name.endsWith(".osp")) out.push(p);
  }
  return out.sort();
}

test("every .osp file under examples/ and test/programs/ tokenises with no unmatched scope", () => {
  const files = [...ospFiles(path.join(REPO, "examples")), ...ospFiles(path.join(REPO, "test", "programs"))];
  assert.ok(files.length > 100, `only ${files.length} files found under ${REPO}`);
  const problems: string[] = [];
  for (const f of files) {
    const { tokens, depth } = tokenize(fs.readFileSync(f, "utf8"));
    const rel = path.relative(REPO, f);
    for (const t of tokens) {
      if (t.scopes.some((s) => s.startsWith("invalid"))) problems.push(`${rel}:${t.line}:${t.col}: invalid token ${JSON.stringify(t.text)}`);
    }
    if (depth !== 1) problems.push(`${rel}: ${depth - 1} region(s) still open at the end of the file`);
  }
  assert.deepEqual(problems, []);
});

test("scopes of comments, strings, interpolation, keywords, numbers and declarations", () => {
  const src = [
    "/// Doc comment",
    "// plain comment",
    'fn greet(name: string) -> string = "hi ${name}! \\n ${match n { 1 => "one"  _ => f(\\"x\\") }}"',
    "let mut total = 1.5 + 42 ?: 0",
    "type Shape = Circle(int) | Square(int)",
    "effect Log { say: fn(string) -> Unit }",
    "let xs = range(0, 10) |> map(fn(x) => x * 2)",
    "spawn work()  await h  yield  true false",
  ].join("\n");
  const { tokens, depth } = tokenize(src);
  assert.equal(depth, 1);
  assert.deepEqual(tokens.filter((t) => t.scopes.some((s) => s.startsWith("invalid"))), []);
  assert.equal(scopeOf(tokens, "/// Doc comment"), "comment.line.documentation.osprey");
  assert.equal(scopeOf(tokens, "// plain comment"), "comment.line.double-slash.osprey");
  assert.equal(scopeOf(tokens, "fn"), "keyword.declaration.function.osprey");
  assert.equal(scopeOf(tokens, "greet"), "entity.name.function.osprey");
  assert.equal(scopeOf(tokens, "string"), "support.type.primitive.osprey");
  assert.equal(scopeOf(tokens, "hi "), "string.quoted.double.osprey");
  assert.equal(scopeOf(tokens, "${"), "punctuation.section.interpolation.begin.osprey");
  assert.ok(tokens.find((t) => t.text === "name" && t.scopes.includes("meta.interpolation.osprey")), "code inside ${…}");
  assert.equal(scopeOf(tokens, "\\n"), "constant.character.escape.osprey");
  assert.ok(tokens.find((t) => t.text === "one" && t.scopes.filter((s) => s.startsWith("string.quoted")).length === 2), "a string inside an interpolation");
  assert.ok(tokens.find((t) => t.text === "x" && t.scopes.includes("string.quoted.double.escaped.osprey")), "an escaped-quote string inside an interpolation");
  assert.equal(scopeOf(tokens, "match"), "keyword.control.osprey");
  assert.equal(scopeOf(tokens, "let"), "keyword.declaration.variable.osprey");
  assert.equal(scopeOf(tokens, "total"), "variable.other.declaration.osprey");
  assert.equal(scopeOf(tokens, "1.5"), "constant.numeric.float.osprey");
  assert.equal(scopeOf(tokens, "42"), "constant.numeric.integer.osprey");
  assert.equal(scopeOf(tokens, "?:"), "keyword.operator.elvis.osprey");
  assert.equal(scopeOf(tokens, "Shape"), "entity.name.type.osprey");
  assert.equal(scopeOf(tokens, "Circle"), "entity.name.type.osprey");
  assert.equal(scopeOf(tokens, "Log"), "entity.name.type.osprey");
  assert.equal(scopeOf(tokens, "|>"), "keyword.operator.pipe.osprey");
  assert.equal(scopeOf(tokens, "range"), "entity.name.function.call.osprey");
  assert.equal(scopeOf(tokens, "=>"), "keyword.operator.arrow.osprey");
  for (const k of ["spawn", "await", "yield"]) assert.equal(scopeOf(tokens, k), "keyword.control.osprey");
  assert.equal(scopeOf(tokens, "true"), "constant.language.boolean.osprey");
});

test("an unterminated string or block stays open, and a stray character is invalid", () => {
  assert.ok(tokenize('let s = "never closed\nlet t = 1').depth > 1);
  assert.ok(tokenize("fn f() = {\n  1\n").depth > 1);
  const { tokens } = tokenize("let x = 1 # 2");
  assert.equal(scopeOf(tokens, "#"), "invalid.illegal.character.osprey");
  assert.equal(tokenize("}").tokens[0].scopes.at(-1), "invalid.illegal.character.osprey");
});

test("the language configuration: // comments and the three bracket pairs", () => {
  const conf = JSON.parse(fs.readFileSync(path.join(ROOT, "language-configuration.json"), "utf8"));
  assert.deepEqual(conf.comments, { lineComment: "//" });
  assert.deepEqual(conf.brackets, [["{", "}"], ["[", "]"], ["(", ")"]]);
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
  for (const l of pkg.contributes.languages) assert.equal(l.configuration, "./language-configuration.json");
  assert.deepEqual(
    pkg.contributes.grammars.map((g: { language: string; scopeName: string; path: string }) => [g.language, g.scopeName, g.path]),
    [["osprey", "source.osprey", "./syntaxes/osprey.tmLanguage.json"], ["osprey-ml", "source.osprey", "./syntaxes/osprey.tmLanguage.json"]],
  );
});

test("every reserved word of language.md §1.3 is a keyword", () => {
  const spec = fs.readFileSync(path.join(REPO, "docs", "spec", "language.md"), "utf8");
  const m = spec.match(/Reserved: `([^`]+)`/);
  assert.ok(m, "the reserved-word list in language.md §1.3");
  const words = m[1].split(/\s+/).filter(Boolean);
  assert.ok(words.length > 20);
  for (const w of words) {
    const s = tokenize(`${w}`).tokens[0].scopes.at(-1) ?? "";
    assert.ok(/^keyword\.|^constant\.language\./.test(s), `${w}: ${s}`);
  }
});
