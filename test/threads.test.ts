/**
 * Parallel execution on worker threads: results equal inline execution and a plain
 * recomputation at several parallelisms, keyed records reach the subtask that owns their key
 * group, order holds per channel, and failures end the job promptly with a clear error.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runJob, type RunOptions } from "eddy/testing";
import { nexmarkConfig, nexmarkEvent } from "eddy";
import { assignToKeyGroup, computeOperatorIndexForKeyGroup, serialScavengeHolders } from "../packages/eddy/src/internal.ts";
import * as jobs from "./jobs/parallel.ts";
import orderPayments from "../examples/order-payments.ts";

type Job = Parameters<typeof runJob>[0];

async function collect<T>(job: Job, options: RunOptions & { expectMode?: "inline" | "threads" }): Promise<T[]> {
  const handle = runJob(job, options);
  if (options.expectMode !== undefined) assert.equal(await handle.mode, options.expectMode);
  await handle.done;
  return handle.collected<T>("out");
}

const sortJson = <T>(xs: T[]): string[] => xs.map((x) => JSON.stringify(x)).sort();

/** The last value of a rolling aggregate per key. */
function finalByKey<T extends { key: unknown }>(xs: T[], pick: (x: T) => number): Map<unknown, number> {
  const m = new Map<unknown, number>();
  for (const x of xs) m.set(x.key, Math.max(m.get(x.key) ?? -Infinity, pick(x)));
  return m;
}

for (const parallelism of [2, 3]) {
  test(`a join fed by two edges of one task reads them in about the order they were written (threads, parallelism ${parallelism})`, async () => {
    // Every probe's build was written before it, by the same source subtask, whichever thread the
    // join's subtask is on (RecordWriter.group, StreamTask's lower-seq-first read). Before, the
    // sparse builds' batches to another thread waited to fill or time out, and a large share of
    // the probes sent there arrived first (at p2: 30-50 % of Nexmark q20's bids).
    // "About": on a starved machine a batch is now and then read one place early (~700 probes of
    // 228,000, one batch; with three CPU hogs beside the test about one run in twenty before a
    // watermark or status hiding a peer's batch was fixed, 2026-12-06, and one in 400 after it:
    // another cause remains, docs/design/frames-and-codecs.md). So the bound is 1 %.
    const early = await collect<number>(jobs.buildsThenProbes, { parallelism, mode: "threads", expectMode: "threads" });
    const probes = (jobs.ORDER_RECORDS * (jobs.BUILD_EVERY - 1)) / jobs.BUILD_EVERY;
    assert.ok(early.length <= probes / 100, `${early.length} of ${probes} probes reached the join before their build`);
  });
}

for (const parallelism of [1, 2, 4, 8]) {
  test(`keyBy at parallelism ${parallelism}: every key on the subtask owning its key group`, async () => {
    const out = await collect<jobs.Tagged>(jobs.keyedRouting, { parallelism, mode: "threads" });
    assert.equal(out.length, jobs.RECORDS);
    assert.deepEqual(
      out.map((r) => r.n).sort((a, b) => a - b),
      Array.from({ length: jobs.RECORDS }, (_, i) => i),
    );
    const maxP = 128; // default for parallelism ≤ 85
    for (const r of out) {
      assert.equal(r.subtask, computeOperatorIndexForKeyGroup(maxP, parallelism, assignToKeyGroup(r.key, maxP)), `key ${r.key}`);
    }
  });

  test(`rolling sum at parallelism ${parallelism} equals inline execution and a recomputation`, async () => {
    const threaded = await collect<{ key: number; value: number }>(jobs.keyedSum, { parallelism, mode: "threads" });
    const inline = await collect<{ key: number; value: number }>(jobs.keyedSum, { parallelism, mode: "inline" });
    // Intermediate rolling values depend on how the source subtasks interleave; counts and
    // final values do not.
    assert.equal(threaded.length, jobs.RECORDS);
    assert.equal(inline.length, jobs.RECORDS);
    assert.deepEqual(finalByKey(threaded, (r) => r.value), finalByKey(inline, (r) => r.value));
    const expected = new Map<number, number>();
    for (let n = 0; n < jobs.RECORDS; n++) expected.set(n % jobs.KEYS, (expected.get(n % jobs.KEYS) ?? 0) + (n % 7));
    assert.deepEqual(finalByKey(threaded, (r) => r.value), expected);
  });
}

