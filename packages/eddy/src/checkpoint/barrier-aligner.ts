/**
 * BarrierAligner: decides, for one task over all its input channels, when to snapshot for a
 * checkpoint (asynchronous barrier snapshotting, Carbone et al. 2015). It plays the part of
 * Flink's SingleCheckpointBarrierHandler (exactly-once: aligned) and CheckpointBarrierTracker
 * (at-least-once: counting). A pure state machine: the task feeds it what it reads from its
 * channels and what the coordinator says, and performs what it returns; no I/O, no timers.
 *
 * Channels are numbered 0..n-1 over all logical inputs of the task. Each channel is FIFO and
 * carries barriers with strictly increasing ids (ids may skip: a checkpoint aborted upstream is
 * never sent on). From that follows the one rule everything else derives from:
 *
 *   checkpoint n is *impossible* here once some channel delivers a barrier m > n before n.
 *
 * Rules (both modes):
 * - The first barrier of n starts n; it triggers when every channel that has not ended has
 *   delivered n. An ended channel can send nothing more, so it counts as delivered for every
 *   pending checkpoint it did not skip. With one channel a barrier triggers at once.
 * - A barrier m on channel c makes every pending n with (c's previous barrier) < n < m
 *   impossible: n is given up and reported in `aborted` (the task declines it).
 * - A barrier of an id ≤ the newest id seen on any channel that is not pending is ignored: it was
 *   triggered, aborted, or skipped by the channel that delivered the newer id.
 * - `abort(n)` (the coordinator cancelled n: timeout, decline elsewhere) drops n if pending and
 *   makes later barriers of n be ignored. It never reports n in `aborted`: the coordinator knows.
 * - When n triggers, every pending checkpoint older than n that has not also completed is
 *   aborted (reported). By the rule above none can exist; the step is kept as a guard.
 *
 * Exactly-once additionally blocks: a channel that delivered the pending checkpoint n is blocked
 * (the task does not read it) until n triggers or is aborted. Since a blocked channel delivers
 * nothing, a newer barrier always comes from a channel that did not deliver n, so n becomes
 * impossible then: at most one checkpoint is pending at a time, as in Flink.
 *
 * At-least-once never blocks and may have several checkpoints pending at once (as Flink's
 * tracker). We abort n only when it has become impossible, not on the first barrier of any newer
 * m: a channel may deliver n then m while a slower channel still has n in flight, and n can then
 * still complete. When an end-of-input completes several at once, all trigger, in order.
 *
 * Invariants (checked by the model-checking test):
 * - A checkpoint is triggered at most once; triggered ids strictly increase.
 * - A blocked channel is unblocked exactly by the trigger or abort of the checkpoint that
 *   blocked it; a channel is never blocked in at-least-once mode.
 * - A checkpoint triggers exactly when the reference rule says so: it started here, every
 *   channel delivered it or ended, it was not aborted by the coordinator and no channel skipped it.
 *
 * Preconditions (violations throw BARRIER_PROTOCOL_VIOLATION, a bug in the caller): channels in
 * range; no barrier or end-of-input read from a blocked or ended channel; barrier ids increase
 * per channel.
 *
 * Cost: O(1) for a barrier that only blocks or counts; O(channels) on trigger or abort (to list
 * the channels to unblock). Barriers are rare, so this is not the per-record path; `isBlocked` is
 * O(1) and allocation-free. Results are allocated only when something happens.
 */
import { EddyError } from "../core/errors.ts";

export type CheckpointingMode = "exactly-once" | "at-least-once";

/** What the task must do after an aligner event. Fields are empty arrays when nothing. */
export interface AlignerResult {
  /**
   * Checkpoints to snapshot now, ascending: for each, take the snapshot, then forward barrier n
   * downstream. Almost always zero or one id; several only in at-least-once mode when an
   * end-of-input completes several pending checkpoints at once.
   */
  readonly triggered: readonly number[];
  /** Checkpoints given up here because a channel skipped them: decline each to the coordinator. */
  readonly aborted: readonly number[];
  /** Channels to read again, ascending (exactly-once only). */
  readonly unblocked: readonly number[];
}

