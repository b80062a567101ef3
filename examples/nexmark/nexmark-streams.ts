/**
 * What every Nexmark query starts from: the generator source and its three tables (person,
 * auction, bid) as three typed streams, like the views over one `datagen` table in the Flink
 * Nexmark suite.
 *
 * Settings come from environment variables, read when a job is built (not when this module is
 * imported): the `eddy run` CLI and tests set them before starting a job, and worker threads,
 * which rebuild the job by importing its module, inherit the environment. So every query can be a
 * plain top-level `export default defineJob(...)`. Parallelism is not a setting here: it comes
 * from `eddy run -p N` or `runJob(job, { parallelism })`.
 *
 *   NEXMARK_EVENTS          events in total (default 100,000); "unbounded": never ends
 *   NEXMARK_FIRST_EVENT_ID  id of the first event (default 0)
 *   NEXMARK_EVENT_RATE      events per second of event time (default 10,000: 10 s of event
 *                           time per 100,000 events); lower it for more windows per event
 *   NEXMARK_SEED            another seed, another data set (default 0)
 *   NEXMARK_RATE_LIMIT      emission limit in events per second of processing time (default none)
 *   NEXMARK_SPLIT_BLOCK     consecutive event ids per source split block (default: the
 *                           source's); with static assignment, 1: each subtask takes every n-th id
 *   NEXMARK_SPLIT_ASSIGNMENT  "on-request" (default: each block to the source subtask that asks)
 *                           or "static" (each subtask owns every n-th block)
 */
import {
  nexmarkConfig,
  nexmarkSource,
  WatermarkStrategy,
  type AggregateFunction,
  type Auction,
  type Bid,
  type DataStream,
  type KeyedConnectedStreams,
  type NexmarkConfig,
  type NexmarkEvent,
  type NexmarkSplitAssignment,
  type Person,
  type StreamExecutionEnvironment,
} from "eddy";

/**
 * The watermark trails the largest event time a source subtask has emitted by this much: the
 * Nexmark suite's `WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND`. The generator's
 * event time never decreases within a subtask, and an operator's watermark is the least of its
 * inputs', so no event is late at any parallelism; the bound only delays results by 4 s of event
 * time (and would absorb disorder from a source that had some).
 */
export const WATERMARK_DELAY_MS = 4_000;

export interface NexmarkSettings {
  /** Events in total; undefined: unbounded. */
  readonly events: number | undefined;
  readonly config: NexmarkConfig;
  /** Emission limit (events/s of processing time over all subtasks); undefined: as fast as possible. */
  readonly ratePerSecond: number | undefined;
  /** Consecutive ids per source split block; undefined: the source's default. */
  readonly splitBlock: number | undefined;
  /** How blocks reach the source subtasks; undefined: the source's default (on request). */
  readonly splitAssignment: NexmarkSplitAssignment | undefined;
}

/** The number in environment variable `name` ("1_000_000" allowed), or `fallback` when unset. */
function numberSetting<F extends number | undefined>(name: string, fallback: F): number | F {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw.replaceAll("_", ""));
  if (!Number.isFinite(value)) throw new RangeError(`${name} must be a number, got '${raw}'`);
  return value;
}

function assignmentSetting(raw: string | undefined): NexmarkSplitAssignment | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (raw === "on-request" || raw === "static") return raw;
  throw new RangeError(`NEXMARK_SPLIT_ASSIGNMENT must be "on-request" or "static", got '${raw}'`);
}

/** The settings of the environment variables above, read now. */
export function nexmarkSettings(): NexmarkSettings {
  return {
    events: process.env.NEXMARK_EVENTS === "unbounded" ? undefined : numberSetting("NEXMARK_EVENTS", 100_000),
    config: nexmarkConfig({
      firstEventId: numberSetting("NEXMARK_FIRST_EVENT_ID", 0),
      firstEventRate: numberSetting("NEXMARK_EVENT_RATE", 10_000),
      seed: numberSetting("NEXMARK_SEED", 0),
    }),
    ratePerSecond: numberSetting("NEXMARK_RATE_LIMIT", undefined),
    splitBlock: numberSetting("NEXMARK_SPLIT_BLOCK", undefined),
    splitAssignment: assignmentSetting(process.env.NEXMARK_SPLIT_ASSIGNMENT),
  };
}

/** The generated events, with event time and watermarks. */
export function nexmarkEvents(env: StreamExecutionEnvironment): DataStream<NexmarkEvent> {
  const { events, config, ratePerSecond, splitBlock, splitAssignment } = nexmarkSettings();
  return env.fromSource(
    nexmarkSource({ events, config, ratePerSecond, splitBlock, splitAssignment }),
    // No timestamp assigner: the source stamps each event with its dateTime.
    WatermarkStrategy.forBoundedOutOfOrderness<NexmarkEvent>(WATERMARK_DELAY_MS),
    "Nexmark",
  );
}

// The three tables of the one source. A query takes the ones it reads: each is a flatMap chained
// to the source, so a record of the other kinds costs one property check.

export function personsOf(events: DataStream<NexmarkEvent>): DataStream<Person> {
  return events
    .flatMap<Person>((e, out) => {
      if (e.person !== undefined) out.collect(e.person);
    })
    .name("persons");
}

export function auctionsOf(events: DataStream<NexmarkEvent>): DataStream<Auction> {
  return events
    .flatMap<Auction>((e, out) => {
      if (e.auction !== undefined) out.collect(e.auction);
    })
    .name("auctions");
}

export function bidsOf(events: DataStream<NexmarkEvent>): DataStream<Bid> {
  return events
    .flatMap<Bid>((e, out) => {
      if (e.bid !== undefined) out.collect(e.bid);
    })
    .name("bids");
}

/** COUNT(*) of a window's records (q5, q11, q12): they send only their key across the keyBy, not whole bids. */
export const countRecords: AggregateFunction<unknown, number, number> = {
  createAccumulator: () => 0,
  add: (_record, n) => n + 1,
  getResult: (n) => n,
  merge: (a, b) => a + b,
};

/** Auctions and their bids, keyed by auction id on both sides (q4, q20). */
export function auctionsWithBids(events: DataStream<NexmarkEvent>): KeyedConnectedStreams<Auction, Bid, number> {
  return auctionsOf(events)
    .connect(bidsOf(events))
    .keyBy(
      (a) => a.id,
      (b) => b.auction,
    );
}
