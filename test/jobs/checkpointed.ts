/**
 * The job of the exactly-once tests (test/checkpoints.test.ts), in its own module so worker
 * threads can rebuild it. A fault to inject comes from EDDY_CHK_FAULT (read when the job is
 * built): it fires once per marker file, however many times the job restarts and on whichever
 * worker, because the marker is created exclusively when it fires.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  defineJob,
  OutputTag,
  TumblingEventTimeWindows,
  ValueStateDescriptor,
  WatermarkStrategy,
  type DataStream,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type Sink,
  type StreamExecutionEnvironment,
} from "eddy";
import { committingCollectSink, twoPhaseTestSink } from "eddy/testing";
import { fireOnce, markingFirstCommit } from "./fault-markers.ts";

export const RECORDS = Number(process.env.EDDY_CHK_RECORDS ?? 480_000);
/**
 * Keys are contiguous ranges of record numbers, each inside one source split at parallelism 1,
 * 2 and 4 (RECORDS is a multiple of 4 × KEYS): every key's records reach its counter in order,
 * so the running counts are deterministic and comparable record for record.
 */
export const KEYS = 40;
const keyOf = (n: number): number => Math.floor(((n - 1) * KEYS) / RECORDS);

export interface Counted {
  readonly key: number;
  readonly count: number;
  readonly n: number;
}

/**
 * Where a fault is injected: `process` throws in a map, `exit` ends the worker thread (as a kill
 * would), `snapshot` throws in the sink's synchronous snapshot (prepareCommit), `commit` throws
 * right after the sink committed (the checkpoint completed and its output became visible).
 */
export type FaultKind = "process" | "exit" | "snapshot" | "commit";

export interface Fault {
  readonly kind: FaultKind;
  /** The fault fires once the map (process, exit) or the sink (snapshot, commit) has seen this record. */
  readonly atRecord: number;
  /** A file that does not exist yet: created when the fault fires. */
  readonly marker: string;
}

function fault(): Fault | undefined {
  const raw = process.env.EDDY_CHK_FAULT;
  return raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as Fault);
}

/** Fires the fault once: true for the single caller that created the marker. */
const fire = (f: Fault): boolean => fireOnce(f.marker);

const countPerKey: KeyedProcessFunction<number, number, Counted> = {
  processElement(n, ctx, out) {
    const state = ctx.getState(new ValueStateDescriptor<{ count: number }>("count"));
    const count = (state.value()?.count ?? 0) + 1;
    state.update({ count });
    out.collect({ key: ctx.getCurrentKey(), count, n });
  },
};

/**
 * A two-phase sink into files, for runs whose output must outlive the process (the CLI crash
 * test): each committable is a transaction written to `<dir>/<name>/<txnId>.json` by an atomic
 * rename, so committing it again after a restore rewrites the same file. The committed output is
 * every file of the directory.
 */
export function committingFileSink<T>(dir: string, name: string): Sink<T> {
  const target = join(dir, name);
  mkdirSync(target, { recursive: true });
  // Asynchronous, as a real client's commit: the kill -9 tests exercise commits in flight.
  return twoPhaseTestSink<T>(async (_context, txn) => {
    const tmp = join(target, `.${txn.txnId}.tmp`);
    await writeFile(tmp, JSON.stringify(txn.values));
    await rename(tmp, join(target, `${txn.txnId}.json`));
  });
}

/** Every record the file sink committed under `name` in `outDir` (one file per transaction), as sorted rows. */
export function committedFiles(outDir: string, name: string): string[] {
  return rowsOf(committedValues<Counted>(outDir, name));
}

/** Every record `committingFileSink` committed under `name` in `outDir`, in no particular order. */
export function committedValues<T>(outDir: string, name: string): T[] {
  const dir = join(outDir, name);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith(".json")).flatMap((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as T[]);
}

/** Output rows in a canonical order, for record-for-record comparison. */
export const rowsOf = (rows: readonly Counted[]): string[] => rows.map((r) => `${r.key}:${r.count}:${r.n}`).sort();

