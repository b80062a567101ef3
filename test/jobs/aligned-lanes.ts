/**
 * Two lanes of event time read by two source subtasks: "fast" (1,000 records, 2 ms of event time
 * apart, one per event-loop turn) and "slow" (20 records, 100 ms apart, at most one per 50 ms of
 * wall time). Both cover the same 2 s of event time, so without watermark alignment the fast lane
 * is done while the slow one has barely started; with it (test/watermark-alignment.test.ts), the
 * fast subtask waits whenever its watermark runs more than DRIFT_MS ahead of the slow one's.
 *
 * `lanes` measures on the thread the readers run on: with `lanes.measure` set (inline runs, where
 * the test shares this module with the job), the slow lane also waits until the fast one is done or
 * has not been read for STALL_MS (so without alignment nothing lets it keep up), the fast lane starts
 * after the slow one's first record, and the fast lane records how far each of its records runs
 * ahead of the slow lane's newest.
 */
import { defineJob, staticSplitEnumerator, WatermarkStrategy, type KeyedProcessFunction, type ReaderOutput, type Source, type SourceReader } from "eddy";
import { collectSink } from "eddy/testing";

export interface LaneRecord {
  readonly lane: string;
  readonly ts: number;
}

interface Lane {
  readonly id: "fast" | "slow";
  readonly stepMs: number;
  readonly records: number;
  /** Wall-time ms between records; 0: the next event-loop turn. */
  readonly paceMs: number;
}

export const LANES: readonly Lane[] = [
  { id: "fast", stepMs: 2, records: 1_000, paceMs: 0 },
  { id: "slow", stepMs: 100, records: 20, paceMs: 50 },
];
export const DRIFT_MS = 200;
const STALL_MS = 20;

export const lanes = {
  measure: false,
  slowMax: Number.NEGATIVE_INFINITY,
  fastLastRead: Number.NEGATIVE_INFINITY,
  fastDone: false,
  /** The most a fast record's time ran ahead of the slow lane's newest record (measured runs). */
  maxLead: Number.NEGATIVE_INFINITY,
  /**
   * The same, from the slow lane's second record on: by then the coordinator has the slow
   * subtask's reports (every 1 ms), and the fast one's bound comes from them.
   */
  maxLeadSettled: Number.NEGATIVE_INFINITY,
  reset(measure: boolean): void {
    this.measure = measure;
    this.slowMax = Number.NEGATIVE_INFINITY;
    this.fastLastRead = Number.NEGATIVE_INFINITY;
    this.fastDone = false;
    this.maxLead = Number.NEGATIVE_INFINITY;
    this.maxLeadSettled = Number.NEGATIVE_INFINITY;
  },
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `ready()` holds, looking every few ms. */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await sleep(2);
}

function lanesSource(): Source<LaneRecord, Lane> {
  return {
    boundedness: "bounded",
    maxParallelism: 2,
    createEnumerator: (context) => staticSplitEnumerator(context, LANES),
    createReader(): SourceReader<LaneRecord, Lane> {
      let lane: Lane | undefined;
      let next = 0;
      let noMore = false;
      let available: Promise<void> = Promise.resolve();
      /** Whether the pause after the last record is over (pollNext may be called before isAvailable resolves). */
      let due = true;
      const wait = (pause: Promise<unknown>): void => {
        due = false;
        available = pause.then(() => {
          due = true;
        });
      };
      return {
        pollNext(output: ReaderOutput<LaneRecord>) {
          if (!due) return "nothing";
          if (lane === undefined || next === lane.records) {
            if (lane !== undefined && lane.id === "fast") lanes.fastDone = true;
            return noMore ? "end" : "nothing";
          }
          const current = lane;
          if (current.id === "fast") {
            lanes.fastLastRead = performance.now();
            if (lanes.measure && lanes.slowMax === Number.NEGATIVE_INFINITY) {
              wait(until(() => lanes.slowMax !== Number.NEGATIVE_INFINITY));
              return "nothing";
            }
          }
          const ts = current.stepMs * next++;
          output.createOutputForSplit(current.id).collect({ lane: current.id, ts });
          if (current.id === "slow") lanes.slowMax = ts;
          else if (lanes.measure) {
            lanes.maxLead = Math.max(lanes.maxLead, ts - lanes.slowMax);
            if (lanes.slowMax > 0) lanes.maxLeadSettled = Math.max(lanes.maxLeadSettled, ts - lanes.slowMax);
          }
          if (next === current.records) output.releaseOutputForSplit(current.id);
          wait(
            current.paceMs === 0
              ? new Promise((resolve) => setImmediate(resolve))
              : sleep(current.paceMs).then(() => (lanes.measure ? until(() => lanes.fastDone || performance.now() - lanes.fastLastRead >= STALL_MS) : undefined)),
          );
          return "nothing";
        },
        isAvailable: () => available,
        addSplits: (splits) => {
          lane = splits[0];
        },
        notifyNoMoreSplits: () => void (noMore = true),
        snapshotState: () => (lane === undefined ? [] : [lane]),
      };
    },
  };
}

