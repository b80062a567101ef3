/**
 * Worker threads resolve a job's imports with the module conditions of the process that runs it
 * (`node -C <name>`, `--conditions`, NODE_OPTIONS), through the workers' bundle and through the
 * TypeScript loader alike: test/jobs/conditions/ maps `#variant` to "a" under the
 * `eddy-test-variant` condition and to "b" otherwise, and its job reports which one each worker got.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const RUN = fileURLToPath(new URL("jobs/conditions/run.ts", import.meta.url));

function run(args: readonly string[], env: Record<string, string> = {}): { main: string; workers: string[]; records: number } {
  const nodeOptions = [process.env.NODE_OPTIONS ?? "", env.NODE_OPTIONS ?? ""].join(" ").trim();
  const out = execFileSync(process.execPath, [...args, "--import", "tsx", RUN], { encoding: "utf8", env: { ...process.env, ...env, NODE_OPTIONS: nodeOptions }, timeout: 60_000 });
  return JSON.parse(out) as { main: string; workers: string[]; records: number };
}

for (const loader of ["bundle", "tsx"] as const) {
  const env: Record<string, string> = loader === "tsx" ? { EDDY_WORKER_LOADER: "tsx" } : {};
  test(`workers (${loader === "bundle" ? "bundled" : "through the TypeScript loader"}) resolve with the process's conditions: command line${loader === "bundle" ? ", NODE_OPTIONS, none" : ""}`, () => {
    assert.deepEqual(run(["-C", "eddy-test-variant"], env), { main: "a", workers: ["a"], records: 8 });
    // (NODE_OPTIONS reaches workers by itself: the loader's case needs no check.)
    if (loader === "bundle") assert.deepEqual(run([], { ...env, NODE_OPTIONS: "--conditions=eddy-test-variant" }), { main: "a", workers: ["a"], records: 8 });
    // Without the condition: the fixture's other variant (once is enough to show it differs).
    if (loader === "bundle") assert.deepEqual(run([], env), { main: "b", workers: ["b"], records: 8 });
  });
}