/** The newest checkpoint directory with a manifest under `jobDir`, or undefined. */
export function latestCheckpoint(jobDir: string): string | undefined {
  if (!existsSync(jobDir)) return undefined;
  const ids = readdirSync(jobDir)
    .map((d) => /^chk-(\d+)$/.exec(d))
    .filter((m): m is RegExpExecArray => m !== null && existsSync(join(jobDir, m[0], "_manifest")))
    .map((m) => Number(m[1]));
  return ids.length === 0 ? undefined : join(jobDir, `chk-${Math.max(...ids)}`);
}

/** The committing sink (into files when EDDY_CHK_OUT_DIR is set), with the snapshot and commit faults around it. */
function faultySink(name: string, f: Fault | undefined): Sink<Counted> {
  const outDir = process.env.EDDY_CHK_OUT_DIR;
  const inner = outDir === undefined || outDir === "" ? committingCollectSink<Counted>(name) : committingFileSink<Counted>(outDir, name);
  if (f === undefined || (f.kind !== "snapshot" && f.kind !== "commit")) return inner;
  let seen = 0;
  return {
    // A failing commit fails the task at once (no retries): the fault is there to test recovery.
    commitRetry: { attempts: 1, initialBackoffMs: 0, maxBackoffMs: 0 },
    createWriter(context) {
      const writer = inner.createWriter(context);
      return {
        write(value, timestamp) {
          if (value.n >= f.atRecord) seen++;
          return writer.write(value, timestamp);
        },
        prepareCommit() {
          if (f.kind === "snapshot" && seen > 0 && fire(f)) throw new Error(`injected fault in the sink's snapshot (record ${f.atRecord})`);
          return writer.prepareCommit!();
        },
      };
    },
    createCommitter(context) {
      const committer = inner.createCommitter!(context);
      return {
        async commit(committables) {
          await committer.commit(committables);
          // After the commit took effect: the failure a restore must not turn into duplicates.
          if (f.kind === "commit" && seen > 0 && fire(f)) throw new Error(`injected fault after the sink's commit (record ${f.atRecord})`);
        },
      };
    },
  };
}

/** For short sleeps of a map (Atomics.wait on a value that never changes). */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * The record numbers 1..RECORDS with event time = the number (monotonous per source subtask: no
 * record is ever late, so windows do not depend on timing), through a map that injects a
 * `process` or `exit` fault at its record.
 */
function numbers(env: StreamExecutionEnvironment, f: Fault | undefined): DataStream<number> {
  // EDDY_CHK_THROTTLE=n: the map sleeps 1 ms every n records, so a job that commands must reach
  // while it runs (the CLI savepoint test) lasts long enough on a fast or a loaded machine.
  const throttle = Number(process.env.EDDY_CHK_THROTTLE ?? 0);
  return env
    .fromSequence(1, RECORDS)
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
    .map((n: number) => {
      if (f !== undefined && n === f.atRecord && (f.kind === "process" || f.kind === "exit") && fire(f)) {
        if (f.kind === "exit") process.exit(3);
        throw new Error(`injected fault at record ${n}`);
      }
      if (throttle > 0 && n % throttle === 0) Atomics.wait(sleeper, 0, 0, 1);
      return n;
    });
}

export const countingJob = defineJob("checkpointed-counting", (env) => {
  const f = fault();
  const counted = numbers(env, f)
    .keyBy(keyOf)
    .process(countPerKey)
    .uid("count-per-key");
  counted.sinkTo(faultySink("counted", f), "committed");
  counted
    .keyBy((r) => r.key)
    .window(TumblingEventTimeWindows.of(1_000))
    .reduce((a, b) => ({ key: a.key, count: a.count + b.count, n: Math.max(a.n, b.n) }))
    .uid("window-sums")
    .sinkTo(faultySink("windows", undefined), "committed-windows");
});

