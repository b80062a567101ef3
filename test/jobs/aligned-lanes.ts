/**
 * Two lanes of event time read by two source subtasks: "fast" (1,000 records, 2 ms of event time
 * apart, one per event-loop turn) and "slow" (20 records, 100 ms apart, at most one per 50 ms of
 * wall time). Both cover the same 2 s of event time, so without watermark alignment the fast lane
 * is done while the slow one has barely started; with it (test/watermark-alignment.test.ts), the
 * fast subtask waits whenever its watermark runs more than DRIFT_MS ahead of the slow one's.
 *
 * How far the fast lane runs ahead is read from the order of the records (leadsInOrder).
 */
import { defineJob, staticSplitEnumerator, type ReaderOutput, type WatermarkStrategy, type Source, type SourceReader } from "eddy";
import { collectSink } from "eddy/testing";
import { watermarkAfterEachRecord } from "./punctuated.ts";

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

/**
 * Shared with the readers on this thread: with `measure` set (inline runs), the slow lane also
 * waits until the fast one is done or has not been read for STALL_MS, so without alignment nothing
 * lets it keep up and the fast lane is far ahead (the controls).
 */
export const lanes = {
  measure: false,
  fastLastRead: Number.NEGATIVE_INFINITY,
  fastDone: false,
  slowMax: Number.NEGATIVE_INFINITY,
  /**
   * How far fast records ran ahead of the slow lane's newest, from its second record on, measured
   * as the reader emits them: for runs whose sinks see another order (with checkpoints a collect
   * sink's records arrive a checkpoint at a time).
   */
  maxLeadSettled: Number.NEGATIVE_INFINITY,
  reset(measure: boolean): void {
    this.measure = measure;
    this.fastLastRead = Number.NEGATIVE_INFINITY;
    this.fastDone = false;
    this.slowMax = Number.NEGATIVE_INFINITY;
    this.maxLeadSettled = Number.NEGATIVE_INFINITY;
  },
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `ready()` holds, looking every few ms. */
async function until(ready: () => boolean): Promise<void> {
  while (!ready()) await sleep(2);
}

/**
 * The lanes as splits, one per reader at parallelism 2, both on one reader at parallelism 1. Each
 * lane keeps its own pace: after a record it is due again after its pause (pollNext may be called
 * before isAvailable resolves, and then emits nothing of a lane not due). With `splitPausing` the
 * reader pauses single lanes (SourceReader.pauseOrResumeSplits: alignment per split); without it,
 * only its subtask as a whole can be paused.
 */
function lanesSource(splitPausing: boolean): Source<LaneRecord, Lane> {
  return {
    boundedness: "bounded",
    maxParallelism: 2,
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
      /** The lane's pause after a record: a turn of the event loop, or its pace (then, measured, the fast lane's stall). */
      const pause = (lane: Lane): Promise<unknown> =>
        lane.paceMs === 0
          ? new Promise((resolve) => setImmediate(resolve))
          : sleep(lane.paceMs).then(() => (lanes.measure ? until(() => lanes.fastDone || performance.now() - lanes.fastLastRead >= STALL_MS) : undefined));
      const reader: SourceReader<LaneRecord, Lane> = {
        pollNext(output: ReaderOutput<LaneRecord>) {
          for (const o of [...open]) {
            if (!o.due || paused.has(o.lane.id)) continue;
            if (o.lane.id === "fast") lanes.fastLastRead = performance.now();
            const ts = o.lane.stepMs * o.next++;
            output.createOutputForSplit(o.lane.id).collect({ lane: o.lane.id, ts });
            if (o.lane.id === "slow") lanes.slowMax = ts;
            else if (lanes.slowMax > 0) lanes.maxLeadSettled = Math.max(lanes.maxLeadSettled, ts - lanes.slowMax);
            if (o.next === o.lane.records) {
              if (o.lane.id === "fast") lanes.fastDone = true;
              output.releaseOutputForSplit(o.lane.id);
              open.splice(open.indexOf(o), 1);
              continue;
            }
            o.due = false;
            void pause(o.lane).then(() => {
              o.due = true;
              wakeAll();
            });
          }
          return open.length === 0 && noMore ? "end" : "nothing";
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
        snapshotState: () => open.map((o) => o.lane),
      };
      if (splitPausing) {
        reader.pauseOrResumeSplits = (pause, resume) => {
          for (const id of pause) paused.add(id);
          for (const id of resume) paused.delete(id);
          if (resume.length > 0) wakeAll();
        };
      }
      return reader;
    },
  };
}

/** Watermarks after every record (so the test does not depend on when periodic emission runs). */
function strategy(aligned: boolean): WatermarkStrategy<LaneRecord> {
  const punctuated = watermarkAfterEachRecord<LaneRecord>((r) => r.ts);
  return aligned ? punctuated.withWatermarkAlignment("lanes", DRIFT_MS, 1) : punctuated;
}

/**
 * The lanes at parallelism 2 (a subtask each: alignment of subtasks) into two sinks: "records",
 * chained to the sources (inline, in the order the two subtasks emitted them, on one thread), and
 * "arrivals", one subtask downstream of both (in the order records reach it, on any thread).
 */
function lanesJob(aligned: boolean) {
  return defineJob(aligned ? "aligned-lanes" : "unaligned-lanes", (env) => {
    const records = env.fromSource(lanesSource(false), strategy(aligned), "lanes").setParallelism(2);
    records.sinkTo(collectSink<LaneRecord>("records"));
    records.sinkTo(collectSink<LaneRecord>("arrivals")).setParallelism(1);
  });
}

export const alignedLanes = lanesJob(true);
export const unalignedLanes = lanesJob(false);

/** Both lanes on one reader (parallelism 1) that pauses single splits: alignment per split. */
function oneReaderJob(aligned: boolean) {
  return defineJob(aligned ? "split-aligned-lanes" : "split-unaligned-lanes", (env) => {
    env.fromSource(lanesSource(true), strategy(aligned), "lanes").setParallelism(1).sinkTo(collectSink<LaneRecord>("records"));
  });
}

export const splitAlignedLanes = oneReaderJob(true);
export const splitUnalignedLanes = oneReaderJob(false);

/**
 * From records in the order they were emitted or arrived: how far fast records ran ahead of the
 * newest slow one, from the slow lane's first record on (`all`) and from its second (`settled`:
 * by then the coordinator has the slow subtask's reports); -Infinity when no fast record came
 * after.
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