const NONE: readonly number[] = Object.freeze([]);

/** The shared result of an event that changes nothing visible to the task. */
export const NO_ALIGNER_ACTION: AlignerResult = Object.freeze({ triggered: NONE, aborted: NONE, unblocked: NONE });

interface PendingCheckpoint {
  readonly id: number;
  /** Open channels that have not yet delivered this checkpoint. Triggers at 0. */
  remaining: number;
}

export class BarrierAligner {
  readonly numChannels: number;
  readonly mode: CheckpointingMode;
  /** Per channel, the id of the last barrier it delivered; -Infinity before the first. */
  readonly #lastBarrier: Float64Array;
  /** Per channel, 1 once it has ended. */
  readonly #ended: Uint8Array;
  #openChannels: number;
  /** The highest barrier id delivered on any channel (ignored barriers included). */
  #newestId = Number.NEGATIVE_INFINITY;
  /** Started, not yet triggered or aborted; ascending ids. At most one in exactly-once mode. */
  #pending: PendingCheckpoint[] = [];
  /** Ids > newestId the coordinator aborted before their first barrier arrived; unordered, small. */
  #abortedAhead: number[] = [];

  constructor(numChannels: number, mode: CheckpointingMode) {
    if (!Number.isInteger(numChannels) || numChannels < 1) {
      throw new EddyError("BARRIER_PROTOCOL_VIOLATION", `a task needs at least one input channel, got ${numChannels}`);
    }
    this.numChannels = numChannels;
    this.mode = mode;
    this.#lastBarrier = new Float64Array(numChannels).fill(Number.NEGATIVE_INFINITY);
    this.#ended = new Uint8Array(numChannels);
    this.#openChannels = numChannels;
  }

  /** An independent aligner in the same state (the exhaustive tests explore interleavings from it). */
  clone(): BarrierAligner {
    const c = new BarrierAligner(this.numChannels, this.mode);
    c.#lastBarrier.set(this.#lastBarrier);
    c.#ended.set(this.#ended);
    c.#openChannels = this.#openChannels;
    c.#newestId = this.#newestId;
    c.#pending = this.#pending.map((p) => ({ ...p }));
    c.#abortedAhead = [...this.#abortedAhead];
    return c;
  }

  /** The newest checkpoint some but not all barriers of which have arrived; the one being aligned. */
  get pendingCheckpoint(): number | undefined {
    return this.#pending.length === 0 ? undefined : this.#pending[this.#pending.length - 1]!.id;
  }

  /** Whether the task must not read `channel` now. Always false in at-least-once mode. */
  isBlocked(channel: number): boolean {
    return (
      this.mode === "exactly-once" &&
      this.#pending.length > 0 &&
      this.#ended[channel] === 0 &&
      this.#lastBarrier[channel] === this.#pending[0]!.id
    );
  }