export default countingJob;

/** Per key, how many of its records were even and odd (`count`, `n`), once at the end of input. */
const evensAndOdds: KeyedCoProcessFunction<number, number, number, Counted> = {
  processElement1(_n, ctx) {
    countSide(ctx, 1, 0);
  },
  processElement2(_n, ctx) {
    countSide(ctx, 0, 1);
  },
  onTimer(_timestamp, ctx, out) {
    const sides = ctx.getState(SIDES).value()!;
    out.collect({ key: ctx.getCurrentKey(), count: sides.evens, n: sides.odds });
  },
};

const SIDES = new ValueStateDescriptor<{ evens: number; odds: number }>("sides");

function countSide(ctx: KeyedProcessContext<number>, evens: number, odds: number): void {
  const state = ctx.getState(SIDES);
  const sides = state.value();
  // Past every record's event time: fires at the end of input, once per key.
  if (sides === undefined) ctx.timerService().registerEventTimeTimer(RECORDS + 1);
  state.update({ evens: (sides?.evens ?? 0) + evens, odds: (sides?.odds ?? 0) + odds });
}

/**
 * A join fed by two edges of one task (the even and the odd numbers, filtered from one source
 * task), as Nexmark's auctions and bids: at parallelism > 1 its subtasks read the two edges as
 * peers (StreamTask, docs/design/frames-and-codecs.md), barriers included. Emits per key its even
 * and odd record counts once, at the end (rows `key:evens:odds`), so the output does not depend
 * on the order the two edges are read in, and a record lost or counted twice changes it.
 */
export const peerJoinJob = defineJob("checkpointed-peer-join", (env) => {
  const f = fault();
  const all = numbers(env, f);
  all
    .filter((n) => n % 2 === 0)
    .connect(all.filter((n) => n % 2 === 1))
    .keyBy(keyOf, keyOf)
    .process(evensAndOdds)
    .uid("evens-and-odds")
    .sinkTo(faultySink("joined", undefined), "committed-joined");
});

/** peerJoinJob's rows, computed directly. */
export function expectedPeerJoin(): string[] {
  const rows: Counted[] = [];
  for (let key = 0; key < KEYS; key++) rows.push({ key, count: 0, n: 0 });
  for (let n = 1; n <= RECORDS; n++) {
    const row = rows[keyOf(n)] as { count: number; n: number };
    if (n % 2 === 0) row.count++;
    else row.n++;
  }
  return rowsOf(rows);
}

/** Out-of-order events with some late ones (event-time recovery test). */
export interface Event {
  readonly key: number;
  readonly ts: number;
  readonly seq: number;
}

export const EVENTS = Number(process.env.EDDY_CHK_EVENTS ?? 200_000);

/**
 * Deterministic out-of-order events: timestamps advance by ~1 ms per event with jitter up to
 * 200 ms back, every 50th event is 2 s late — later than the watermark's 300 ms bound — and every
 * 2000th event jumps 1.8 s ahead, which makes the events after it late for a while. (Whether a
 * restore keeps late events late is checked deterministically, per operator, in
 * test/checkpoint-operators.test.ts; this job checks it end to end.)
 */
export function outOfOrderEvents(): Event[] {
  let state = 12345;
  const next = (): number => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const out: Event[] = [];
  for (let seq = 0; seq < EVENTS; seq++) {
    const late = seq % 50 === 49 ? 2_000 : 0;
    const ahead = seq % 2_000 === 1_999 ? 1_800 : 0;
    out.push({ key: seq % 13, ts: Math.max(0, seq - Math.floor(next() * 200) - late + ahead), seq });
  }
  return out;
}

export interface WindowCount {
  readonly key: number;
  readonly end: number;
  readonly count: number;
  readonly seqSum: number;
}

export const LATE = "late";

/**
 * One source subtask (so the event order, and with a watermark per event also event time, is
 * deterministic), a fault point, 500 ms tumbling windows per key; late events go to a side
 * output. Both outputs go to committing sinks.
 */

