/**
 * docs/design/architecture.md, "Layers": folders of packages/eddy/src are layers with one-way
 * imports. A file may import from its own layer and the layers below it, never from a layer above.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";

const SRC = resolve(import.meta.dirname, "../packages/eddy/src");
const LAYERS = ["core", "state", "checkpoint", "connector", "runtime", "graph", "api", "cluster", "savepoint", "query", "testing"];

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [join(dir, e.name)] : [],
  );
}

function layerOf(file: string): number {
  const top = relative(SRC, file).split("/")[0]!;
  return top.endsWith(".ts") ? LAYERS.length : LAYERS.indexOf(top);
}

test("source folders import only their own and lower layers", () => {
  const violations: string[] = [];
  for (const file of files(SRC)) {
    const from = layerOf(file);
    assert.ok(from >= 0, `${relative(SRC, file)} is in a folder that is not a layer`);
    for (const m of readFileSync(file, "utf8").matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms)) {
      const target = resolve(dirname(file), m[1]!);
      const to = layerOf(target);
      if (to > from) violations.push(`${relative(SRC, file)} imports ${relative(SRC, target)}`);
    }
  }
  assert.deepEqual(violations, []);
});

test("operators and windows depend on the keyed state backend interface, never on the heap backend", () => {
  // state/keyed-state-backend.ts is the contract; which backend a job uses is chosen where
  // operators are deployed (OperatorContext.stateBackend), so a disk backend plugs in unchanged.
  const heapOnly = /^state\/(heap-[^/]*|state-table|void-value-cursor)\.ts$/;
  const violations: string[] = [];
  for (const file of files(join(SRC, "runtime"))) {
    for (const m of readFileSync(file, "utf8").matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms)) {
      const target = relative(SRC, resolve(dirname(file), m[1]!));
      if (heapOnly.test(target)) violations.push(`${relative(SRC, file)} imports ${target}`);
    }
  }
  assert.deepEqual(violations, []);
});
