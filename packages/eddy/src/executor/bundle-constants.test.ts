/**
 * bundle-constants.ts turns a bundle's never-reassigned top-level `var`s back into `const`: only
 * where that cannot change what the program does, with the source map still pointing every column
 * at its original place.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { build } from "esbuild";
import { applyConstants, constantStatements, readVlq, sourceVarNames, writeVlq, type ConstantBundle } from "./bundle-constants.ts";

/** `code` with its eligible top-level `var`s made `const`, and `map` shifted to match (as worker-bundle.ts does). */
function constantTopLevel(code: string, map: string, sourceVars: ReadonlySet<string>): ConstantBundle {
  return applyConstants(code, map, constantStatements(code, sourceVars));
}

/** The names a transformed bundle declares with `const` at top level. */
function constNames(code: string): string[] {
  return [...code.matchAll(/^const ([\w$]+)/gm)].map((m) => m[1]!).sort();
}

/** Evaluates an ES module's text and returns its exports (functions and classes as their source text). */
async function evaluate(code: string): Promise<Record<string, unknown>> {
  const exports = (await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`)) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(exports).map(([k, v]) => [k, typeof v === "function" ? String(v) : v]));
}

test("only top-level vars that are never assigned, declared once, initialised and not a source's var become const", async () => {
  const code = [
    "var kept = 1;",
    "var assigned = 1;",
    "var compound = 1, plain = 2;",
    "var updated = 0;",
    "var destructured = 0;", "var inArray = 0;", "var inObject = 0;", "var rest = 0;", "var inDefault = 0;",
    "var forOf = 0;", "var forIn = 0;", "var notAssigned = 0;",
    "var uninitialised;",
    "var fromSourceVar = 3;", "var renamedSourceVar2 = 4;",
    "var duplicate = 1;",
    "function duplicateFn() {}",
    "var pattern = { a: 1 }, { a: fromPattern } = pattern;",
    "var klass = class { static make() { return new klass(); } };",
    "var shadowedAssign = 1;",
    "function f() { let shadowedAssign = 2; shadowedAssign = 3; return shadowedAssign; }",
    "assigned = 2; compound += 1; updated++;",
    "[destructured, [inArray]] = [1, [2]]; ({ a: { inObject }, ...rest } = { a: { inObject: 1 } }); [inDefault = 5] = []; ({ notAssigned: destructured } = { notAssigned: 4 });",
    "for (forOf of [1]) {} for (forIn in { a: 1 }) {}",
    "uninitialised = 7;",
    "var duplicate = 2;",
    "export { kept, notAssigned, assigned, compound, plain, updated, destructured, inArray, inObject, rest, inDefault, forOf, forIn, uninitialised, fromSourceVar, renamedSourceVar2, duplicate, duplicateFn, fromPattern, klass, f };",
  ].join("\n");
  const map = JSON.stringify({ version: 3, sources: ["x.ts"], names: [], mappings: "" });
  const out = constantTopLevel(code, map, new Set(["fromSourceVar", "renamedSourceVar"]));
  // "compound, plain" share a statement with an assigned name; "pattern" shares one with a pattern;
  // a name assigned in any scope counts, even a shadowed one.
  assert.deepEqual(constNames(out.code), ["kept", "klass", "notAssigned"]);
  assert.equal(out.converted, 3);
  assert.deepEqual(await evaluate(out.code), await evaluate(code), "same exports, same values");
});

test("a bundle with a direct eval or with, or that does not parse, is returned unchanged", () => {
  const map = JSON.stringify({ version: 3, sources: ["x.ts"], names: [], mappings: "AAAA" });
  for (const code of ["var a = 1; eval('a');", "var a = 1; var o = {}; function g() { with (o) { a; } }", "var a = 1; var = ;"]) {
    const out = constantTopLevel(code, map, new Set());
    assert.equal(out.code, code);
    assert.equal(out.converted, 0);
  }
  // Indirect eval cannot see module bindings: no reason to give up.
  assert.equal(constantTopLevel("var a = 1; (0, eval)('1');", map, new Set()).converted, 1);
  // A map that cannot be read: the bundle stays as built rather than have columns point elsewhere.
  assert.equal(constantTopLevel("var a = 1;", "{}", new Set()).converted, 0);
});

test("sourceVarNames collects every name of a var statement, patterns included", () => {
  const names = new Set<string>();
  sourceVarNames("const a = 1;\nvar b = 2, { c, d: e } = x;\nlet variable = 3; // var f", names);
  for (const n of ["b", "c", "d", "e", "x", "f"]) assert.ok(names.has(n), n);
  assert.ok(!names.has("a") && !names.has("variable"));
});

test("VLQ values read back as written", () => {
  for (const v of [0, 1, -1, 15, 16, -16, 31, 32, 1023, -1024, 123456789, -987654321]) {
    const text = writeVlq(v);
    assert.deepEqual(readVlq(`${text}AAA`), [v, text.length]);
  }
});

test("on a real esbuild bundle every column still maps to its original place, and the code does the same", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-bundle-constants-"));
  try {
    writeFileSync(join(dir, "a.ts"), 'export const LIMIT = 10;\nexport class Box { constructor(readonly v: number) {} twice() { return new Box(this.v * 2); } }\nexport let counter = 0;\nexport function bump() { counter++; return counter; }\n');
    writeFileSync(join(dir, "b.js"), "export var legacy = hoisted();\nfunction hoisted() { return typeof later; }\nvar later = 1;\nexport const tags = ['x', 'y'].map((t) => t + LIMIT2);\nvar LIMIT2 = 2;\n");
    writeFileSync(
      join(dir, "main.ts"),
      'import { LIMIT, Box, bump } from "./a.ts";\nimport { legacy, tags } from "./b.js";\nconst boxes = [1, 2, 3].map((n) => new Box(n).twice());\nexport const result = { sum: boxes.reduce((s, b) => s + b.v, 0) + LIMIT, bumped: [bump(), bump()], legacy, tags };\n',
    );
    const built = await build({ entryPoints: [join(dir, "main.ts")], bundle: true, format: "esm", platform: "node", write: false, outdir: dir, sourcemap: "external", logLevel: "silent" });
    const code = built.outputFiles.find((f) => f.path.endsWith(".js"))!.text;
    const map = built.outputFiles.find((f) => f.path.endsWith(".map"))!.text;
    const sourceVars = new Set<string>();
    sourceVarNames("export var legacy = hoisted();\nvar later = 1;\nvar LIMIT2 = 2;", sourceVars);
    const out = constantTopLevel(code, map, sourceVars);

    assert.ok(constNames(out.code).includes("LIMIT") && constNames(out.code).includes("Box") && constNames(out.code).includes("boxes"), out.code);
    for (const name of ["counter", "legacy", "later", "LIMIT2"]) assert.ok(!constNames(out.code).includes(name), name);
    assert.deepEqual((await evaluate(out.code)).result, (await evaluate(code)).result);
    assert.deepEqual((await evaluate(code)).result, { sum: 22, bumped: [1, 2], legacy: "undefined", tags: ["xundefined", "yundefined"] });

    const before = new SourceMap(JSON.parse(map));
    const after = new SourceMap(JSON.parse(out.map));
    const oldLines = code.split("\n");
    const newLines = out.code.split("\n");
    let checked = 0;
    for (let line = 0; line < oldLines.length; line++) {
      const shifted = newLines[line]!.startsWith("const ") && oldLines[line]!.startsWith("var ");
      for (let column = 0; column < oldLines[line]!.length; column++) {
        const moved = shifted && column >= 3 ? column + 2 : column;
        const want = before.findEntry(line, column) as { originalLine?: number; originalColumn?: number };
        const got = after.findEntry(line, moved) as { originalLine?: number; originalColumn?: number };
        assert.deepEqual([got.originalLine, got.originalColumn], [want.originalLine, want.originalColumn], `line ${line} column ${column}`);
        if (shifted) checked++;
      }
    }
    assert.ok(checked > 100, `${checked} columns of converted lines checked`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