/** Watermarks after every record (so the test does not depend on when periodic emission runs). */
function strategy(aligned: boolean): WatermarkStrategy<LaneRecord> {
  const punctuated = WatermarkStrategy.forGenerator<LaneRecord>(() => {
    let max = Number.NEGATIVE_INFINITY;
    return {
      onEvent(_e, ts, output) {
        max = Math.max(max, ts);
        output.emitWatermark(max - 1);
      },
      onPeriodicEmit() {},
    };
  }).withTimestampAssigner((r) => r.ts);
  return aligned ? punctuated.withWatermarkAlignment("lanes", DRIFT_MS, 1) : punctuated;
}

/**
 * Downstream of both lanes (one subtask): how far each fast record arrives ahead of the newest slow
 * record seen, from the slow lane's second record on; what a window or join waiting for the slow
 * lane would have to hold. Works on worker threads too (it is part of the job, not of this module).
 */
function arrivalLeads(): KeyedProcessFunction<number, LaneRecord, number> {
  let slowMax = Number.NEGATIVE_INFINITY;
  return {
    processElement(r, _ctx, out) {
      if (r.lane === "slow") slowMax = Math.max(slowMax, r.ts);
      else if (slowMax > 0) out.collect(r.ts - slowMax);
    },
  };
}

function lanesJob(aligned: boolean) {
  return defineJob(aligned ? "aligned-lanes" : "unaligned-lanes", (env) => {
    const records = env.fromSource(lanesSource(), strategy(aligned), "lanes").setParallelism(2);
    records.sinkTo(collectSink<LaneRecord>("records"));
    records
      .keyBy(() => 0)
      .process(arrivalLeads())
      .setParallelism(1)
      .sinkTo(collectSink<number>("leads"));
  });
}

export const alignedLanes = lanesJob(true);
export const unalignedLanes = lanesJob(false);

/**
 * Both lanes on one reader (one subtask), which can pause a single split
 * (SourceReader.pauseOrResumeSplits): alignment per split. Each lane keeps its own pace; a
 * paused lane emits nothing until resumed. The records reach the sink (chained, one subtask) in
 * the order the reader emitted them.
 */
function lanesInOneReader(): Source<LaneRecord, Lane> {
  return {
    boundedness: "bounded",
    maxParallelism: 1,
    createEnumerator: (context) => staticSplitEnumerator(context, LANES),
    createReader(): SourceReader<LaneRecord, Lane> {
      const open: { lane: Lane; next: number; due: boolean }[] = [];
      const paused = new Set<string>();
      let noMore = false;
      let waiters: (() => void)[] = [];
      const wakeAll = (): void => {
        const w = waiters;
        waiters = [];
        for (const resolve of w) resolve();
      };
      const ready = (): boolean => open.some((o) => o.due && !paused.has(o.lane.id));
      return {
        pollNext(output: ReaderOutput<LaneRecord>) {
          for (const o of [...open]) {
            if (!o.due || paused.has(o.lane.id)) continue;
            const ts = o.lane.stepMs * o.next++;
            output.createOutputForSplit(o.lane.id).collect({ lane: o.lane.id, ts });
            if (o.next === o.lane.records) {
              output.releaseOutputForSplit(o.lane.id);
              open.splice(open.indexOf(o), 1);
              continue;
            }
            o.due = false;
            const due = (): void => {
              o.due = true;
              wakeAll();
            };
            if (o.lane.paceMs === 0) setImmediate(due);
            else setTimeout(due, o.lane.paceMs);
          }
          if (open.length === 0) return noMore ? "end" : "nothing";
          return "nothing";
        },
        isAvailable: () => (ready() || (open.length === 0 && noMore) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
        addSplits: (splits) => {
          for (const lane of splits) open.push({ lane, next: 0, due: true });
          wakeAll();
        },
        notifyNoMoreSplits: () => {
          noMore = true;
          wakeAll();
        },
        pauseOrResumeSplits(pause, resume) {
          for (const id of pause) paused.add(id);
          for (const id of resume) paused.delete(id);
          if (resume.length > 0) wakeAll();
        },
        snapshotState: () => open.map((o) => o.lane),
      };
    },
  };
}

function oneReaderJob(aligned: boolean) {
  return defineJob(aligned ? "split-aligned-lanes" : "split-unaligned-lanes", (env) => {
    env.fromSource(lanesInOneReader(), strategy(aligned), "lanes").setParallelism(1).sinkTo(collectSink<LaneRecord>("records"));
  });
}

/** Alignment per split: both lanes on one reader that pauses single splits. */
export const splitAlignedLanes = oneReaderJob(true);
export const splitUnalignedLanes = oneReaderJob(false);

/**
 * From records in the order one reader emitted them: how far fast records ran ahead of the newest
 * slow one, from the slow lane's first record on (`all`) and from its second (`settled`: by then
 * the coordinator has the subtask's reports).
 */
export function leadsInOrder(records: readonly LaneRecord[]): { all: number; settled: number } {
  let slowMax = Number.NEGATIVE_INFINITY;
  let all = Number.NEGATIVE_INFINITY;
  let settled = Number.NEGATIVE_INFINITY;
  for (const r of records) {
    if (r.lane === "slow") slowMax = Math.max(slowMax, r.ts);
    else if (slowMax !== Number.NEGATIVE_INFINITY) {
      all = Math.max(all, r.ts - slowMax);
      if (slowMax > 0) settled = Math.max(settled, r.ts - slowMax);
    }
  }
  return { all, settled };
}
