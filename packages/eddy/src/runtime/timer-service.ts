/**
 * InternalTimerService: the timers of one keyed operator subtask (Flink's
 * `InternalTimerServiceImpl`). A timer is (key, namespace, timestamp) in one of two domains:
 * event time (fired by watermarks) and processing time (fired by the clock, through the
 * mailbox). Timers are deduplicated per domain and stored per key group, so they can be
 * snapshotted and rescaled with the keyed state.
 *
 * Semantics chosen where Flink leaves room:
 * - `advanceWatermark(w)` fires every event-time timer with timestamp ≤ w, including timers
 *   registered while firing and timers registered earlier for a time ≤ the current watermark —
 *   even when `w` equals the current watermark (the operator normally calls it only when the
 *   watermark advances, as Flink does). A watermark that goes back is an internal error.
 * - Processing-time firing (a mail) fires every timer ≤ `clock.now()` in (timestamp,
 *   registration) order, including timers registered while firing for a time ≤ now (Flink does
 *   the same; a timer that re-registers itself at `now` forever is a user bug).
 * - Registering an existing timer keeps its original registration order; deleting an absent one
 *   is a no-op.
 *
 * Cost per domain (runtime/timer-queue.ts): timers grouped by timestamp, a min-heap of the
 * distinct timestamps and per timestamp its timers in registration order; registering at a
 * timestamp that has timers (every key's window end) and firing are O(1), creating or emptying a
 * timestamp O(log n). A duplicate registration allocates nothing, and one equal to the previous
 * registration of its domain is answered without a lookup.
 *
 * Never called concurrently: every method runs on the task thread; the clock callback only
 * posts mail.
 */

import type { Clock, ScheduledCallback } from "../core/clock.ts";
import { EddyError } from "../core/errors.ts";
import type { ByteWriter } from "../core/codec/bytes.ts";
import { mapKeyOf } from "../core/key.ts";
import type { Key, MapKey } from "../core/key.ts";
import { writeTimerDeltaHeader, writeTimers, type RestoredTimer, type TimerDomain } from "../checkpoint/format/timers.ts";
import { TimerQueue, type Timer, type TimerNamespace } from "./timer-queue.ts";

export type { TimerNamespace } from "./timer-queue.ts";
export type { RestoredTimer, TimerDomain } from "../checkpoint/format/timers.ts";
export { readTimers } from "../checkpoint/format/timers.ts";

export type OnTimerCallback = (
  domain: TimerDomain,
  timestamp: number,
  key: Key,
  keyGroup: number,
  namespace: TimerNamespace,
) => void;

export interface InternalTimerServiceOptions {
  readonly clock: Clock;
  /** The key groups this subtask owns (inclusive); structurally core's `KeyGroupRange`. */
  readonly keyGroupRange: { readonly start: number; readonly end: number };
  /** Called on the task thread for every fired timer, in timestamp order. May register timers. */
  readonly onTimer: OnTimerCallback;
  /** Hands an action to the task's mailbox; the clock callback never fires timers directly. */
  readonly postMail: (action: () => void) => void;
}

/** A timer as `timersForKeyGroup` reports it. */
export interface TimerEntry {
  readonly domain: TimerDomain;
  readonly timestamp: number;
  readonly key: Key;
  readonly namespace: TimerNamespace;
}

export class InternalTimerService {
  readonly keyGroupRange: { readonly start: number; readonly end: number };
  readonly #clock: Clock;
  readonly #onTimer: OnTimerCallback;
  readonly #postMail: (action: () => void) => void;
  readonly #event: TimerQueue;
  readonly #processing: TimerQueue;
  #currentWatermark = Number.NEGATIVE_INFINITY;
  /** The watermark a snapshot recorded; watermarks up to it are ignored after a restore. */
  #restoredWatermark = Number.NEGATIVE_INFINITY;
  /** The one armed clock callback, for the earliest processing timer at `#armedAt`. */
  #armed: ScheduledCallback | undefined = undefined;
  #armedAt = Number.NaN;
  #closed = false;
  /**
   * Per key-group index, the keys of timers that the last incremental snapshot held and that
   * fired or were deleted since; undefined until the first incremental snapshot, so a job that
   * takes none (the heap backend, full checkpoints) records nothing. Timers registered since
   * that snapshot are not recorded here: they are the pending ones with a `seq` from
   * `#eventSince`/`#processingSince` on, which the next snapshot finds as it writes (TimerSnapshot).
   * So a timer registered and fired (or deleted) between two checkpoints — a window's, a
   * pane's — costs no recording at all.
   */
  #changed: (Map<MapKey, Key> | undefined)[] | undefined = undefined;
  /** The event-time queue's `nextSeq` at the last incremental snapshot (0 before: nothing is older). */
  #eventSince = 0;
  /** The processing-time queue's `nextSeq` at the last incremental snapshot. */
  #processingSince = 0;