test("key groups follow the job's max parallelism, with more subtasks than workers", async () => {
  const out = await collect<jobs.Tagged>(jobs.keyedRouting, { parallelism: 5, maxParallelism: 7, workers: 3, mode: "threads" });
  assert.equal(out.length, jobs.RECORDS);
  for (const r of out) assert.equal(r.subtask, computeOperatorIndexForKeyGroup(7, 5, assignToKeyGroup(r.key, 7)));
});

test("rebalance keeps per-channel order and spreads every sender round-robin", async () => {
  for (const parallelism of [2, 3]) {
    const out = await collect<{ src: number; n: number; dst: number }>(jobs.rebalanced, { parallelism, mode: "threads" });
    assert.equal(out.length, jobs.RECORDS);
    const last = new Map<string, number>();
    const perPair = new Map<string, number>();
    for (const r of out) {
      const pair = `${r.src}->${r.dst}`;
      // The collect sink sees each destination subtask's records in arrival order.
      assert.ok((last.get(pair) ?? -1) < r.n, `order on channel ${pair}`);
      last.set(pair, r.n);
      perPair.set(pair, (perPair.get(pair) ?? 0) + 1);
    }
    assert.equal(perPair.size, parallelism * parallelism);
    const perSource = jobs.RECORDS / parallelism;
    for (const count of perPair.values()) assert.ok(Math.abs(count - perSource / parallelism) <= 1, `round-robin: ${count}`);
  }
});

test("records far larger than a channel's ring arrive intact, the last ones too (a worker does not end while its frames wait for room)", { timeout: 60_000 }, async () => {
  // Capacity 4 records gives the smallest ring (64 KiB); batches of 8 records of 100,000 characters
  // make frames of ~800 KB, sent in fragments, and the last of them are still held when the
  // sources finish.
  const out = await collect<{ n: number; intact: boolean }>(jobs.largeRecords, { parallelism: 2, mode: "threads", batchRecords: 8, channelCapacityRecords: 4 });
  assert.deepEqual(
    out.map((r) => r.n).sort((a, b) => a - b),
    Array.from({ length: jobs.LARGE_RECORDS }, (_, i) => i),
  );
  for (const r of out) assert.ok(r.intact, `record ${r.n} arrived torn`);
});

test("broadcast delivers every record to every subtask across threads", async () => {
  const out = await collect<{ src: number; n: number; dst: number }>(jobs.broadcasted, { parallelism: 3, mode: "threads" });
  assert.equal(out.length, 3000);
  for (let dst = 0; dst < 3; dst++) {
    assert.deepEqual(
      out
        .filter((r) => r.dst === dst)
        .map((r) => r.n)
        .sort((a, b) => a - b),
      Array.from({ length: 1000 }, (_, i) => i),
    );
  }
});

test("union of a parallel and a non-parallel source equals inline and a recomputation", async () => {
  const threaded = await collect<{ key: number; value: number }>(jobs.unioned, { parallelism: 4, mode: "threads" });
  const inline = await collect<{ key: number; value: number }>(jobs.unioned, { parallelism: 4, mode: "inline" });
  assert.equal(threaded.length, 8000);
  assert.deepEqual(finalByKey(threaded, (r) => r.value), finalByKey(inline, (r) => r.value));
  const expected = new Map<number, number>();
  for (let n = 0; n < 5000; n++) expected.set(n % 13, (expected.get(n % 13) ?? 0) + 1);
  for (let i = 0; i < 3000; i++) expected.set(i % 17, (expected.get(i % 17) ?? 0) + 10);
  assert.deepEqual(finalByKey(threaded, (r) => r.value), expected);
});

