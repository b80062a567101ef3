/**
 * Your own data, end to end: a directory of gzipped NDJSON click logs (examples/clickstream/
 * generate.ts writes some) → user sessions (30 minutes of inactivity end one) → NDJSON files in
 * hourly buckets, exactly once. Lines that do not parse go to a dead-letter directory, with the file
 * and line they came from, instead of stopping the job.
 *
 *   npx tsx examples/clickstream/generate.ts --out data/clicks
 *   npx eddy run examples/clickstream/sessionize.ts -p 2 --checkpoint-interval 2000
 *   find out/sessions -name "part-*"     (dt=<day>/hour=<hour>/part-<subtask>-<n>.ndjson, once committed)
 *
 * Paths: CLICKS_IN (default data/clicks; CLICKS_FORMAT=csv for CSV logs), SESSIONS_OUT (default out/sessions; dead letters in
 * <SESSIONS_OUT>-dead-letters). A session's bucket is the hour it ended in (its window's event
 * time), in UTC.
 */
import {
  defineJob,
  EventTimeSessionWindows,
  FileSink,
  FileSource,
  WatermarkStrategy,
  type AggregateFunction,
  type DeadLetter,
  type StreamExecutionEnvironment,
  type TimeWindow,
  type Collector,
} from "eddy";
import type { Click } from "./generate.ts";

export const SESSION_GAP_MS = 30 * 60_000;
/** Logs of several servers interleave: a click may be logged up to 10 s after a later one. */
export const OUT_OF_ORDERNESS_MS = 10_000;

export interface Session {
  readonly user: string;
  /** The first click's time, and the session window's end (the last click + the gap), in ms. */
  readonly start: number;
  readonly end: number;
  readonly clicks: number;
  /** Distinct pages visited, in the order first visited. */
  readonly pages: readonly string[];
}

interface SessionAccumulator {
  clicks: number;
  pages: string[];
}

/** Counts a session's clicks and keeps its distinct pages; plain data, so it checkpoints as is. */
export const sessionSummary: AggregateFunction<Click, SessionAccumulator, SessionAccumulator> = {
  createAccumulator: () => ({ clicks: 0, pages: [] }),
  add: (click, acc) => {
    acc.clicks++;
    if (!acc.pages.includes(click.url)) acc.pages.push(click.url);
    return acc;
  },
  getResult: (acc) => acc,
  merge: (a, b) => ({ clicks: a.clicks + b.clicks, pages: [...a.pages, ...b.pages.filter((p) => !a.pages.includes(p))] }),
};

/** Where the job reads and writes; the command line sets them through the environment. */
export interface SessionPaths {
  readonly clicks: string;
  /** The logs' format: NDJSON (default) or CSV with a header `user,url,ts`, gzipped or not. */
  readonly format?: "ndjson" | "csv";
  readonly sessions: string;
  readonly deadLetters: string;
}

export function pathsFromEnvironment(): SessionPaths {
  const sessions = process.env.SESSIONS_OUT ?? "out/sessions";
  const format = process.env.CLICKS_FORMAT === "csv" ? "csv" : "ndjson";
  return { clicks: process.env.CLICKS_IN ?? "data/clicks", format, sessions, deadLetters: `${sessions}-dead-letters` };
}

/**
 * The pipeline; `inspect` sees every parsed click before it is keyed (the tests inject failures
 * there; the job passes nothing).
 */
export function sessionize(env: StreamExecutionEnvironment, paths: SessionPaths, inspect?: (click: Click) => void): void {
  const clicks = env
    .fromSource(
      paths.format === "csv" ? FileSource.csv<Click>(paths.clicks, { cast: true }) : FileSource.ndjson<Click>(paths.clicks),
      WatermarkStrategy.forBoundedOutOfOrderness<Click>(OUT_OF_ORDERNESS_MS).withTimestampAssigner((c) => c.ts),
      "click logs",
    )
    .onError("dead-letter");
  const inspected =
    inspect === undefined
      ? clicks
      : clicks.map((c) => {
          inspect(c);
          return c;
        });
  inspected
    .keyBy((c) => c.user)
    .window(EventTimeSessionWindows.withGap(SESSION_GAP_MS))
    .aggregate(sessionSummary, (user: string, window: TimeWindow, [acc]: [SessionAccumulator], out: Collector<Session>) =>
      out.collect({ user, start: window.start, end: window.end, clicks: acc.clicks, pages: acc.pages }),
    )
    .name("sessions")
    .uid("sessions")
    // A part file is rolled at every checkpoint: sessions become visible as checkpoints complete
    // (Flink's OnCheckpointRollingPolicy), not only when a part reaches its size or age.
    .sinkTo(FileSink.ndjson<Session>(paths.sessions, { buckets: { by: "event-time", pattern: "dt={yyyy}-{MM}-{dd}/hour={HH}" }, rollingPolicy: { rollOnCheckpoint: true } }))
    .name("Sink: sessions");
  clicks.deadLetters().sinkTo(FileSink.ndjson<DeadLetter>(paths.deadLetters)).name("Sink: dead letters");
}

export default defineJob("clickstream-sessions", (env) => sessionize(env, pathsFromEnvironment()));
