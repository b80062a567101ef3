/**
 * The job of the PostgreSQL sink's kill-and-compare tests (test/postgres-sink.test.ts), set by
 * the environment (read when each thread builds the job):
 * - EDDY_PG_URL: the server; EDDY_PG_TABLE: the table; EDDY_PG_EVENTS: the events 1..n;
 * - EDDY_PG_MODE: "upsert": a keyed running count and sum of the events by n % 50, upserted by
 *   key, where a key divisible by 10 is deleted whenever its count is even (a changelog);
 *   "append": every event as a row (id, k, v), appended exactly once;
 * - EDDY_PG_FAULT: `{ kind: "exit" | "process", atRecord, marker }`, fired once per marker file;
 * - EDDY_PG_RELEASE: the job runs slowly until this file exists.
 */
import { defineJob } from "eddy";
import { PostgresSink } from "eddy/postgres";
import { faultyIdentity, recordFaultFrom } from "./fault-markers.ts";

export const KEYS = 50;

export interface KeyTotal {
  readonly key: number;
  readonly count: number;
  readonly sum: number;
}

/** Whether the upsert job's changelog deletes this total (the oracle in SQL says the same). */
export const deletes = (t: KeyTotal): boolean => t.key % 10 === 0 && t.count % 2 === 0;

export const postgresSinkJob = defineJob("postgres-sink", (env) => {
  const fault = recordFaultFrom(process.env.EDDY_PG_FAULT);
  const events = Number(process.env.EDDY_PG_EVENTS ?? 20_000);
  const connection = process.env.EDDY_PG_URL ?? "postgres://localhost/postgres";
  const table = process.env.EDDY_PG_TABLE ?? "eddy_sink";
  const hold = process.env.EDDY_PG_RELEASE || undefined;
  // Held back (1 ms per 50 records) until the file EDDY_PG_RELEASE names exists.
  const numbers = env.fromSequence(1, events).map(faultyIdentity(fault, hold, 50));
  if (process.env.EDDY_PG_MODE === "append") {
    numbers
      .map((n) => ({ id: n, k: n % KEYS, v: n * 2 }))
      .sinkTo(PostgresSink.append<{ id: number; k: number; v: number }>({ connection, table, columns: ["id", "k", "v"], rowsPerStatement: 200, flushIntervalMs: 10 }), "rows");
    return;
  }
  numbers
    .map((n): KeyTotal => ({ key: n % KEYS, count: 1, sum: n }))
    .keyBy((t) => t.key)
    .reduce((a, b) => ({ key: a.key, count: a.count + b.count, sum: a.sum + b.sum }))
    .uid("totals")
    .sinkTo(PostgresSink.upsert<KeyTotal>({ connection, table, columns: ["key", "count", "sum"], keyColumns: ["key"], kind: (t) => (deletes(t) ? "delete" : "upsert"), rowsPerStatement: 200, flushIntervalMs: 10 }), "totals");
});

export default postgresSinkJob;