export const eventTimeJob = defineJob("checkpointed-event-time", (env) => {
  const f = fault();
  // The test is about what a restore gives back, so the fault must come after a completed
  // checkpoint. On a loaded machine the first one can take longer than the whole input: until one
  // has completed, the map sleeps 1 ms every 100 events before the fault point (at most ~1.6 s),
  // and the fault fires at the first event from the fault point on once one has completed.
  const committed = f === undefined ? undefined : `${f.marker}.committed`;
  /** Whether this attempt has decided on the fault (it fires in one attempt only: see `fire`). */
  let faultDecided = false;
  const events = env
    .fromCollection(outOfOrderEvents())
    .setParallelism(1)
    .assignTimestampsAndWatermarks(
      WatermarkStrategy.forGenerator<Event>(() => {
        let max = Number.NEGATIVE_INFINITY;
        return {
          onEvent(e, _ts, out) {
            max = Math.max(max, e.ts);
            out.emitWatermark(max - 300 - 1);
          },
          onPeriodicEmit() {},
        };
      }).withTimestampAssigner((e) => e.ts),
    )
    .setParallelism(1)
    .map((e: Event) => {
      if (f === undefined) return e;
      if (e.seq < f.atRecord && e.seq % 100 === 0 && !existsSync(committed!)) Atomics.wait(sleeper, 0, 0, 1);
      if (!faultDecided && e.seq >= f.atRecord && f.kind === "process" && existsSync(committed!)) {
        faultDecided = true;
        if (fire(f)) throw new Error(`injected fault at event ${e.seq}`);
      }
      return e;
    })
    .setParallelism(1);
  const lateTag = new OutputTag<Event>(LATE);
  const windows = events
    .keyBy((e) => e.key)
    .window(TumblingEventTimeWindows.of(500))
    .sideOutputLateData(lateTag)
    .process<WindowCount>({
      process(key, ctx, elements, out) {
        let count = 0;
        let seqSum = 0;
        for (const e of elements) {
          count++;
          seqSum += e.seq;
        }
        out.collect({ key, end: ctx.window.end, count, seqSum });
      },
    })
    .uid("event-time-windows");
  windows.sinkTo(markingFirstCommit(committingCollectSink<WindowCount>("windows"), committed), "committed-windows");
  windows.getSideOutput(lateTag).sinkTo(committingCollectSink<Event>("late"), "committed-late");
});

/** Records of `slowJob`; each costs its map ~20 µs of CPU. */
export const SLOW_RECORDS = 100_000;

/**
 * A job whose user function is slow (a busy map, ~20 µs per record: ~2 s in all) in front of a
 * keyed sum: checkpoints must still complete while it runs, not only after.
 */
export const slowJob = defineJob("checkpointed-slow-map", (env) => {
  env
    .fromSequence(0, SLOW_RECORDS - 1)
    .map((n) => {
      const until = performance.now() + 0.02;
      while (performance.now() < until);
      return n;
    })
    .keyBy((n) => n % KEYS)
    .sum()
    .uid("slow-sum")
    .sinkTo(committingCollectSink<number>("sums"));
});

/**
 * Flips one byte in the middle of a task file (any file but the manifest) of the snapshot
 * directory `dir`, as a bad disk would; returns the file, and a function that flips it back.
 */
export function damageTaskFile(dir: string): { readonly file: string; readonly repair: () => void } {
  const name = readdirSync(dir)
    .filter((f) => f !== "_manifest" && !f.startsWith("_"))
    .sort()[0];
  if (name === undefined) throw new Error(`no task file in '${dir}'`);
  const file = join(dir, name);
  const flip = (): void => {
    const bytes = readFileSync(file);
    const at = bytes.length >> 1;
    bytes[at] = bytes[at]! ^ 0x40;
    writeFileSync(file, bytes);
  };
  flip();
  return { file, repair: flip };
}