test("keyed connected streams (examples/order-payments.ts) equal inline at parallelism 2 and 3", async () => {
  for (const parallelism of [2, 3]) {
    const lines: string[][] = [[], []];
    const a = runJob(orderPayments, { parallelism, mode: "threads", stdout: (l) => lines[0]!.push(l) });
    await a.done;
    const b = runJob(orderPayments, { parallelism, mode: "inline", stdout: (l) => lines[1]!.push(l) });
    await b.done;
    assert.ok(lines[0]!.length > 0);
    assert.deepEqual([...lines[0]!].sort(), [...lines[1]!].sort());
  }
});

test("the default mode runs an exported job on threads and a job defined in a test inline", async () => {
  const h = runJob(jobs.keyedSum, { parallelism: 2 });
  assert.equal(await h.mode, "threads");
  await h.done;
  assert.ok(h.metrics().some((m) => m.bytesOut > 0), "records crossed threads");
});

test("a record the codec cannot encode fails the job naming the operator and the field", async () => {
  const handle = runJob(jobs.unencodable, { parallelism: 2, mode: "threads" });
  await assert.rejects(handle.done, (e: Error & { code?: string; operator?: string }) => {
    assert.equal(e.code, "RECORD_NOT_ENCODABLE");
    assert.match(e.message, /make-callbacks/);
    assert.match(e.message, /callback/);
    assert.match(e.message, /function/);
    return true;
  });
});

/** The most attempts seen holding V8's parallel scavenger off while `done` was pending (polled every ms). */
async function mostScavengeHolders(done: Promise<unknown>): Promise<number> {
  let most = 0;
  const poll = setInterval(() => (most = Math.max(most, serialScavengeHolders())), 1);
  try {
    await done;
  } finally {
    clearInterval(poll);
  }
  return most;
}

test("taskmanager.gc.parallel-scavenge: false holds V8's parallel scavenger off while the workers run, and lets go when the job ends or fails", async () => {
  const config = { "taskmanager.gc.parallel-scavenge": "false" };
  assert.equal(serialScavengeHolders(), 0);
  assert.equal(await mostScavengeHolders(runJob(jobs.keyedSum, { parallelism: 2, mode: "threads", config }).done), 1, "held while the workers ran");
  assert.equal(serialScavengeHolders(), 0, "let go at the end");
  await assert.rejects(runJob(jobs.throwing, { parallelism: 2, mode: "threads", config }).done, /bad record 7777/);
  assert.equal(serialScavengeHolders(), 0, "let go after a failure");
  // "true": never switched off, whatever the workers and cores.
  const config2 = { "taskmanager.gc.parallel-scavenge": "true" };
  assert.equal(await mostScavengeHolders(runJob(jobs.keyedSum, { parallelism: 2, mode: "threads", config: config2 }).done), 0, "never held with true");
});

let bidsOfHotKeyEvents: number | undefined;
/** The bids among `oneHotKey`'s events, from the generator. */
function expectedBids(): number {
  if (bidsOfHotKeyEvents === undefined) {
    const config = nexmarkConfig();
    bidsOfHotKeyEvents = 0;
    for (let id = 0; id < jobs.HOT_KEY_EVENTS; id++) if (nexmarkEvent(id, config).type === "bid") bidsOfHotKeyEvents++;
  }
  return bidsOfHotKeyEvents;
}

/** The bids each source subtask of `oneHotKey` emitted: on the worker of the day's key (hot) and on the other (cold). */
async function hotKeyShares(config: Record<string, string>): Promise<{ hot: number; cold: number }> {
  const handle = runJob(jobs.oneHotKey, { parallelism: 2, mode: "threads", config });
  const result = await handle.done;
  const [[bids]] = handle.collected<[number, number]>("out") as [[number, number]];
  const hotSubtask = result.metrics.find((m) => m.task.startsWith("KeyedProcess") && m.recordsIn > 0)!.subtask;
  const emitted = (subtask: number): number => result.metrics.find((m) => m.task.startsWith("Source") && m.subtask === subtask)!.recordsOut;
  const shares = { hot: emitted(hotSubtask), cold: emitted(1 - hotSubtask) };
  assert.equal(bids, expectedBids(), "the day's key counted every bid of the events once");
  assert.equal(shares.hot + shares.cold, bids, "the sources emitted every bid once");
  return shares;
}

