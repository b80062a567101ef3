/**
 * Gives a worker bundle back the `const`s its sources had.
 *
 * esbuild declares every top-level binding of a bundle with `var` (deliberately and without an
 * option: evanw/esbuild#623; its lazily initialised modules rely on `var` having no temporal dead
 * zone). V8 then cannot treat them as constants: a module-level `const` whose value never changes
 * is folded into optimised code, a `var` is loaded from the module context at every use. Measured on
 * Nexmark q0 in one worker thread, the bundle ran ~11 % slower per event than the same modules
 * loaded through tsx, and making the never-reassigned top-level bindings `const` again made it
 * 1.08-1.15× faster (docs/benchmarks.md).
 *
 * A top-level `var` becomes `const` only when that cannot change what the program does:
 * - every declarator of the statement is a plain name with an initialiser;
 * - no name of the statement is the target of an assignment, update or for-in/of head anywhere in
 *   the bundle (by name, in any scope: conservative, no scope analysis), and none is declared twice
 *   at top level;
 * - no name of the statement was written with `var` in any source file (esbuild may rename a
 *   binding to `name2` on a collision, so a numeric suffix is ignored when comparing): a source
 *   `var` may be read before its declaration ran (hoisting), which a `const` would turn into an
 *   error. A source `const`, `let`, `class` or function already had a temporal dead zone in the
 *   unbundled run, so making it `const` again restores the semantics the author wrote;
 * - the bundle has no direct `eval` or `with` (which could assign a name invisibly).
 *
 * Each change adds two characters to its line (`var` → `const`); the source map is shifted to match.
 * A bundle that does not parse, or whose map cannot be read, is returned unchanged.
 */
import { parse, type Node as AcornNode } from "acorn";

export interface ConstantBundle {
  readonly code: string;
  readonly map: string;
  /** How many `var` statements became `const`. */
  readonly converted: number;
}

/** Names that sources declare with `var` (a conservative scan of the text, comments and strings included). */
export function sourceVarNames(source: string, into: Set<string>): void {
  if (!source.includes("var")) return;
  const statement = /\bvar\s+([^;]*)/g;
  for (let m = statement.exec(source); m !== null; m = statement.exec(source)) {
    for (const name of m[1]!.matchAll(/[A-Za-z_$][\w$]*/g)) into.add(name[0]);
  }
}

/**
 * Where the `var` statements that can become `const` start in `code` (offsets, ascending): the
 * expensive half (parsing and walking the bundle, ~0.2 s warm for Eddy's ~0.8 MB), which
 * worker-bundle.ts caches across processes by the hash of `code` and `sourceVars`.
 */
export function constantStatements(code: string, sourceVars: ReadonlySet<string>): number[] {
  let program: AcornNode;
  try {
    program = parse(code, { ecmaVersion: "latest", sourceType: "module" });
  } catch {
    return [];
  }
  const scan = new Scan();
  scan.visit(program);
  if (scan.opaque) return [];

  const declared = new Map<string, number>();
  const body = (program as unknown as { body: Statement[] }).body;
  for (const statement of body) {
    for (const name of topLevelNames(statement)) declared.set(name, (declared.get(name) ?? 0) + 1);
  }
  const eligible = (d: Declarator): boolean => {
    if (d.id.type !== "Identifier" || d.init === null) return false;
    const name = d.id.name!;
    return !scan.assigned.has(name) && declared.get(name) === 1 && !sourceVars.has(name) && !sourceVars.has(name.replace(/\d+$/, ""));
  };
  const offsets: number[] = [];
  for (const statement of body) {
    if (statement.type !== "VariableDeclaration" || statement.kind !== "var") continue;
    if (code.startsWith("var", statement.start) && statement.declarations!.every(eligible)) offsets.push(statement.start);
  }
  return offsets;
}

/**
 * `code` with the `var` at each of `offsets` (from constantStatements over this very `code`) made
 * `const`, and `map` shifted to match. Unchanged if an offset is not a `var` keyword (offsets from
 * another bundle) or the map cannot be read.
 */
