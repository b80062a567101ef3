/**
 * Eddy compiles code from strings on some hot paths (chained edges, per-shape copiers and codecs;
 * core/codegen.ts) and must still run where the process forbids that: each of those paths falls
 * back to its general code. Checked in a child process started with
 * `--disallow-code-generation-from-strings`, against a plain recomputation.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { KEYS, RECORDS, type Row } from "./jobs/no-codegen.ts";

const runner = fileURLToPath(new URL("./jobs/no-codegen-run.ts", import.meta.url));

test("jobs run inline and on worker threads where code generation from strings is forbidden", () => {
  const child = spawnSync(process.execPath, ["--disallow-code-generation-from-strings", "--import", "tsx", runner], {
    encoding: "utf8",
    timeout: 120_000,
  });
  assert.equal(child.status, 0, child.stderr);
  const out = JSON.parse(child.stdout) as {
    canCompile: boolean;
    inline: { count: number; fours: number; final: Row[] };
    threads: { count: number; fours: number; final: Row[] };
  };
  // The flag took effect: neither the main thread nor any thread that built a record could compile.
  assert.equal(out.canCompile, false);
  const sums = new Map<number, number>();
  let kept = 0;
  for (let n = 0; n < RECORDS; n++) {
    if (n % 5 === 4) continue;
    kept++;
    sums.set(n % KEYS, (sums.get(n % KEYS) ?? 0) + (n % 5));
  }
  for (const run of [out.inline, out.threads]) {
    assert.equal(run.count, kept, "one rolling update per kept record");
    assert.equal(run.fours, RECORDS - kept, "the other branch of the fan-out");
    assert.deepEqual(
      run.final.map((r) => [r.key, r.value]),
      [...sums].sort((a, b) => a[0] - b[0]),
    );
    for (const r of run.final) {
      assert.equal(r.codegen, false);
      assert.match(r.label, /^item-\d+$/);
    }
  }
});