  constructor(options: InternalTimerServiceOptions) {
    const { start, end } = options.keyGroupRange;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start) {
      throw new EddyError("INVALID_KEY_GROUP_RANGE", `invalid key-group range [${start}, ${end}]`);
    }
    this.keyGroupRange = Object.freeze({ start, end });
    this.#clock = options.clock;
    this.#onTimer = options.onTimer;
    this.#postMail = options.postMail;
    this.#event = new TimerQueue();
    this.#processing = new TimerQueue();
  }

  get currentWatermark(): number {
    return this.#currentWatermark;
  }

  currentProcessingTime(): number {
    return this.#clock.now();
  }

  registerEventTimeTimer(key: Key, keyGroup: number, namespace: TimerNamespace, timestamp: number): void {
    this.#event.add(key, keyGroup, this.#index(keyGroup), namespace, timestamp);
  }

  deleteEventTimeTimer(key: Key, keyGroup: number, namespace: TimerNamespace, timestamp: number): void {
    const removed = this.#event.take(mapKeyOf(key), this.#index(keyGroup), namespace, timestamp);
    if (removed !== undefined && removed.seq < this.#eventSince) this.#markChanged(removed);
  }

  registerProcessingTimeTimer(key: Key, keyGroup: number, namespace: TimerNamespace, timestamp: number): void {
    const timer = this.#processing.add(key, keyGroup, this.#index(keyGroup), namespace, timestamp);
    if (timer !== undefined && this.#processing.peek() === timer) this.#arm();
  }

  deleteProcessingTimeTimer(key: Key, keyGroup: number, namespace: TimerNamespace, timestamp: number): void {
    const queue = this.#processing;
    const head = queue.peek();
    const removed = queue.take(mapKeyOf(key), this.#index(keyGroup), namespace, timestamp);
    if (removed === undefined) return;
    if (removed.seq < this.#processingSince) this.#markChanged(removed);
    if (removed === head) this.#arm();
  }

  /** Fires, synchronously and in timestamp order, every event-time timer with timestamp ≤ `watermark`. */
  advanceWatermark(watermark: number): void {
    // After a restore, upstream event time starts again from below the restored watermark.
    if (watermark <= this.#restoredWatermark) return;
    if (!(watermark >= this.#currentWatermark)) {
      throw new EddyError(
        "WATERMARK_REGRESSED",
        `watermark went back from ${this.#currentWatermark} to ${watermark}; watermarks never decrease`,
      );
    }
    this.#currentWatermark = watermark;
    const queue = this.#event;
    for (let t = queue.peek(); t !== undefined && t.timestamp <= watermark; t = queue.peek()) {
      queue.poll();
      if (t.seq < this.#eventSince) this.#markChanged(t);
      this.#onTimer("event", t.timestamp, t.key, t.keyGroup, t.namespace);
    }
  }

  numEventTimeTimers(): number {
    return this.#event.size;
  }

  numProcessingTimeTimers(): number {
    return this.#processing.size;
  }

  /** Every timer of one key group (event-time first), for snapshots. Do not register while iterating. */
  *timersForKeyGroup(keyGroup: number): Generator<TimerEntry, void, undefined> {
    const index = this.#index(keyGroup);
    for (const t of this.#event.ofGroup(index)) {
      yield { domain: "event", timestamp: t.timestamp, key: t.key, namespace: t.namespace };
    }
    for (const t of this.#processing.ofGroup(index)) {
      yield { domain: "processing", timestamp: t.timestamp, key: t.key, namespace: t.namespace };
    }
  }

  /**
   * The synchronous part of a snapshot: the live timers of both domains. Timer objects never
   * change after creation (but for their heap position), so copying the two heap arrays is
   * enough for a frozen view; O(timers) pointer copies. `incremental` (a checkpoint written as a
   * base or delta, checkpoint/format/timers.ts): the snapshot also takes the keys whose timers
   * changed since the previous incremental snapshot, and recording starts over (the first
   * incremental snapshot starts the recording; it must be a base, as it is: the first of a
   * backend, and the first after a restore, are bases).
   */
  snapshotTimers(incremental = false): TimerSnapshot {
    const snapshot = new TimerSnapshot(
      this.keyGroupRange.start,
      this.#event.timers(),
      this.#processing.timers(),
      this.#currentWatermark,
      incremental ? { gone: this.#changed ?? [], eventSince: this.#eventSince, processingSince: this.#processingSince } : undefined,
    );
    if (incremental) {
      this.#changed = [];
      this.#eventSince = this.#event.nextSeq;
      this.#processingSince = this.#processing.nextSeq;
    }
    return snapshot;
  }

  /**
   * Restores timers read by `readTimers`, before processing starts. Timers are registered in
   * (timestamp, original registration) order, so timers of equal time fire in the same order as
   * they would have without the restore.
   */
  restoreTimers(timers: RestoredTimer[]): void {
    timers.sort((a, b) => a.timestamp - b.timestamp || a.seq - b.seq);
    for (const t of timers) {
      if (t.domain === "event") this.registerEventTimeTimer(t.key, t.keyGroup, t.namespace, t.timestamp);
      else this.registerProcessingTimeTimer(t.key, t.keyGroup, t.namespace, t.timestamp);
    }
  }

  /** Sets the watermark recorded by a snapshot (no timer fires: restored timers above it wait). */
  restoreWatermark(watermark: number): void {
    if (watermark > this.#currentWatermark) this.#currentWatermark = watermark;
    this.#restoredWatermark = watermark;
  }

  /** Cancels the clock callback; pending mail becomes a no-op. May be called more than once. */
  close(): void {
    this.#closed = true;
    this.#armed?.cancel();
    this.#armed = undefined;
    this.#armedAt = Number.NaN;
  }

  /** Keeps exactly one clock callback armed, for the earliest processing timer (if any). */
  #arm(): void {
    if (this.#closed) return;
    const head = this.#processing.peek();
    if (head !== undefined && this.#armed !== undefined && this.#armedAt === head.timestamp) return;
    this.#armed?.cancel();
    this.#armed = undefined;
    this.#armedAt = Number.NaN;
    if (head === undefined) return;
    this.#armedAt = head.timestamp;
    this.#armed = this.#clock.schedule(head.timestamp, this.#onClock);
  }

  readonly #onClock = (): void => {
    this.#armed = undefined;
    this.#armedAt = Number.NaN;
    this.#postMail(this.#fireProcessingTimers);
  };

  readonly #fireProcessingTimers = (): void => {
    if (this.#closed) return;
    const now = this.#clock.now();
    const queue = this.#processing;
    try {
      for (let t = queue.peek(); t !== undefined && t.timestamp <= now; t = queue.peek()) {
        queue.poll();
        if (t.seq < this.#processingSince) this.#markChanged(t);
        this.#onTimer("processing", t.timestamp, t.key, t.keyGroup, t.namespace);
      }
    } finally {
      this.#arm();
    }
  };

  /** Records that `timer`, which the last incremental snapshot held, is gone. */
  #markChanged(timer: Timer): void {
    const changed = this.#changed!;
    const keys = changed[timer.kgIndex];
    if (keys === undefined) changed[timer.kgIndex] = new Map([[timer.mapKey, timer.key]]);
    else keys.set(timer.mapKey, timer.key);
  }

  #index(keyGroup: number): number {
    const { start, end } = this.keyGroupRange;
    if ((keyGroup | 0) !== keyGroup || keyGroup < start || keyGroup > end) {
      throw new EddyError(
        "KEY_GROUP_OUT_OF_RANGE",
        `key group ${keyGroup} is outside this timer service's key-group range [${start}, ${end}]`,
      );
    }
    return keyGroup - start;
  }
}

/**
 * The timers of one timer service at a snapshot, written per key group in the layout of
 * checkpoint/format/timers.ts; an incremental snapshot also carries the keys whose timers changed
 * since the previous incremental snapshot, per key group (`writeKeyGroupChanges`).
 */
export class TimerSnapshot {
  readonly watermark: number;
  readonly #start: number;
  readonly #event: readonly Timer[];
  readonly #processing: readonly Timer[];
  /** What changed since the previous incremental snapshot (incremental snapshots only). */
  readonly #changes: TimerChanges | undefined;
  #eventByGroup: Map<number, Timer[]> | undefined;
  #processingByGroup: Map<number, Timer[]> | undefined;

  constructor(start: number, event: readonly Timer[], processing: readonly Timer[], watermark: number, changes?: TimerChanges) {
    this.#start = start;
    this.#event = event;
    this.#processing = processing;
    this.watermark = watermark;
    this.#changes = changes;
  }

  get size(): number {
    return this.#event.length + this.#processing.length;
  }

  hasKeyGroup(keyGroup: number): boolean {
    const index = keyGroup - this.#start;
    this.#eventByGroup ??= byGroup(this.#event);
    this.#processingByGroup ??= byGroup(this.#processing);
    return this.#eventByGroup.has(index) || this.#processingByGroup.has(index);
  }

  writeKeyGroup(keyGroup: number, out: ByteWriter): void {
    const index = keyGroup - this.#start;
    this.#eventByGroup ??= byGroup(this.#event);
    this.#processingByGroup ??= byGroup(this.#processing);
    writeTimers(this.#eventByGroup.get(index) ?? [], out);
    writeTimers(this.#processingByGroup.get(index) ?? [], out);
  }

  /**
   * An incremental delta's `timers` section of `keyGroup` (checkpoint/format/timers.ts): the keys
   * whose timers changed since the previous incremental snapshot and all their timers, and true;
   * false (nothing written) when no key of the group changed. Only for a snapshot taken with
   * `snapshotTimers(true)`.
   */
  writeKeyGroupChanges(keyGroup: number, out: ByteWriter): boolean {
    const changes = this.#changes!;
    const index = keyGroup - this.#start;
    this.#eventByGroup ??= byGroup(this.#event);
    this.#processingByGroup ??= byGroup(this.#processing);
    const event = this.#eventByGroup.get(index) ?? [];
    const processing = this.#processingByGroup.get(index) ?? [];
    // The keys whose timers changed: those that lost a timer the previous snapshot held, and
    // those with a timer registered since (this snapshot owns the map: the service started a new one).
    const changed = changes.gone[index] ?? new Map<MapKey, Key>();
    for (const t of event) if (t.seq >= changes.eventSince) changed.set(t.mapKey, t.key);
    for (const t of processing) if (t.seq >= changes.processingSince) changed.set(t.mapKey, t.key);
    if (changed.size === 0) return false;
    writeTimerDeltaHeader([...changed.values()], out);
    writeTimers(event.filter((t) => changed.has(t.mapKey)), out);
    writeTimers(processing.filter((t) => changed.has(t.mapKey)), out);
    return true;
  }
}

/** What an incremental snapshot's delta is made of (InternalTimerService.snapshotTimers). */
interface TimerChanges {
  /** Per key-group index, the keys of timers the previous snapshot held that fired or were deleted since. */
  readonly gone: readonly (Map<MapKey, Key> | undefined)[];
  /** Pending timers with a `seq` from these on were registered since the previous snapshot. */
  readonly eventSince: number;
  readonly processingSince: number;
}

function byGroup(timers: readonly Timer[]): Map<number, Timer[]> {
  const groups = new Map<number, Timer[]>();
  for (const t of timers) {
    const list = groups.get(t.kgIndex);
    if (list === undefined) groups.set(t.kgIndex, [t]);
    else list.push(t);
  }
  return groups;
}