test("the source yield: with one hot key, every bid reaches the key exactly once, with the yield on and off", async () => {
  // On a quiet machine, off: the source beside the key generates exactly 184,000 of the 552,000
  // bids, run after run; on: 92,000-128,800, the other worker's source taking the blocks it does
  // not ask for (docs/performance.md §5). Under a loaded CI host the split varies both ways, so
  // the shares are not asserted here (the rounds are: executor/source-yield.test.ts); what must
  // hold whatever the timing is that nothing is lost, repeated or stalled.
  const configs: Record<string, string>[] = [{}, { "taskmanager.scheduling.source-yield-rounds": "0" }, { "taskmanager.scheduling.source-yield-rounds": "1000" }];
  for (const config of configs) {
    const { hot, cold } = await hotKeyShares(config);
    assert.ok(hot > 0 && cold > 0, `both sources generated: ${hot} and ${cold} (${JSON.stringify(config)})`);
  }
});

test("an exception in a worker fails the job with the operator, subtask and cause", async () => {
  const handle = runJob(jobs.throwing, { parallelism: 2, mode: "threads" });
  await assert.rejects(handle.done, (e: Error & { code?: string; operator?: string; subtask?: number }) => {
    assert.match(e.message, /fragile-map/);
    assert.match(e.message, /bad record 7777/);
    assert.equal(typeof e.subtask, "number");
    return true;
  });
});

test("a failed job's workers close their tasks before their threads are terminated (a thread terminated inside a native call aborts the process)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-close-"));
  process.env[jobs.CLOSE_MARKER_DIR] = dir;
  try {
    const handle = runJob(jobs.closingSlowly, { parallelism: 2, mode: "threads" });
    await assert.rejects(handle.done, /bad record 7777/);
    assert.deepEqual(readdirSync(dir).sort(), ["closed-0", "closed-1"], "both subtasks finished closing");
  } finally {
    delete process.env[jobs.CLOSE_MARKER_DIR];
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a worker that exits on its own is detected and fails the job", async () => {
  const started = Date.now();
  const handle = runJob(jobs.exiting, { parallelism: 2, mode: "threads" });
  await assert.rejects(handle.done, (e: Error & { code?: string }) => {
    assert.equal(e.code, "WORKER_DIED");
    assert.match(e.message, /exited unexpectedly with code 3/);
    return true;
  });
  assert.ok(Date.now() - started < 10_000);
});

test("mode 'threads' refuses a job that workers cannot import, and says why", async () => {
  const { defineJob } = await import("eddy");
  const local = defineJob("local", (env) => void env.fromSequence(1, 3).print());
  const handle = runJob(local, { parallelism: 2, mode: "threads" });
  await assert.rejects(handle.done, /JOB_NOT_IMPORTABLE|cannot run on worker threads: it is defined in a test file/);
});

for (const [sizing, options] of [
  ["credit of 256 records", { channelCapacityRecords: 256 }],
  // Rings of 4 MiB between the two workers, credit 262,144 records: the ring's bytes bound it.
  ["the default byte-sized rings", {}],
] as const) {
  test(`a slow sink backpressures the source: memory stays flat while far more data passes (${sizing})`, async () => {
    const handle = runJob(jobs.slowSink, { parallelism: 2, mode: "threads", batchRecords: 64, ...options });
    const result = await handle.done;
    const samples = handle.collected<jobs.HeapSample>("out");
    assert.ok(samples.length >= 40, `samples: ${samples.length}`);
    const heaps = samples.filter((s) => s.seen > 10_000).map((s) => s.heap);
    const growth = Math.max(...heaps) - Math.min(...heaps);
    const passed = jobs.SLOW_RECORDS * jobs.SLOW_PAYLOAD_BYTES;
    // Unbounded queues would hold most of the 400 MB the source produces in a fraction of the time.
    assert.ok(growth < 48 * 2 ** 20, `heap grew by ${(growth / 2 ** 20).toFixed(1)} MB while ${passed / 2 ** 20} MB passed`);
    const sources = result.metrics.filter((m) => m.task.startsWith("Source"));
    const backpressured = sources.reduce((s, m) => s + m.backpressuredMs, 0) / sources.length;
    // Sinks spend ≥ 500 ms each busy-waiting; without flow control the sources would never wait.
    assert.ok(backpressured > 200, `sources were backpressured ${backpressured.toFixed(0)} of ${result.durationMs} ms`);
  });
}

