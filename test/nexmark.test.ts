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
 * - q14, q21, q22: stateless like q0; q13 too: a lookup in a table that never changes (the
 *   processing-time join's answer is the plain join's).
 * - q20: an unbounded inner join like q3 (bid ⋈ auction); each match is emitted once.
 * - q9: the SQL's Top-1 per auction (winning bid) is final once the auction expires; the job emits
 *   each auction's row once, then (event-time timer at expiry, the final watermark closes the rest).
 *
 * Updating queries (q4, q15, q16, q17, q18, q19) answer with a changelog: the SQL's unbounded
 * GROUP BY, deduplication and top-N change their rows as input arrives, and the jobs emit a
 * group's new row each time it changes (never retracting: a group, once emitted, stays in the
 * answer). Their output is compared as the final state: the last row emitted per group (the
 * case's `finalPer` columns), which must equal DuckDB's answer, as a multiset. A group is owned
 * by one subtask, whose rows reach the sink in the order emitted, so "last" is well defined at
 * parallelism 2 too. Per query:
 * - q4: group = category. An auction's winning price enters the category's running average once,
 *   when event time passes its expiry (the final watermark closes the rest), so the last average
 *   per category is over every auction with a bid in its lifetime, as in the SQL.
 * - q15 (day), q16 (channel, day), q17 (auction, day): a new row per bid; the last one counts
 *   every bid of the group.
 * - q18 (bidder, auction): a row whenever a bid becomes the latest; the last one is the latest.
 * - q19 (auction, rankNumber): a row for each rank a bid shifts; the last one per rank is the
 *   final top 10. Ties in q18 and q19 are broken by the same columns in the job and the SQL.
 *
 * q12 windows by processing time, so its output is not deterministic and has no SQL to equal; its
 * test checks the invariants instead: every bid is counted in exactly one window of its bidder.
 *
 * Events: NEXMARK_EVENTS at NEXMARK_EVENT_RATE events per second of event time, set per query
 * before its jobs are built (worker threads inherit the environment). A low rate puts many windows
 * into few events, which keeps the runs short.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { ManualClock, runJob } from "eddy/testing";
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
 * and restart. q14 classifies bids by hour of day, so it gets 4,000 events over 11 hours; the
 * per-day statistics get 6,000 events over 3.5 days.
 */
const WINDOWED: Settings = { events: 30_000, eventRate: 500 };
const HOURS: Settings = { events: 4_000, eventRate: 0.1 };
const DAYS: Settings = { events: 6_000, eventRate: 0.02 };

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

/** The last row emitted per group (the values of `columns`): the final state of an updating query. */
function finalRows(rows: readonly object[], columns: readonly string[]): object[] {
  const last = new Map<string, object>();
  for (const row of rows) {
    const fields = row as Readonly<Record<string, unknown>>;
    last.set(JSON.stringify(columns.map((c) => fields[c])), row);
  }
  return [...last.values()];
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
  /** An updating query: compare the last row emitted per group of these columns. */
  readonly finalPer?: readonly string[];
}

const CASES: readonly Case[] = [
  { query: "q0", job: jobs.q0Job, settings: WINDOWED, minRows: 20_000 },
  { query: "q1", job: jobs.q1Job, settings: WINDOWED, minRows: 20_000 },
  { query: "q2", job: jobs.q2Job, settings: WINDOWED, minRows: 20 },
  { query: "q3", job: jobs.q3Job, settings: WINDOWED, minRows: 20 },
  { query: "q4", job: jobs.q4Job, settings: WINDOWED, minRows: 5, finalPer: ["category"] },
  { query: "q5", job: jobs.q5Job, settings: WINDOWED, minRows: 30 },
  { query: "q7", job: jobs.q7Job, settings: WINDOWED, minRows: 6 },
  { query: "q8", job: jobs.q8Job, settings: WINDOWED, minRows: 10 },
  { query: "q9", job: jobs.q9Job, settings: WINDOWED, minRows: 100 },
  { query: "q11", job: jobs.q11Job, settings: WINDOWED, minRows: 200 },
  { query: "q13", job: jobs.q13Job, settings: WINDOWED, minRows: 20_000 },
  { query: "q14", job: jobs.q14Job, settings: HOURS, minRows: 200, covers: { column: "bidTimeType", values: ["dayTime", "nightTime", "otherTime"] } },
  { query: "q15", job: jobs.q15Job, settings: DAYS, minRows: 4, finalPer: ["day"] },
  { query: "q16", job: jobs.q16Job, settings: DAYS, minRows: 100, finalPer: ["channel", "day"] },
  { query: "q17", job: jobs.q17Job, settings: DAYS, minRows: 500, finalPer: ["auction", "day"] },
  { query: "q18", job: jobs.q18Job, settings: WINDOWED, minRows: 5_000, finalPer: ["bidder", "auction"] },
  { query: "q19", job: jobs.q19Job, settings: WINDOWED, minRows: 2_000, finalPer: ["auction", "rankNumber"] },
  { query: "q20", job: jobs.q20Job, settings: WINDOWED, minRows: 1_000 },
  // Ids of the four named channels, and ids from URLs.
  { query: "q21", job: jobs.q21Job, settings: WINDOWED, minRows: 10_000, covers: { column: "channelId", values: ["0", "1", "2", "3", "778567680"] } },
  { query: "q22", job: jobs.q22Job, settings: WINDOWED, minRows: 20_000 },
];

for (const { query, job, settings, minRows, covers, finalPer } of CASES) {
  test(`nexmark ${query} equals DuckDB's answer at parallelism 1 and 2`, async () => {
    const oracle = await useSettings(settings);
    const expected = await oracle.query(ORACLE_SQL[query]);
    assert.ok(expected.length >= minRows, `the data exercises ${query}: ${expected.length} rows`);
    if (covers !== undefined) {
      const seen = new Set(expected.map((row) => row[covers.column]));
      for (const value of covers.values) assert.ok(seen.has(value), `the data gives ${covers.column} = ${String(value)}`);
    }
    for (const parallelism of [1, 2]) {
      // With the check of `copy: "none"` states: the examples keep that option's promise.
      const handle = runJob(job, { parallelism, mode: parallelism === 1 ? "inline" : "threads", verifyCopyNone: true });
      const result = await handle.done;
      assert.equal(lateRecordsDropped(result.metrics), 0, "no event is late");
      const emitted = handle.collected<object>("out");
      const actual = finalPer === undefined ? emitted : finalRows(emitted, finalPer);
      assertSameRows(actual, expected, `${query} at parallelism ${parallelism}${finalPer === undefined ? "" : " (last row per group)"}`);
    }
  });
}

test("nexmark q12 counts every bid in exactly one processing-time window of its bidder, at parallelism 1 and 2", async () => {
  const oracle = await useSettings(WINDOWED);
  const expected = new Map((await oracle.query(ORACLE_SQL.q12)).map((row) => [row.bidder as number, row.bidCount as number]));
  // Inline, a manual clock jumps 10 s every few ms while the job runs, so bids spread over many
  // windows, most fired by their processing-time timer; on threads, the system clock (windows
  // mostly fired when the input ends).
  for (const parallelism of [1, 2]) {
    const clock = parallelism === 1 ? new ManualClock(0) : undefined;
    const ticking = clock === undefined ? undefined : setInterval(() => clock.advance(10_000), 2);
    const handle = runJob(jobs.q12Job, { parallelism, mode: parallelism === 1 ? "inline" : "threads", clock });
    try {
      await handle.done;
    } finally {
      clearInterval(ticking);
    }
    const windows = handle.collected<{ bidder: number; bidCount: number; starttime: number; endtime: number }>("out");
    const counted = new Map<number, number>();
    const seen = new Set<string>();
    for (const w of windows) {
      assert.equal(w.endtime - w.starttime, 10_000, "a window is 10 s long");
      assert.equal(w.starttime % 10_000, 0, "windows are aligned to 10 s");
      assert.ok(w.bidCount > 0, "a window holds bids");
      const id = `${w.bidder}@${w.starttime}`;
      assert.ok(!seen.has(id), `window ${id} fired once`);
      seen.add(id);
      counted.set(w.bidder, (counted.get(w.bidder) ?? 0) + w.bidCount);
    }
    assert.deepEqual(counted, expected, `bids per bidder over all windows at parallelism ${parallelism}`);
    if (parallelism === 1) {
      const starts = new Set(windows.map((w) => w.starttime));
      assert.ok(starts.size > 2, `the bids span several windows: ${starts.size}`);
    }
  }
});

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
