/**
 * The queues of the async I/O operator (async-wait-operator.ts), after Flink's
 * OrderedStreamElementQueue and UnorderedStreamElementQueue: they hold the records whose requests
 * are in flight (or complete but not yet emitted) and the watermarks between them, and decide
 * what may be emitted when a record completes.
 *
 * - Ordered: records leave in the order they came, each once it and every element before it are
 *   complete; a watermark leaves once every record before it has.
 * - Unordered: a watermark cuts the queue into segments. A record of the oldest segment leaves as
 *   soon as it completes; a record of a later segment waits until the segments before it have
 *   left. A segment's closing watermark leaves once all its records have: results may be
 *   reordered between two watermarks, never across one, so no record becomes late because of
 *   the reordering.
 *
 * `size` counts records and watermarks not yet emitted (a watermark takes a slot, as in Flink).
 * Every operation is O(1) amortized, except that a segment becoming the oldest emits its records
 * that completed meanwhile (each record is emitted once, so this is O(1) amortized per record).
 * Called on the task thread only, never concurrently.
 */
import { RingBuffer } from "../../core/ring-buffer.ts";

/** A record in the queue. `done` is set by the queue's `complete`, never by the entry's owner. */
export interface QueuedRecord {
  readonly isWatermark: false;
  done: boolean;
}

export interface QueuedWatermark {
  readonly isWatermark: true;
  readonly watermark: number;
}

export type QueueElement<R extends QueuedRecord> = R | QueuedWatermark;

/** Where a queue emits: a completed record, or a watermark (in an order the queue's mode allows). */
export interface QueueOutput<R extends QueuedRecord> {
  emitRecord(record: R): void;
  emitWatermark(watermark: number): void;
}

export interface AsyncWaitQueue<R extends QueuedRecord> {
  /** Records and watermarks not yet emitted. */
  readonly size: number;
  addRecord(record: R): void;
  /** Adds a watermark; emits it at once when nothing is waiting before it. */
  addWatermark(watermark: number): void;
  /** `record` (in this queue, not complete) completed: marks it done and emits what may go now. */
  complete(record: R): void;
  /** Every element not yet emitted, in an order that restores the same constraints (for snapshots). */
  forEach(visit: (element: QueueElement<R>) => void): void;
}

export function orderedQueue<R extends QueuedRecord>(output: QueueOutput<R>): AsyncWaitQueue<R> {
  /** Not yet emitted, in arrival order; the head is incomplete (or the queue is empty) between calls. */
  const elements = new RingBuffer<QueueElement<R>>(16);
  return {
    get size() {
      return elements.size;
    },
    addRecord(record) {
      elements.push(record);
    },
    addWatermark(watermark) {
      if (elements.size === 0) output.emitWatermark(watermark);
      else elements.push({ isWatermark: true, watermark });
    },
    complete(record) {
      record.done = true;
      if (elements.peek() !== record) return;
      for (let head = elements.peek(); head !== undefined && (head.isWatermark || head.done); head = elements.peek()) {
        elements.shift();
        if (head.isWatermark) output.emitWatermark(head.watermark);
        else output.emitRecord(head);
      }
    },
    forEach(visit) {
      for (let i = 0; i < elements.size; i++) visit(elements.at(i)!);
    },
  };
}

/** Records between two watermarks, and the watermark that closes them (undefined: still open, the newest). */
interface Segment<R> {
  /** Not yet emitted, complete or not; insertion order (Set keeps it) for snapshots. */
  readonly records: Set<R>;
  watermark: number | undefined;
}

export function unorderedQueue<R extends QueuedRecord>(output: QueueOutput<R>): AsyncWaitQueue<R> {
  /** Oldest first. Only the newest may be open; the oldest's completed records have been emitted. */
  const segments = new RingBuffer<Segment<R>>(4);
  let size = 0;
  /** Emits the oldest segments that can go, and the completed records of the segment left oldest. */
  const release = (): void => {
    for (let first = segments.peek(); first !== undefined; first = segments.peek()) {
      for (const r of first.records) {
        if (!r.done) continue;
        first.records.delete(r);
        size--;
        output.emitRecord(r);
      }
      if (first.records.size > 0 || first.watermark === undefined) return;
      segments.shift();
      size--;
      output.emitWatermark(first.watermark);
    }
  };
  return {
    get size() {
      return size;
    },
    addRecord(record) {
      let last = segments.at(segments.size - 1);
      if (last === undefined || last.watermark !== undefined) segments.push((last = { records: new Set(), watermark: undefined }));
      last.records.add(record);
      size++;
    },
    addWatermark(watermark) {
      if (size === 0) {
        output.emitWatermark(watermark);
        return;
      }
      const last = segments.at(segments.size - 1)!;
      if (last.watermark === undefined) last.watermark = watermark;
      else segments.push({ records: new Set(), watermark });
      size++;
    },
    complete(record) {
      record.done = true;
      const first = segments.peek();
      if (first === undefined || !first.records.has(record)) return;
      first.records.delete(record);
      size--;
      output.emitRecord(record);
      if (first.records.size === 0 && first.watermark !== undefined) release();
    },
    forEach(visit) {
      for (let i = 0; i < segments.size; i++) {
        const s = segments.at(i)!;
        for (const r of s.records) visit(r);
        if (s.watermark !== undefined) visit({ isWatermark: true, watermark: s.watermark });
      }
    },
  };
}
