/**
 * The KafkaSource reader (Flink's KafkaSourceReader): one client per reader and one fetch in flight
 * for all its partitions (the broker answers as soon as any has records, or after fetchMaxWaitMs).
 * Fetched records are queued per partition and emitted by `pollNext` through the partition's own
 * split output, with the record's timestamp: each partition has its own watermark generator and
 * idleness, and the reader's watermark is the minimum over its partitions (per-partition
 * watermarks). Fetching pauses while `maxQueuedRecords` wait to be emitted. Watermark alignment
 * may pause single partitions (pauseOrResumeSplits): they are neither emitted nor fetched.
 *
 * Positions: a split's `next` is the offset of the next record to emit; once a fetch's records are
 * all emitted it moves to the fetch's `nextOffset` (past transaction markers and aborted records),
 * so a restored split resumes exactly there. Bounded splits end once `next` reaches `stop`.
 * When a checkpoint completes, the offsets it recorded are committed to the consumer group (for
 * lag monitoring; a restore never reads them).
 *
 * A record the deserializer cannot read goes to the error policy with topic, partition and offset.
 *
 * Asynchronous deserializers (a schema registry's: the writer schema is looked up by id, then
 * cached): when the deserializer returns a Promise for a queued record, the reader deserializes
 * every record queued behind it in the partition (in waves of 64), and emits nothing more of that
 * partition until they have all settled; then it emits their results in offset order as it emits
 * synchronous ones. `next` moves only as records are emitted, so a checkpoint taken while a batch
 * is awaited holds the offset of its first record: the restored reader fetches and deserializes it
 * again (no barrier passes a record fetched but not emitted). The synchronous path pays one
 * comparison per record (whether the record's result is already settled) and one `instanceof`.
 */
import type { InputStatus, ReaderOutput, SourceOutput, SourceReader, SourceReaderContext } from "eddy";
import { EddyError } from "eddy";
import type { ConsumerRecord, FetchResult, KafkaClient } from "./client.ts";
import type { KafkaSourceConfig } from "./kafka-source-options.ts";
import { readKafkaSplit, type KafkaSplit } from "./kafka-split.ts";
import { failsTask } from "./serde.ts";

/** Records emitted per `pollNext` call at most. */
const MAX_RECORDS_PER_POLL = 1024;
/** A bad record's raw bytes, bounded (BadRecord.raw). */
const MAX_RAW_BYTES = 65_536;
/** Asynchronous deserialization: records deserialized at once (then the next wave). */
const DESERIALIZE_WAVE = 64;
/** Checkpoints whose offsets are kept for committing when they complete (older ones are dropped). */
const MAX_REMEMBERED_CHECKPOINTS = 16;

interface Reading {
  readonly split: KafkaSplit;
  /** The offset of the next record to emit. */
  next: number;
  /** Fetched, not emitted: queue[head, length), in offset order. */
  queue: ConsumerRecord[];
  head: number;
  /** Where the next fetch starts (past what is queued). */
  fetchFrom: number;
  /** The `nextOffset` of the last fetch: `next` once the queue is emitted. */
  fetchedUpTo: number;
  /** The end the last fetch reported (LSO under read_committed): for the lag gauge. */
  end: number;
  finished: boolean;
  /** Async deserialization: results of queue[settledFrom, settledTo) once settled (index i at settled[i - settledFrom]). */
  settled: unknown[];
  settledFrom: number;
  settledTo: number;
  /** Whether the records behind queue[head] are being deserialized (nothing of this split is emitted until then). */
  awaiting: boolean;
}

/** A record whose asynchronous deserialization failed. */
class Failed {
  constructor(readonly error: unknown) {}
}

/** What `isAvailable` returns: one promise until `notify` resolves it (the next wait makes a new one). */
function signal(): { wait(): Promise<void>; notify(): void } {
  let promise: Promise<void> | undefined;
  let resolve: (() => void) | undefined;
  return {
    wait: () => (promise ??= new Promise<void>((r) => (resolve = r))),
    notify() {
      const r = resolve;
      promise = resolve = undefined;
      r?.();
    },
  };
}

