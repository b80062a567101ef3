/**
 * Jobs measured by bench/windows.ts: a keyed count per event-time window (tumbling, sliding,
 * session) emitted as `{ key, end, count }` into a counting sink. They are exported at a module's
 * top level so worker threads could rebuild them (docs/design/architecture.md,
 * "A job is a module"); sizes come from environment variables read when a job is built, so the
 * bench driver can set them per run.
 *
 * The input is a pure function of the event index `i` (bench/windows.ts recomputes it for its
 * hand-written loops): key `i % KEYS`, event time advancing STEP_MS per event with a
 * deterministic disorder of up to ±MAX_JITTER_MS, well inside the watermark bound, so nothing is
 * late and the results do not depend on when periodic watermarks happen to be emitted.
 */
import { foldingSink } from "../folding-sink.ts";
import { setting } from "./settings.ts";
import {
  defineJob,
  EventTimeSessionWindows,
  SlidingEventTimeWindows,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  type AggregateFunction,
  type DataStream,
  type StreamExecutionEnvironment,
  type TimeWindow,
  type WindowAssigner,
} from "eddy";

const EVENTS = setting("EDDY_BENCH_EVENTS", 2_000_000);
const KEYS = setting("EDDY_BENCH_KEYS", 1_000);

/** Event time of event 0; a multiple of every window size used, so windows start at round numbers. */
export const BASE_MS = 1_699_999_200_000;
/** Event time per event over all keys: with 1,000 keys, each key sees one event per second. */
export const STEP_MS = 1;
/** Largest deviation of an event from `BASE_MS + i * STEP_MS` (before session skips). */
export const MAX_JITTER_MS = 49;
/** The watermark bound: more than any two events are out of order (2 × MAX_JITTER_MS). */
export const OUT_OF_ORDERNESS_MS = 100;

/** Session workload: a key's events are KEYS × STEP_MS (1 s) apart inside a session ... */
export const SESSION_GAP_MS = 2_000;
/** ... and the timeline skips this much between sessions (> gap + jitter, so sessions separate). */
export const SESSION_SKIP_MS = 5_000;

export interface Ev {
  readonly key: number;
  readonly ts: number;
}

export interface WindowCount {
  readonly key: number;
  readonly end: number;
  readonly count: number;
}

/** Deterministic disorder in [-MAX_JITTER_MS, MAX_JITTER_MS]: ±(i·7919 mod 50). */
export const jitterMs = (i: number): number => {
  const d = (i * 7919) % 50;
  return (i & 1) === 0 ? d : -d;
};

/**
 * Session workload: `skips[r]` is how many SESSION_SKIP_MS gaps precede round r (events
 * r·keys … r·keys + keys - 1, one per key). Sessions last 10 to 50 rounds, varying by session.
 */
export function sessionSkips(events: number, keys: number): Int32Array {
  const rounds = Math.ceil(events / keys);
  const skips = new Int32Array(rounds);
  let session = 0;
  let left = sessionRounds(0);
  for (let r = 0; r < rounds; r++) {
    if (left === 0) left = sessionRounds(++session);
    skips[r] = session;
    left--;
  }
  return skips;
}

const sessionRounds = (session: number): number => 10 + ((session * 7919) % 41);

/** Event time of event `i`; `skips` only for the session workload. */
export function eventTimeMs(i: number, keys: number, skips: Int32Array | undefined): number {
  const ts = BASE_MS + i * STEP_MS + jitterMs(i);
  return skips === undefined ? ts : ts + skips[Math.floor(i / keys)]! * SESSION_SKIP_MS;
}

/** Order-independent 32-bit hash of one output record; the sink sums them mod 2^32. */
export function recordHash(key: number, end: number, count: number): number {
  let h = Math.imul(key + 1, 0x9e3779b1) ^ Math.imul((end - BASE_MS) | 0, 0x85ebca6b) ^ Math.imul(count, 0xc2b2ae35);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 13;
  return h >>> 0;
}

/** Folds each window result's hash (see the driver's loops), so Eddy and the loops can be compared. */
const countingSink = () => foldingSink<WindowCount>((r) => recordHash(r.key, r.end, r.count));

const count: AggregateFunction<Ev, number, number> = {
  createAccumulator: () => 0,
  add: (_e, n) => n + 1,
  getResult: (n) => n,
  merge: (a, b) => a + b,
};

/** The events of the workload, as a parallel-capable source (fromSequence splits into ranges). */
function events(env: StreamExecutionEnvironment, sessions: boolean): DataStream<Ev> {
  const [n, keys] = [EVENTS(), KEYS()];
  const skips = sessions ? sessionSkips(n, keys) : undefined;
  return env
    .fromSequence(0, n - 1)
    .map((i): Ev => ({ key: i % keys, ts: eventTimeMs(i, keys, skips) }))
    .assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness<Ev>(OUT_OF_ORDERNESS_MS).withTimestampAssigner((e) => e.ts));
}

function windowCount(name: string, assigner: () => WindowAssigner<Ev, TimeWindow>, sessions = false) {
  return defineJob(name, (env) => {
    events(env, sessions)
      .keyBy((e) => e.key)
      .window(assigner())
      // EDDY_BENCH_WINDOWS_LOCAL=off: the reference without local aggregation (bench/windows.ts runs both).
      .localAggregation(process.env["EDDY_BENCH_WINDOWS_LOCAL"] !== "off")
      .aggregate(count, (key, w, [n], out: { collect(r: WindowCount): void }) => out.collect({ key, end: w.end, count: n }))
      .uid("window-count")
      .sinkTo(countingSink());
  });
}

export const tumbling10s = windowCount("bench-window-tumbling-10s", () => TumblingEventTimeWindows.of<Ev>(10_000));
export const sliding10s2s = windowCount("bench-window-sliding-10s-2s", () => SlidingEventTimeWindows.of<Ev>(10_000, 2_000));
export const sliding60s1s = windowCount("bench-window-sliding-60s-1s", () => SlidingEventTimeWindows.of<Ev>(60_000, 1_000));
export const sessions = windowCount("bench-window-sessions", () => EventTimeSessionWindows.withGap<Ev>(SESSION_GAP_MS), true);
