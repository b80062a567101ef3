/**
 * The job of test/nexmark-source.test.ts, in its own module so worker threads can rebuild it: the
 * Nexmark source → each event as a line (with its event time) → a committing file sink, and per
 * event type a count per second of event time (a tumbling event-time window) → another. A source
 * subtask whose event times went backwards is reported to a third sink. The settings and a fault
 * to inject come from the environment (EDDY_NEXMARK_JOB), read when the job is built; the fault
 * fires once per marker file, however many times the job restarts and on whichever worker.
 */
import {
  defineJob,
  nexmarkSource,
  OutputTag,
  type Collector,
  type ProcessContext,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  type NexmarkEvent,
  type NexmarkSplitAssignment,
  type ProcessFunction,
} from "eddy";
import { fireOnce } from "./fault-markers.ts";
import { committingFileSink } from "./checkpointed.ts";

export interface NexmarkJobConfig {
  readonly outDir: string;
  readonly events: number;
  readonly splitBlock: number;
  readonly splitAssignment: NexmarkSplitAssignment;
  /**
   * Events per second over all subtasks: paced, so checkpoints complete during the run, inline
   * too (a sleeping user function would hold up the one thread and its checkpoints with it).
   */
  readonly ratePerSecond?: number;
  /** Fires when a source subtask has emitted `atEvent` events since it started (in any attempt). */
  readonly fault?: { readonly kind: "process" | "exit"; readonly atEvent: number; readonly marker: string };
}

/** An event as an output line: its type, event time and identifying fields. */
export function eventLine(e: NexmarkEvent, timestamp: number): string {
  switch (e.type) {
    case "person":
      return `p:${timestamp}:${e.person.id}`;
    case "auction":
      return `a:${timestamp}:${e.auction.id}`;
    case "bid":
      return `b:${timestamp}:${e.bid.auction}:${e.bid.bidder}:${e.bid.price}:${e.bid.extra.length}`;
  }
}

export interface WindowCount {
  readonly type: string;
  readonly end: number;
  readonly count: number;
}

/** Event times that went backwards within one source subtask. */
const DISORDER = new OutputTag<string>("disorder");

/** One per source subtask and attempt (a factory): each event as its line; the fault; the disorder check. */
class EventLines implements ProcessFunction<NexmarkEvent, string> {
  #seen = 0;
  #last = Number.NEGATIVE_INFINITY;

  constructor(private readonly fault: NexmarkJobConfig["fault"]) {}

  processElement(e: NexmarkEvent, ctx: ProcessContext, out: Collector<string>): void {
    const timestamp = ctx.timestamp()!;
    this.#seen++;
    if (timestamp < this.#last) ctx.output(DISORDER, `${timestamp} after ${this.#last}`);
    this.#last = timestamp;
    const f = this.fault;
    if (f !== undefined && this.#seen === f.atEvent && fireOnce(f.marker)) {
      if (f.kind === "exit") process.exit(3);
      throw new Error(`injected fault at event ${this.#seen} of a source subtask`);
    }
    out.collect(eventLine(e, timestamp));
  }
}

export default defineJob("nexmark-source-kill-and-compare", (env) => {
  const config = JSON.parse(process.env.EDDY_NEXMARK_JOB ?? "{}") as NexmarkJobConfig;
  const f = config.fault;
  const events = env.fromSource(
    nexmarkSource({ events: config.events, splitBlock: config.splitBlock, splitAssignment: config.splitAssignment, ratePerSecond: config.ratePerSecond }),
    WatermarkStrategy.forMonotonousTimestamps<NexmarkEvent>(),
    "nexmark",
  );
  // Chained to the source: what one source subtask emitted, in its order.
  const emitted = events.process(() => new EventLines(f)).uid("lines");
  emitted.sinkTo(committingFileSink<string>(config.outDir, "lines"), "committed lines");
  emitted.getSideOutput(DISORDER).sinkTo(committingFileSink<string>(config.outDir, "disorder"), "disorder");
  emitted
    .keyBy((line) => line.slice(0, 1))
    .window(TumblingEventTimeWindows.of(1_000))
    .aggregate<number, number, WindowCount>(
      { createAccumulator: () => 0, add: (_, n) => n + 1, getResult: (n) => n, merge: (a, b) => a + b },
      (type, window, counts, out) => {
        for (const count of counts) out.collect({ type, end: window.end, count });
      },
    )
    .uid("counts")
    .sinkTo(committingFileSink<WindowCount>(config.outDir, "counts"), "committed counts");
});