export function applyConstants(code: string, map: string, offsets: readonly number[]): ConstantBundle {
  const unchanged = { code, map, converted: 0 };
  const starts: Array<{ line: number; column: number }> = [];
  const parts: string[] = [];
  let line = 0;
  let lineStart = 0;
  let from = 0;
  for (const offset of offsets) {
    if (offset < from || !/^var[\s{[]/.test(code.slice(offset, offset + 4)) || /[\w$]/.test(code[offset - 1] ?? " ")) return unchanged;
    // Offsets ascend: count the lines up to this one.
    for (let nl = code.indexOf("\n", lineStart); nl !== -1 && nl < offset; nl = code.indexOf("\n", lineStart)) {
      line++;
      lineStart = nl + 1;
    }
    starts.push({ line, column: offset - lineStart });
    parts.push(code.slice(from, offset), "const");
    from = offset + 3;
  }
  if (starts.length === 0) return unchanged;
  parts.push(code.slice(from));
  try {
    return { code: parts.join(""), map: shiftMap(map, starts), converted: starts.length };
  } catch {
    return unchanged;
  }
}

interface Statement extends AcornNode {
  kind?: string;
  declarations?: Declarator[];
  id?: { type: string; name: string } | null;
  specifiers?: Array<{ local: { name: string } }>;
}
interface Declarator {
  id: Pattern;
  init: AcornNode | null;
}
type Pattern = AcornNode & {
  name?: string;
  left?: Pattern;
  argument?: Pattern;
  elements?: Array<Pattern | null>;
  properties?: Array<{ type: string; value?: Pattern; argument?: Pattern }>;
};

function topLevelNames(statement: Statement): string[] {
  switch (statement.type) {
    case "VariableDeclaration": {
      const names: string[] = [];
      for (const d of statement.declarations!) patternNames(d.id, names);
      return names;
    }
    case "FunctionDeclaration":
    case "ClassDeclaration":
      return statement.id == null ? [] : [statement.id.name];
    case "ImportDeclaration":
      return statement.specifiers!.map((s) => s.local.name);
    default:
      return [];
  }
}

/** The names a binding or assignment pattern writes (member expressions write none). */
function patternNames(pattern: Pattern | null | undefined, into: string[] | Set<string>): void {
  if (pattern == null) return;
  const add = (name: string) => (Array.isArray(into) ? into.push(name) : into.add(name));
  switch (pattern.type) {
    case "Identifier":
      add(pattern.name!);
      return;
    case "ObjectPattern":
      for (const p of pattern.properties!) patternNames(p.type === "RestElement" ? p.argument : p.value, into);
      return;
    case "ArrayPattern":
      for (const e of pattern.elements!) patternNames(e, into);
      return;
    case "RestElement":
      patternNames(pattern.argument, into);
      return;
    case "AssignmentPattern":
      patternNames(pattern.left, into);
      return;
    case "ParenthesizedExpression":
      patternNames((pattern as unknown as { expression: Pattern }).expression, into);
      return;
    default:
      return;
  }
}

/** One walk over the whole tree: every assigned name, and whether anything makes names opaque. */
class Scan {
  readonly assigned = new Set<string>();
  opaque = false;

  visit(node: AcornNode): void {
    const n = node as AcornNode & Record<string, unknown>;
    switch (n.type) {
      case "AssignmentExpression":
        patternNames(n.left as Pattern, this.assigned);
        break;
      case "UpdateExpression":
        patternNames(n.argument as Pattern, this.assigned);
        break;
      case "ForInStatement":
      case "ForOfStatement":
        if ((n.left as AcornNode).type !== "VariableDeclaration") patternNames(n.left as Pattern, this.assigned);
        break;
      case "WithStatement":
        this.opaque = true;
        break;
      case "CallExpression": {
        const callee = n.callee as Pattern;
        if (callee.type === "Identifier" && callee.name === "eval") this.opaque = true;
        break;
      }
    }
    const keys = CHILD_KEYS[n.type] ?? Object.keys(n);
    for (let k = 0; k < keys.length; k++) {
      const value = n[keys[k]!] as AcornNode | Array<AcornNode | null> | null | undefined;
      if (value == null || typeof value !== "object") continue;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const child = value[i];
          if (child != null) this.visit(child);
        }
      } else if (typeof value.type === "string") {
        this.visit(value);
      }
    }
  }
}

/**
 * ESTree's children per node type, where a name can be assigned (labels, import and export
 * specifiers, template strings hold none). A type not listed has all its keys walked.
 */
