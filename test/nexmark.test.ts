/**
 * The Nexmark queries of examples/nexmark/ against an independent oracle: DuckDB running the
 * queries' SQL over the same bounded events (test/nexmark/oracle.ts). For every query, Eddy's
 * output equals DuckDB's as a multiset (both sorted), at parallelism 1 (inline) and 2 (worker
 * threads).
 *
 * Why equal multisets are the right comparison, query by query:
 * - q0, q1, q2: stateless, one output per matching bid; only the order across subtasks differs.
 * - q3: an unbounded inner join of insert-only inputs. The streaming join emits each (person,
 *   auction) match exactly once, when its second side arrives, and never retracts, so its output
 *   over the whole run is the batch join's result.
 * - q5, q7, q8, q11: event-time windows. Every subtask's event time is non-decreasing and the
 *   watermark trails it by 4 s, so no event is late (checked: no operator dropped a late record)
 *   and each window fires exactly once, when the watermark passes its end, or at the end of input
 *   (which emits the maximum watermark); its result is then the batch result for that window.
 *
 * - q14, q21, q22: stateless like q0.
 *
 * Events: NEXMARK_EVENTS at NEXMARK_EVENT_RATE events per second of event time, set per query
 * before its jobs are built (worker threads inherit the environment). A low rate puts many windows
 * into few events, which keeps the runs short.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { runJob } from "eddy/testing";
import type { JobDefinition } from "eddy";
import { nexmarkSettings } from "../examples/nexmark/nexmark-streams.ts";
import q5Printed from "../examples/nexmark/q5.ts";
import * as jobs from "./nexmark/jobs.ts";
import { nexmarkOracle, ORACLE_SQL, type NexmarkOracle, type OracleQuery, type Row } from "./nexmark/oracle.ts";
import { lateRecordsDropped } from "./fixtures.ts";

interface Settings {
  readonly events: number;
  /** Events per second of event time. */
  readonly eventRate: number;
}

/**
 * 30,000 events over 60 s of event time: 6 tumbling windows, 34 sliding ones, sessions that end
 * and restart. q14 classifies bids by hour of day, so it gets 4,000 events over 11 hours.
 */
const WINDOWED: Settings = { events: 30_000, eventRate: 500 };
const HOURS: Settings = { events: 4_000, eventRate: 0.1 };

/** One oracle per settings, loaded when first needed. */
const oracles = new Map<string, Promise<NexmarkOracle>>();

/** Points the jobs at `settings` (read when a job is built) and returns an oracle of the same events. */
function useSettings(settings: Settings): Promise<NexmarkOracle> {
  process.env.NEXMARK_EVENTS = String(settings.events);
  process.env.NEXMARK_EVENT_RATE = String(settings.eventRate);
  const id = JSON.stringify(settings);
  let oracle = oracles.get(id);
  if (oracle === undefined) {
    // Exactly the settings the jobs will read.
    const { events, config } = nexmarkSettings();
    assert.equal(events, settings.events);
    oracles.set(id, (oracle = nexmarkOracle(settings.events, config)));
  }
  return oracle;
}

after(async () => {
  for (const oracle of oracles.values()) (await oracle).close();
});

/** A row as a string independent of field order, for sorting and comparing multisets. */
function canonical(row: object): string {
  return JSON.stringify(Object.entries(row).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Equal as multisets; on failure, reports counts and a few rows missing on each side. */
function assertSameRows(actual: readonly object[], expected: readonly Row[], what: string): void {
  const a = actual.map(canonical).sort();
  const e = expected.map(canonical).sort();
  if (a.length === e.length && a.every((x, i) => x === e[i])) return;
  const remaining = new Map<string, number>();
  for (const x of e) remaining.set(x, (remaining.get(x) ?? 0) + 1);
  const unexpected: string[] = [];
  for (const x of a) {
    const n = remaining.get(x) ?? 0;
    if (n > 0) remaining.set(x, n - 1);
    else unexpected.push(x);
  }
  const missing = [...remaining].flatMap(([x, n]) => Array<string>(n).fill(x));
  assert.fail(
    `${what}: Eddy emitted ${a.length} rows, DuckDB ${e.length}; ` +
      `${unexpected.length} not in DuckDB's, e.g. ${unexpected.slice(0, 3).join(" ")}; ` +
      `${missing.length} missing, e.g. ${missing.slice(0, 3).join(" ")}`,
  );
}

interface Case {
  readonly query: OracleQuery;
  readonly job: JobDefinition;
  readonly settings: Settings;
  /** The oracle's answer has at least this many rows: the data exercises the query. */
  readonly minRows: number;
  /** Values of this column must all occur in the oracle's answer. */
  readonly covers?: { readonly column: string; readonly values: readonly unknown[] };
}

const CASES: readonly Case[] = [
  { query: "q0", job: jobs.q0Job, settings: WINDOWED, minRows: 20_000 },
  { query: "q1", job: jobs.q1Job, settings: WINDOWED, minRows: 20_000 },
  { query: "q2", job: jobs.q2Job, settings: WINDOWED, minRows: 20 },
  { query: "q3", job: jobs.q3Job, settings: WINDOWED, minRows: 20 },
  { query: "q5", job: jobs.q5Job, settings: WINDOWED, minRows: 30 },
  { query: "q7", job: jobs.q7Job, settings: WINDOWED, minRows: 6 },
  { query: "q8", job: jobs.q8Job, settings: WINDOWED, minRows: 10 },
  { query: "q11", job: jobs.q11Job, settings: WINDOWED, minRows: 200 },
  { query: "q14", job: jobs.q14Job, settings: HOURS, minRows: 200, covers: { column: "bidTimeType", values: ["dayTime", "nightTime", "otherTime"] } },
  // Ids of the four named channels, and ids from URLs.
  { query: "q21", job: jobs.q21Job, settings: WINDOWED, minRows: 10_000, covers: { column: "channelId", values: ["0", "1", "2", "3", "778567680"] } },
  { query: "q22", job: jobs.q22Job, settings: WINDOWED, minRows: 20_000 },
];

for (const { query, job, settings, minRows, covers } of CASES) {
  test(`nexmark ${query} equals DuckDB's answer at parallelism 1 and 2`, async () => {
    const oracle = await useSettings(settings);
    const expected = await oracle.query(ORACLE_SQL[query]);
    assert.ok(expected.length >= minRows, `the data exercises ${query}: ${expected.length} rows`);
    if (covers !== undefined) {
      const seen = new Set(expected.map((row) => row[covers.column]));
      for (const value of covers.values) assert.ok(seen.has(value), `the data gives ${covers.column} = ${String(value)}`);
    }
    for (const parallelism of [1, 2]) {
      const handle = runJob(job, { parallelism, mode: parallelism === 1 ? "inline" : "threads" });
      const result = await handle.done;
      assert.equal(lateRecordsDropped(result.metrics), 0, "no event is late");
      assertSameRows(handle.collected<object>("out"), expected, `${query} at parallelism ${parallelism}`);
    }
  });
}

test("the examples' default jobs print their results as JSON lines (q5 as printed equals DuckDB's answer)", async () => {
  const oracle = await useSettings(WINDOWED);
  const lines: string[] = [];
  const handle = runJob(q5Printed, { parallelism: 1, stdout: (line) => lines.push(line) });
  await handle.done;
  assertSameRows(
    lines.map((line) => JSON.parse(line) as object),
    await oracle.query(ORACLE_SQL.q5),
    "q5 printed",
  );
});
