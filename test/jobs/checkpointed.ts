/**
 * The job of the exactly-once tests (test/checkpoints.test.ts), in its own module so worker
 * threads can rebuild it. A fault to inject comes from EDDY_CHK_FAULT (read when the job is
 * built): it fires once per marker file, however many times the job restarts and on whichever
 * worker, because the marker is created exclusively when it fires.
 */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  defineJob,
  TumblingEventTimeWindows,
  ValueStateDescriptor,
  WatermarkStrategy,
  type KeyedProcessFunction,
  type Sink,
} from "eddy";
import { committingCollectSink } from "eddy/testing";

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
function fire(f: Fault): boolean {
  try {
    writeFileSync(f.marker, "fired", { flag: "wx" });
    return true;
  } catch {
    return false;
  }
}

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
function committingFileSink(dir: string, name: string): Sink<Counted> {
  const target = join(dir, name);
  return {
    createWriter(context) {
      const writerId = `${context.subtaskIndex}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
      let sequence = 0;
      let staged: Counted[] = [];
      return {
        write(value) {
          staged.push(value);
        },
        prepareCommit() {
          if (staged.length === 0) return [];
          const txn = { txnId: `${writerId}-${sequence++}`, values: staged };
          staged = [];
          return [txn];
        },
      };
    },
    createCommitter() {
      mkdirSync(target, { recursive: true });
      return {
        commit(committables) {
          for (const c of committables as { txnId: string; values: Counted[] }[]) {
            const tmp = join(target, `.${c.txnId}.tmp`);
            writeFileSync(tmp, JSON.stringify(c.values));
            renameSync(tmp, join(target, `${c.txnId}.json`));
          }
        },
      };
    },
  };
}

/** The committing sink (into files when EDDY_CHK_OUT_DIR is set), with the snapshot and commit faults around it. */
function faultySink(name: string, f: Fault | undefined): Sink<Counted> {
  const outDir = process.env.EDDY_CHK_OUT_DIR;
  const inner = outDir === undefined || outDir === "" ? committingCollectSink<Counted>(name) : committingFileSink(outDir, name);
  if (f === undefined || (f.kind !== "snapshot" && f.kind !== "commit")) return inner;
  let seen = 0;
  return {
    createWriter(context) {
      const writer = inner.createWriter(context);
      return {
        write(value, timestamp) {
          if (value.n >= f.atRecord) seen++;
          writer.write(value, timestamp);
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
        commit(committables) {
          committer.commit(committables);
          // After the commit took effect: the failure a restore must not turn into duplicates.
          if (f.kind === "commit" && seen > 0 && fire(f)) throw new Error(`injected fault after the sink's commit (record ${f.atRecord})`);
        },
      };
    },
  };
}

export const countingJob = defineJob("checkpointed-counting", (env) => {
  const f = fault();
  const counted = env
    .fromSequence(1, RECORDS)
    // Event time is the record number, monotonous per source subtask: no record is ever late, so
    // the window stage's output does not depend on timing.
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n))
    .map((n: number) => {
      if (f !== undefined && n === f.atRecord && (f.kind === "process" || f.kind === "exit") && fire(f)) {
        if (f.kind === "exit") process.exit(3);
        throw new Error(`injected fault at record ${n}`);
      }
      return n;
    })
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