const CHILD_KEYS: Readonly<Record<string, readonly string[]>> = {
  Program: ["body"], ExpressionStatement: ["expression"], BlockStatement: ["body"], StaticBlock: ["body"],
  EmptyStatement: [], DebuggerStatement: [], WithStatement: ["object", "body"], ReturnStatement: ["argument"],
  LabeledStatement: ["body"], BreakStatement: [], ContinueStatement: [], IfStatement: ["test", "consequent", "alternate"],
  SwitchStatement: ["discriminant", "cases"], SwitchCase: ["test", "consequent"], ThrowStatement: ["argument"],
  TryStatement: ["block", "handler", "finalizer"], CatchClause: ["param", "body"], WhileStatement: ["test", "body"],
  DoWhileStatement: ["body", "test"], ForStatement: ["init", "test", "update", "body"], ForInStatement: ["left", "right", "body"],
  ForOfStatement: ["left", "right", "body"], FunctionDeclaration: ["params", "body"], FunctionExpression: ["params", "body"],
  ArrowFunctionExpression: ["params", "body"], VariableDeclaration: ["declarations"], VariableDeclarator: ["id", "init"],
  ClassDeclaration: ["superClass", "body"], ClassExpression: ["superClass", "body"], ClassBody: ["body"],
  MethodDefinition: ["key", "value"], PropertyDefinition: ["key", "value"], ThisExpression: [], Super: [], Identifier: [],
  PrivateIdentifier: [], Literal: [], MetaProperty: [], ArrayExpression: ["elements"], ObjectExpression: ["properties"],
  Property: ["key", "value"], SpreadElement: ["argument"], UnaryExpression: ["argument"], UpdateExpression: ["argument"],
  AwaitExpression: ["argument"], YieldExpression: ["argument"], BinaryExpression: ["left", "right"],
  LogicalExpression: ["left", "right"], AssignmentExpression: ["left", "right"], MemberExpression: ["object", "property"],
  ChainExpression: ["expression"], ConditionalExpression: ["test", "consequent", "alternate"], CallExpression: ["callee", "arguments"],
  NewExpression: ["callee", "arguments"], SequenceExpression: ["expressions"], TemplateLiteral: ["expressions"],
  TaggedTemplateExpression: ["tag", "quasi"], ObjectPattern: ["properties"], ArrayPattern: ["elements"], RestElement: ["argument"],
  AssignmentPattern: ["left", "right"], ImportDeclaration: [], ExportNamedDeclaration: ["declaration"],
  ExportDefaultDeclaration: ["declaration"], ExportAllDeclaration: [], ImportExpression: ["source", "options"],
  ParenthesizedExpression: ["expression"],
};

// Source maps: generated columns are base64 VLQ deltas within a line, so moving everything after
// `var` two columns right means adding 2 to the first segment of that line past the keyword.

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DIGIT = new Map([...BASE64].map((c, i) => [c, i]));

function shiftMap(mapText: string, starts: ReadonlyArray<{ line: number; column: number }>): string {
  const map = JSON.parse(mapText) as { mappings: unknown };
  if (typeof map.mappings !== "string") throw new Error("a source map without mappings");
  const lines = map.mappings.split(";");
  for (const { line, column } of starts) {
    if (line >= lines.length || lines[line] === "") continue;
    const segments = lines[line]!.split(",");
    let at = 0;
    for (let i = 0; i < segments.length; i++) {
      const [delta, used] = readVlq(segments[i]!);
      at += delta;
      if (at >= column + 3) {
        segments[i] = writeVlq(delta + 2) + segments[i]!.slice(used);
        break;
      }
    }
    lines[line] = segments.join(",");
  }
  map.mappings = lines.join(";");
  return JSON.stringify(map);
}

/** The first VLQ value of `segment`, and how many characters it took. */
export function readVlq(segment: string): [value: number, used: number] {
  let result = 0;
  let shift = 0;
  let i = 0;
  for (;;) {
    const digit = DIGIT.get(segment[i++]!);
    if (digit === undefined) throw new Error(`bad source map segment ${JSON.stringify(segment)}`);
    result += (digit & 31) * 2 ** shift;
    shift += 5;
    if ((digit & 32) === 0) break;
  }
  return [result % 2 === 1 ? -(result - 1) / 2 : result / 2, i];
}

export function writeVlq(value: number): string {
  let v = value < 0 ? -value * 2 + 1 : value * 2;
  let out = "";
  do {
    let digit = v % 32;
    v = Math.floor(v / 32);
    if (v > 0) digit |= 32;
    out += BASE64[digit];
  } while (v > 0);
  return out;
}
