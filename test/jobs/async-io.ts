/**
 * The job of test/async-io.test.ts, in its own module so worker threads can rebuild it: records
 * 1..N enriched through the customer service of the async enrichment example (its URL in
 * EDDY_ASYNC_URL, started by the test), into a committing sink. EDDY_ASYNC_ORDERED=0 uses
 * unorderedWait. A fault (EDDY_ASYNC_FAULT) fires once per marker file, after the first
 * checkpoint committed: `process` throws in a map after the async operator, `exit` ends the
 * worker thread.
 */
import { existsSync } from "node:fs";
import type { Agent } from "node:http";
import { AsyncDataStream, defineJob, WatermarkStrategy, type AsyncFunction } from "eddy";
import { committingCollectSink } from "eddy/testing";
import { getJson, HttpError, keepAliveAgent, type Customer } from "../../examples/async-enrichment/customer-service.ts";
import { fireOnce, markingFirstCommit } from "./fault-markers.ts";

export const RECORDS = Number(process.env.EDDY_ASYNC_RECORDS ?? 4_000);
/**
 * Ids the service never answers in time: the timeout handler answers for them. 3000 is in the first
 * source poll of subtask 1 at parallelism 2, so checkpoints are taken while it hangs (its task is
 * still reading), and a restore sends it again. The timeout is generous: on a loaded machine an
 * ordinary answer must never time out.
 */
export const HANG_IDS = [3000];
export const TIMEOUT_MS = 2_000;

export interface Enriched {
  readonly n: number;
  readonly name: string;
  readonly tier: string;
}

export interface AsyncFault {
  readonly kind: "process" | "exit";
  readonly atRecord: number;
  readonly marker: string;
}

export const fallback = (n: number): Enriched => ({ n, name: "unknown", tier: "none" });

const lookup: AsyncFunction<number, Enriched> & { agent?: Agent; url: string } = {
  url: "",
  open() {
    this.url = process.env.EDDY_ASYNC_URL ?? "";
    this.agent = keepAliveAgent(32);
  },
  async asyncInvoke(n) {
    const c = await getJson<Customer>(this.agent!, `${this.url}/customers/${n}`);
    return [{ n, name: c.name, tier: c.tier }];
  },
  timeout: (n) => [fallback(n)],
  close() {
    this.agent?.destroy();
  },
};

/** For short sleeps of a map (Atomics.wait on a value that never changes). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

export default defineJob("async-io-enrichment", (env) => {
  const raw = process.env.EDDY_ASYNC_FAULT;
  const fault = raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as AsyncFault);
  const committed = fault === undefined ? undefined : `${fault.marker}.committed`;
  const numbers = env
    .fromSequence(1, RECORDS)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n));
  const options = {
    timeoutMs: TIMEOUT_MS,
    capacity: 16,
    retry: { maxAttempts: 3, backoff: "fixed", delayMs: 5, ifError: (e: unknown) => e instanceof HttpError && e.status >= 500 },
  } as const;
  const enriched = process.env.EDDY_ASYNC_ORDERED === "0" ? AsyncDataStream.unorderedWait(numbers, lookup, options) : AsyncDataStream.orderedWait(numbers, lookup, options);
  let decided = false;
  const checked = enriched.uid("enrich").map((e: Enriched) => {
    if (fault === undefined) return e;
    // Until a checkpoint committed, go slowly (the fault is about restoring from one): on a
    // loaded machine the first checkpoint may otherwise come after the whole input.
    if (decided) return e;
    const hasCommitted = existsSync(committed!);
    if (!hasCommitted && e.n % 10 === 0) Atomics.wait(sleeper, 0, 0, 1);
    if (e.n >= fault.atRecord && hasCommitted) {
      decided = true;
      if (fireOnce(fault.marker)) {
        if (fault.kind === "exit") process.exit(3);
        throw new Error(`injected fault after record ${e.n}`);
      }
    }
    return e;
  });
  checked.sinkTo(markingFirstCommit(committingCollectSink<Enriched>("enriched"), committed), "committed");
});