test("a worker that runs out of memory is detected and fails the job", async () => {
  const handle = runJob(jobs.hoarding, { parallelism: 2, mode: "threads", maxWorkerHeapMb: 48 });
  await assert.rejects(handle.done, (e: Error & { code?: string }) => {
    // V8 reports the limit (WORKER_OUT_OF_MEMORY), or the thread dies first (WORKER_DIED).
    assert.ok(e.code === "WORKER_OUT_OF_MEMORY" || e.code === "WORKER_DIED", e.code);
    assert.match(e.message, /ran out of memory|exited unexpectedly/);
    return true;
  });
  // Every worker thread is gone: nothing keeps the process alive.
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(!process.getActiveResourcesInfo().includes("MessagePort"), process.getActiveResourcesInfo().join(","));
});

test("a stream's own codec carries its records between threads", async () => {
  const out = await collect<{ key: string; n: number; when: number; codec?: string }>(jobs.customCodec, { parallelism: 2, mode: "threads" });
  assert.equal(out.length, 10_000);
  assert.deepEqual(
    out.map((r) => r.n).sort((a, b) => a - b),
    Array.from({ length: 10_000 }, (_, i) => i),
  );
  // Records that crossed threads went through the JSON codec (it tags them); local ones did not.
  const crossed = out.filter((r) => r.codec === "json");
  assert.ok(crossed.length > 1000 && crossed.length < 9000, `crossed: ${crossed.length}`);
  for (const r of out) assert.equal(r.when, r.n * 1000);
});

test("metrics report records, bytes and the final watermark per subtask", async () => {
  const handle = runJob(jobs.keyedSum, { parallelism: 2, mode: "threads" });
  const result = await handle.done;
  const sums = result.metrics.filter((m) => m.task.startsWith("sum"));
  assert.equal(sums.length, 2);
  assert.equal(
    sums.reduce((s, m) => s + m.recordsIn, 0),
    jobs.RECORDS,
  );
  for (const m of sums) {
    assert.ok(m.bytesIn > 0);
    assert.equal(m.watermark, Infinity);
  }
  const sources = result.metrics.filter((m) => m.task.startsWith("Source"));
  assert.equal(
    sources.reduce((s, m) => s + m.recordsOut, 0),
    jobs.RECORDS,
  );
});

test("a job module that fails to load on a worker fails the job with the module's error", async () => {
  const { brokenInWorker } = await import("./jobs/broken-in-worker.ts");
  const handle = runJob(brokenInWorker, { parallelism: 2, mode: "threads" });
  await assert.rejects(handle.done, /configuration file is not readable from worker threads/);
});

test("cancelling a threaded job stops every worker promptly", { timeout: 30_000 }, async () => {
  // A job that cannot finish first: the cancel must be what ends it, however fast the machine.
  const handle = runJob(jobs.endless, { parallelism: 2, mode: "threads" });
  assert.equal(await handle.mode, "threads");
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const cancelledAt = Date.now();
  handle.cancel();
  await assert.rejects(handle.done, (e: Error & { code?: string }) => e.code === "JOB_CANCELLED");
  assert.ok(Date.now() - cancelledAt < 2_000, "prompt");
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(!process.getActiveResourcesInfo().includes("MessagePort"), process.getActiveResourcesInfo().join(","));
});
