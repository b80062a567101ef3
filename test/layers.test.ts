/**
 * docs/design/architecture.md, "Layers": folders of packages/eddy/src are layers with one-way
 * imports. A file may import from its own layer and the layers below it, never from a layer above.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";

const SRC = resolve(import.meta.dirname, "../packages/eddy/src");
/**
 * Lowest first. What was cluster/ is four layers (issue 24): `http` (the bounded HTTP server and
 * its JSON answers), `queryable` (state servers and the location lookup), `executor` (what runs
 * tasks: the task executor, the worker thread and its protocol, the worker bundle, restoring a
 * task's state), `coordinator` (what a JobManager does: the job handle, inline and threaded
 * executions, the checkpoint runner, recovery), `control` (the control API, its registry and
 * client, the CLI). Each folder is its own layer, so an import cycle across folders would need an
 * upward import, which this test refuses.
 */
const LAYERS = ["core", "state", "checkpoint", "connector", "runtime", "graph", "api", "http", "queryable", "executor", "coordinator", "control", "init", "savepoint", "query", "testing"];

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

test("offline tools read formats (checkpoint/format/), never the executor, the coordinator or the control plane's server", () => {
  // eddy/savepoint and eddy/query run without a job: what they read is described in
  // checkpoint/format/ (issue 24), so a change to how tasks run cannot change how a savepoint reads.
  const forbidden = /^(executor|coordinator)\/|^control\/(?!control-client\.ts$)/;
  const violations: string[] = [];
  for (const tool of ["savepoint", "query"]) {
    for (const file of files(join(SRC, tool))) {
      for (const m of readFileSync(file, "utf8").matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms)) {
        const target = relative(SRC, resolve(dirname(file), m[1]!));
        if (forbidden.test(target)) violations.push(`${relative(SRC, file)} imports ${target}`);
      }
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

test("no import cycles, except the fluent API's streams inside api/", () => {
  // DataStream returns KeyedStream, WindowedStream, ConnectedStreams … and they return DataStream:
  // those references inside api/ are the fluent API's shape (issue 24). Anything else in a cycle
  // couples files that should not know each other.
  const graph = new Map<string, string[]>();
  for (const file of files(SRC)) {
    const targets = [...readFileSync(file, "utf8").matchAll(/^(?:import|export)[^;]*?from\s+"(\.[^"]+)"/gms)].map((m) => resolve(dirname(file), m[1]!));
    graph.set(file, targets.filter((t) => t.endsWith(".ts")));
  }
  // Tarjan's strongly connected components: a component of more than one file is a cycle.
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    indexOf.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(relative(SRC, w));
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indexOf.has(v)) visit(v);
  const outsideApi = components.filter((c) => !c.every((f) => f.startsWith("api/")));
  assert.deepEqual(outsideApi, []);
});

test("job-level tests reach Eddy through its public entry points or src/internal.ts, never by deep paths", () => {
  // Moving a file inside src/ must not break test/ (issue 24): what tests need beyond the public
  // API is named once, in packages/eddy/src/internal.ts.
  const TEST = resolve(import.meta.dirname);
  const testFiles = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? (e.name === "fixtures" ? [] : testFiles(join(dir, e.name))) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
    );
  const deep: string[] = [];
  for (const file of testFiles(TEST)) {
    for (const m of readFileSync(file, "utf8").matchAll(/(?:from\s+|import\()"(\.[^"]+)"/g)) {
      const target = resolve(dirname(file), m[1]!);
      if (target.startsWith(SRC + "/") && target !== join(SRC, "internal.ts")) deep.push(`${relative(TEST, file)} imports ${relative(SRC, target)}`);
    }
  }
  assert.deepEqual(deep, []);
});