  onBarrier(channel: number, checkpointId: number): AlignerResult {
    this.#checkReadable(channel, "a barrier");
    const previous = this.#lastBarrier[channel]!;
    if (!(checkpointId > previous)) {
      throw violation(`channel ${channel} delivered barrier ${checkpointId} after barrier ${previous}; ids must increase`);
    }
    this.#lastBarrier[channel] = checkpointId;

    // Checkpoints this channel skipped can no longer complete.
    let aborted: number[] | undefined;
    let unblocked: number[] | undefined;
    for (let i = 0; i < this.#pending.length; ) {
      const id = this.#pending[i]!.id;
      if (id > previous && id < checkpointId) {
        this.#pending.splice(i, 1);
        (aborted ??= []).push(id);
        unblocked = this.#collectUnblocked(id, -1, unblocked);
      } else {
        i++;
      }
    }

    if (checkpointId > this.#newestId) {
      this.#newestId = checkpointId;
      const wasAborted = this.#abortedAhead.includes(checkpointId);
      if (this.#abortedAhead.length > 0) this.#abortedAhead = this.#abortedAhead.filter((id) => id > checkpointId);
      if (!wasAborted) this.#pending.push({ id: checkpointId, remaining: this.#openChannels - 1 });
    } else {
      const entry = this.#pending.find((p) => p.id === checkpointId);
      if (entry !== undefined) entry.remaining--;
    }
    return this.#settle(channel, aborted, unblocked);
  }

  onEndOfInput(channel: number): AlignerResult {
    this.#checkReadable(channel, "end-of-input");
    this.#ended[channel] = 1;
    this.#openChannels--;
    const last = this.#lastBarrier[channel]!;
    for (const p of this.#pending) if (last < p.id) p.remaining--;
    return this.#settle(-1, undefined, undefined);
  }

  /** The coordinator cancelled `checkpointId`. Idempotent; ids never seen here are remembered. */
  abort(checkpointId: number): AlignerResult {
    const index = this.#pending.findIndex((p) => p.id === checkpointId);
    if (index >= 0) {
      this.#pending.splice(index, 1);
      const unblocked = this.#collectUnblocked(checkpointId, -1, undefined);
      return unblocked === undefined ? NO_ALIGNER_ACTION : result(undefined, undefined, unblocked);
    }
    if (checkpointId > this.#newestId && !this.#abortedAhead.includes(checkpointId)) this.#abortedAhead.push(checkpointId);
    return NO_ALIGNER_ACTION;
  }

  /**
   * Triggers the newest complete pending checkpoint and every complete one before it; aborts the
   * incomplete ones before it (a guard: they cannot exist, see the file comment). `reading` is the
   * channel the event came from: it was not blocked, so it is not reported as unblocked.
   */
  #settle(reading: number, aborted: number[] | undefined, unblocked: number[] | undefined): AlignerResult {
    let newestComplete = -1;
    for (let i = this.#pending.length - 1; i >= 0; i--) {
      if (this.#pending[i]!.remaining === 0) {
        newestComplete = i;
        break;
      }
    }
    let triggered: number[] | undefined;
    if (newestComplete >= 0) {
      const done = this.#pending.splice(0, newestComplete + 1);
      triggered = [];
      for (const p of done) {
        if (p.remaining === 0) triggered.push(p.id);
        else (aborted ??= []).push(p.id);
        unblocked = this.#collectUnblocked(p.id, reading, unblocked);
      }
    }
    if (triggered === undefined && aborted === undefined && unblocked === undefined) return NO_ALIGNER_ACTION;
    return result(triggered, aborted, unblocked);
  }

  /** Adds the open channels but `except` blocked by `checkpointId` (no longer pending) to `into`. */
  #collectUnblocked(checkpointId: number, except: number, into: number[] | undefined): number[] | undefined {
    if (this.mode !== "exactly-once") return into;
    for (let c = 0; c < this.numChannels; c++) {
      if (c !== except && this.#ended[c] === 0 && this.#lastBarrier[c] === checkpointId) (into ??= []).push(c);
    }
    return into;
  }

  #checkReadable(channel: number, what: string): void {
    if (!Number.isInteger(channel) || channel < 0 || channel >= this.numChannels) {
      throw violation(`channel ${channel} is out of range 0..${this.numChannels - 1}`);
    }
    if (this.#ended[channel] === 1) throw violation(`${what} read from channel ${channel}, which has ended`);
    if (this.isBlocked(channel)) throw violation(`${what} read from channel ${channel}, which is blocked`);
  }
}

function result(triggered: number[] | undefined, aborted: number[] | undefined, unblocked: number[] | undefined): AlignerResult {
  return {
    triggered: triggered ?? NONE,
    aborted: aborted ?? NONE,
    unblocked: unblocked === undefined ? NONE : unblocked.sort((a, b) => a - b),
  };
}

function violation(message: string): EddyError {
  return new EddyError("BARRIER_PROTOCOL_VIOLATION", message);
}
