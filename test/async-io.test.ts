/**
 * Async I/O end to end, against a real HTTP service on 127.0.0.1 started here
 * (examples/async-enrichment/customer-service.ts): the first request for every 7th id fails with
 * 500 (retried), every 50th answer is slow, two ids never answer in time (the timeout handler
 * answers). The committed output is compared with the oracle — what the service answers for
 * each id — record for record, in a failure-free run and in runs where a fault restarts the job
 * from a checkpoint taken while requests were in flight, inline and on worker threads: nothing
 * lost, nothing twice.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runJob, type RunOptions } from "eddy/testing";
import { customer, startCustomerService, type CustomerService } from "../examples/async-enrichment/customer-service.ts";
import job, { fallback, HANG_IDS, RECORDS, type AsyncFault, type Enriched } from "./jobs/async-io.ts";

let service: CustomerService;
before(async () => {
  service = await startCustomerService({ failFirstEvery: 7, slowEvery: 50, slowMs: 15, hangIds: HANG_IDS, hangMs: 20_000 });
  process.env.EDDY_ASYNC_URL = service.url;
});
after(async () => {
  delete process.env.EDDY_ASYNC_URL;
  await service.close();
});

const key = (e: Enriched): string => `${e.n}:${e.name}:${e.tier}`;
const oracle = (): string[] =>
  Array.from({ length: RECORDS }, (_, i) => {
    const n = i + 1;
    if (HANG_IDS.includes(n)) return key(fallback(n));
    const c = customer(n);
    return key({ n, name: c.name, tier: c.tier });
  }).sort();

async function run(options: RunOptions, env: Record<string, string>): Promise<{ rows: Enriched[]; restarts: number; restoredFrom: readonly (number | null)[]; warnings: string[] }> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const warnings: string[] = [];
  const note = (message: string, fields?: Record<string, unknown>): void => void warnings.push(`${message} ${JSON.stringify(fields ?? {})}`);
  try {
    const handle = runJob(job, { logger: { debug: () => {}, info: () => {}, warn: note, error: note }, ...options });
    await handle.done;
    return { rows: handle.collected("enriched") as Enriched[], restarts: handle.restarts, restoredFrom: handle.restoredFrom, warnings };
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test("orderedWait enriches every record through the HTTP service exactly as the oracle says, in input order at parallelism 1", async () => {
  const before500 = service.stats["500"] ?? 0;
  const { rows } = await run({ mode: "inline", parallelism: 1, checkpointing: false }, {});
  assert.deepEqual(rows.map(key).sort(), oracle());
  assert.deepEqual(
    rows.map((r) => r.n),
    Array.from({ length: RECORDS }, (_, i) => i + 1),
    "ordered: the results leave in input order",
  );
  assert.ok((service.stats["500"] ?? 0) - before500 >= Math.floor(RECORDS / 7), "the failing requests were retried");
});

test("unorderedWait at parallelism 2 on worker threads gives the same records", async () => {
  const { rows } = await run({ mode: "threads", parallelism: 2, workers: 2, checkpointing: false }, { EDDY_ASYNC_ORDERED: "0" });
  assert.deepEqual(rows.map(key).sort(), oracle());
});

for (const [mode, kind, ordered] of [
  ["inline", "process", "1"],
  ["threads", "process", "0"],
  ["threads", "exit", "1"],
] as const) {
  test(`kill and compare (${mode}, ${kind}, ${ordered === "1" ? "ordered" : "unordered"}): restored from a checkpoint with requests in flight, the committed output equals the oracle`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "eddy-async-io-"));
    const fault: AsyncFault = { kind, atRecord: Math.floor(RECORDS * 0.6), marker: join(dir, "fault-fired") };
    const at = `${mode}, fault '${kind}' after record ${fault.atRecord}`;
    try {
      const result = await run(
        {
          mode,
          parallelism: 2,
          ...(mode === "threads" ? { workers: 2 } : {}),
          checkpointing: { intervalMs: 20 },
          checkpointDir: join(dir, "checkpoints"),
          jobId: "async-io",
          restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 0 },
        },
        { EDDY_ASYNC_FAULT: JSON.stringify(fault), EDDY_ASYNC_ORDERED: ordered },
      );
      assert.ok(existsSync(fault.marker), `${at}: the fault fired`);
      assert.equal(result.restarts, 1, `${at}: ${result.warnings.join("\n")}`);
      assert.notEqual(result.restoredFrom[0] ?? null, null, `${at}: restored from a checkpoint`);
      assert.deepEqual(result.rows.map(key).sort(), oracle(), `${at}: committed output differs from the oracle`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test("a request the service refuses (404: not retried, by the retry strategy's ifError) fails the job with ASYNC_IO_FAILED naming the operator", async () => {
  await assert.rejects(
    run({ mode: "inline", parallelism: 1, checkpointing: false }, { EDDY_ASYNC_URL: `${service.url}/nothing-here` }),
    (e: unknown) => e instanceof Error && (e as { code?: string }).code === "ASYNC_IO_FAILED" && /'AsyncWait \(ordered\)' \(subtask 0\).*attempt 1 of 3.*answered 404/.test(e.message),
  );
});