export function kafkaSourceReader<T>(config: KafkaSourceConfig<T>, context: SourceReaderContext): SourceReader<T, KafkaSplit> {
  const readings = new Map<string, Reading>();
  /** Splits paused by watermark alignment (pauseOrResumeSplits): neither emitted nor fetched. */
  const paused = new Set<string>();
  const offsetsAt = new Map<number, { topic: string; partition: number; offset: number }[]>();
  let client: KafkaClient | undefined;
  let fetching = false;
  let noMoreSplits = false;
  let failure: EddyError | undefined;
  let closed = false;
  const availability = signal();
  const where = `KafkaSource (subtask ${context.subtaskIndex})`;

  // Flink's KafkaSourceReaderMetrics: offset commits to the group, by outcome.
  const commitsSucceeded = context.metrics.counter("commitsSucceeded");
  const commitsFailed = context.metrics.counter("commitsFailed");
  context.metrics.setPendingRecordsGauge(() => {
    let n = 0;
    for (const r of readings.values()) if (!r.finished) n += Math.max(0, (r.split.stop >= 0 ? Math.min(r.end, r.split.stop) : r.end) - r.next);
    return n;
  });

  const notify = availability.notify;
  const fail = (e: unknown, what: string): void => {
    if (closed) return;
    failure ??= e instanceof EddyError ? e : new EddyError("KAFKA_SOURCE_FAILED", `${where} could not ${what}: ${e instanceof Error ? e.message : String(e)}`, { subtask: context.subtaskIndex, cause: e });
    notify();
  };

  /** Records queued by splits that are not paused (a paused split's queue waits, and holds no fetch back). */
  const queued = (): number => {
    let n = 0;
    for (const r of readings.values()) if (!paused.has(r.split.splitId)) n += r.queue.length - r.head;
    return n;
  };
  /** Whether a split has queued records it can emit now (not paused, not awaiting their deserialization). */
  const emittable = (): boolean => {
    for (const r of readings.values()) if (r.head < r.queue.length && !r.awaiting && !paused.has(r.split.splitId)) return true;
    return false;
  };

  /** One fetch for every partition that is not finished, not past its stop and not paused. */
  const fetch = (): void => {
    if (fetching || closed || failure !== undefined || queued() >= config.maxQueuedRecords) return;
    const wanted = [...readings.values()].filter((r) => !r.finished && !paused.has(r.split.splitId) && (r.split.stop < 0 || r.fetchFrom < r.split.stop));
    if (wanted.length === 0) return;
    client ??= config.client();
    fetching = true;
    client
      .fetch(
        wanted.map((r) => ({ topic: r.split.topic, partition: r.split.partition, offset: r.fetchFrom })),
        { isolation: config.isolation, maxRecords: config.maxRecordsPerFetch, maxWaitMs: config.fetchMaxWaitMs },
      )
      .then(
        (results: readonly FetchResult[]) => {
          fetching = false;
          if (closed) return;
          for (const res of results) {
            const r = readings.get(`${res.topic}-${res.partition}`);
            if (r === undefined || r.finished) continue;
            for (const rec of res.records) if (r.split.stop < 0 || rec.offset < r.split.stop) r.queue.push(rec);
            r.fetchFrom = res.nextOffset;
            r.fetchedUpTo = res.nextOffset;
            r.end = config.isolation === "read_committed" ? res.lastStableOffset : res.highWatermark;
          }
          notify();
        },
        (e: unknown) => {
          fetching = false;
          fail(e, `fetch from ${wanted.map((r) => `${r.split.splitId} at offset ${r.fetchFrom}`).join(", ")}`);
        },
      );
  };

  /**
   * `first`, the pending deserialization of queue[head], and every record queued behind it (in
   * waves of DESERIALIZE_WAVE): once all have settled their results are in `r.settled` and the
   * split emits again.
   */
  const awaitRest = (r: Reading, first: Promise<T>): void => {
    const from = r.head;
    const to = r.queue.length;
    const queue = r.queue;
    r.awaiting = true;
    const settle = (p: Promise<unknown>): Promise<unknown> => p.catch((error: unknown) => new Failed(error));
    const settled = (rec: ConsumerRecord): Promise<unknown> => {
      try {
        return settle(Promise.resolve(config.deserialize(rec)));
      } catch (error) {
        return Promise.resolve(new Failed(error));
      }
    };
    void (async () => {
      // In waves: the registry serdes serialize their cache lookups on a mutex, which thousands of
      // calls at once make slower per record than a few dozen.
      const results: unknown[] = [];
      for (let i = from; i < to && !closed; i += DESERIALIZE_WAVE) {
        const wave: Promise<unknown>[] = [];
        for (let j = i; j < Math.min(to, i + DESERIALIZE_WAVE); j++) wave.push(j === from ? settle(first) : settled(queue[j]!));
        for (const x of await Promise.all(wave)) results.push(x);
      }
      // A split removed, restarted or closed meanwhile: its queue is another array now.
      if (closed || r.queue !== queue) return;
      r.settled = results;
      r.settledFrom = from;
      r.settledTo = to;
      r.awaiting = false;
      notify();
    })();
  };

  const reportBad = (out: SourceOutput<T>, rec: ConsumerRecord, error: unknown): void => {
    const raw = rec.value === null ? "" : rec.value.length > MAX_RAW_BYTES ? rec.value.slice(0, MAX_RAW_BYTES) : rec.value.slice();
    out.reportBadRecord({ raw, error, position: { topic: rec.topic, partition: rec.partition, offset: rec.offset } });
  };

  /** Emits up to `budget` queued records of `r`; returns how many. */
  const emit = (r: Reading, output: ReaderOutput<T>, budget: number): number => {
    if (r.awaiting) return 0;
    const out = output.createOutputForSplit(r.split.splitId);
    let emitted = 0;
    // hot path
    while (r.head < r.queue.length && emitted < budget) {
      const rec = r.queue[r.head]!;
      let value: T | Promise<T>;
      if (r.head < r.settledTo) {
        const settled = r.settled[r.head - r.settledFrom];
        if (settled instanceof Failed) {
          if (failsTask(settled.error)) {
            fail(settled.error, `deserialize ${rec.topic}-${rec.partition} at offset ${rec.offset}`);
            break;
          }
          r.head++;
          r.next = rec.offset + 1;
          emitted++;
          reportBad(out, rec, settled.error);
          continue;
        }
        value = settled as T;
      } else {
        try {
          value = config.deserialize(rec);
        } catch (error) {
          if (failsTask(error)) {
            fail(error, `deserialize ${rec.topic}-${rec.partition} at offset ${rec.offset}`);
            break;
          }
          r.head++;
          r.next = rec.offset + 1;
          emitted++;
          reportBad(out, rec, error);
          continue;
        }
        if (value instanceof Promise) {
          // Not emitted (nor `next` moved) until it and the records behind it have settled.
          awaitRest(r, value);
          break;
        }
      }
      r.head++;
      r.next = rec.offset + 1;
      emitted++;
      out.collect(value, rec.timestamp);
    }
    if (r.head === r.queue.length) {
      r.queue = [];
      r.head = 0;
      r.settled = [];
      r.settledFrom = r.settledTo = 0;
      // Everything fetched is emitted: skip what the fetch skipped (markers, aborted records).
      r.next = Math.max(r.next, r.fetchedUpTo);
    }
    if (r.split.stop >= 0 && r.next >= r.split.stop && r.head === r.queue.length) {
      r.finished = true;
      output.releaseOutputForSplit(r.split.splitId);
    }
    return emitted;
  };

  return {
    addSplits(splits) {
      for (const s of splits.map(readKafkaSplit)) {
        const r: Reading = { split: s, next: s.next, queue: [], head: 0, fetchFrom: s.next, fetchedUpTo: s.next, end: s.next, finished: false, settled: [], settledFrom: 0, settledTo: 0, awaiting: false };
        // A bounded split that starts at its stop has nothing to read.
        if (s.stop >= 0 && s.next >= s.stop) r.finished = true;
        readings.set(s.splitId, r);
      }
      notify();
    },

    notifyNoMoreSplits() {
      noMoreSplits = true;
      notify();
    },

    pollNext(output): InputStatus {
      if (failure !== undefined) throw failure;
      let budget = MAX_RECORDS_PER_POLL;
      for (const r of readings.values()) {
        if (budget <= 0) break;
        if (r.finished || paused.has(r.split.splitId)) continue;
        budget -= emit(r, output, budget);
        // A bounded split may finish with nothing queued (its end was reached by skipping markers).
        if (!r.finished && r.split.stop >= 0 && r.next >= r.split.stop) {
          r.finished = true;
          output.releaseOutputForSplit(r.split.splitId);
        }
      }
      // A serde's EddyError (the registry could not be asked) fails the reader during emit.
      if (failure !== undefined) throw failure;
      fetch();
      if (emittable()) return "more";
      if (noMoreSplits && [...readings.values()].every((r) => r.finished)) return "end";
      return "nothing";
    },

    isAvailable() {
      if (failure !== undefined || emittable() || (noMoreSplits && [...readings.values()].every((r) => r.finished))) return Promise.resolve();
      fetch();
      return availability.wait();
    },

    snapshotState(checkpointId) {
      const splits = [...readings.values()].map((r): KafkaSplit => ({ ...r.split, next: r.next }));
      if (config.commitOffsets) {
        offsetsAt.set(checkpointId, splits.map((s) => ({ topic: s.topic, partition: s.partition, offset: s.next })));
        for (const id of offsetsAt.keys()) if (offsetsAt.size > MAX_REMEMBERED_CHECKPOINTS) offsetsAt.delete(id);
      }
      return splits;
    },

    notifyCheckpointComplete(checkpointId) {
      const offsets = offsetsAt.get(checkpointId);
      for (const id of [...offsetsAt.keys()]) if (id <= checkpointId) offsetsAt.delete(id);
      if (offsets === undefined || offsets.length === 0 || closed) return;
      client ??= config.client();
      // Monitoring only: a failed commit is counted (commitsFailed); the next checkpoint's commit carries newer offsets.
      client.commitOffsets(config.groupId!, offsets).then(
        () => commitsSucceeded.inc(),
        () => commitsFailed.inc(),
      );
    },

    /**
     * Watermark alignment per partition: a paused partition's queued records wait and it is left
     * out of fetches (Flink's KafkaSourceReader pauses the partition in its consumer); a fetch in
     * flight may still queue some of its records. Positions are unaffected: `next` moves only as
     * records are emitted.
     */
    pauseOrResumeSplits(pause, resume) {
      for (const id of pause) paused.add(id);
      for (const id of resume) paused.delete(id);
      if (resume.length > 0) notify();
    },

    close() {
      if (closed) return;
      closed = true;
      notify();
      void client?.close();
    },
  };
}
