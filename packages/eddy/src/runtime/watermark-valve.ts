/**
 * StatusWatermarkValve: combines the watermarks and watermark statuses (idle / active) of the N
 * input channels of a task into one output watermark and one output status, as Flink's
 * StatusWatermarkValve does. A pure state machine: the caller feeds it channel events and
 * forwards what it returns; no I/O, no timers.
 *
 * Rules:
 * - A channel's watermark only moves forward; a smaller or equal one is ignored.
 * - Watermarks that arrive on an idle channel are ignored (as in Flink): an idle channel has
 *   declared it will not hold back time, and a watermark does not make it active again; only
 *   `inputWatermarkStatus(channel, false)` does.
 * - A channel is *aligned* when it is active and its watermark ≥ the last output watermark. The
 *   output is the minimum over aligned channels, emitted only when strictly greater than the last
 *   output, so the output never regresses. A channel that comes back from idleness behind the
 *   output is not aligned (does not hold the output back) until its watermark catches up; its
 *   records up to then are late, by design.
 * - When a channel goes idle it leaves the minimum, which may advance the output.
 * - When the last active channel goes idle, every channel is idle and nothing will advance the
 *   minimum any more, so the valve flushes: it emits the maximum of all channels' watermarks (each
 *   channel's last watermark before it went idle) if that exceeds the output, then reports the
 *   output status idle. The output becomes active again as soon as any channel does.
 *
 * Where we differ from Flink (both only make the output advance sooner, never regress):
 * - Flink performs the all-idle flush only if the watermark of the channel that just went idle
 *   equals the last output, describing this as an optimisation ("the min was already advanced as
 *   channels went idle"). It is not one when that channel was unaligned: then Flink keeps the
 *   output below the maximum even though every channel is idle. We flush unconditionally, which
 *   is what Flink's comment says the flush means to do.
 * - Flink does not recompute the output when an idle channel becomes active. If no other active
 *   channel is aligned, the resumed channel alone defines the minimum; we emit it at once rather
 *   than at that channel's next watermark.
 * With these two choices the output after every event is simply
 *   out := max(out, all channels idle ? max(all watermarks) : min(aligned watermarks)),
 * which is what the oracle in the tests recomputes.
 *
 * Invariant (after every call): if some channel is aligned, the minimum over aligned channels
 * equals the output watermark. The shortcuts below rely on it.
 *
 * Cost: O(numChannels) when the channel holding the minimum advances or goes idle, O(1) otherwise.
 * Watermarks arrive per channel every ~200 ms, so this is not the per-record path.
 */

import { MIN_WATERMARK } from "../core/time.ts";

/**
 * What to forward after a status change. Forward in this order so a watermark is only ever
 * emitted while the output is active: for `statusChanged: "idle"`, the watermark first, then the
 * status; for `statusChanged: "active"`, the status first, then the watermark.
 */
export interface WatermarkStatusResult {
  /** New combined watermark to emit, if any. */
  readonly watermark?: number;
  /** The output status changed; emit the new status. */
  readonly statusChanged?: "idle" | "active";
}

const NOTHING: WatermarkStatusResult = Object.freeze({});

export class StatusWatermarkValve {
  /** Per channel, the greatest watermark received while it was active; MIN_WATERMARK at first. */
  readonly #channelWatermarks: Float64Array;
  /** Per channel, 1 when idle. All channels start active. */
  readonly #channelIdle: Uint8Array;
  /** Number of channels not idle; the output is idle exactly when this is 0. */
  #activeChannels: number;
  /** Last emitted watermark; never decreases. */
  #outputWatermark = MIN_WATERMARK;

  /** Precondition: `numChannels` is an integer ≥ 1. */
  constructor(numChannels: number) {
    if (!Number.isInteger(numChannels) || numChannels < 1) {
      throw new RangeError(`a watermark valve needs an integer number of channels ≥ 1, got ${numChannels}`);
    }
    this.#channelWatermarks = new Float64Array(numChannels).fill(MIN_WATERMARK);
    this.#channelIdle = new Uint8Array(numChannels);
    this.#activeChannels = numChannels;
  }

  get numChannels(): number {
    return this.#channelIdle.length;
  }

  /** The last emitted combined watermark (MIN_WATERMARK before the first). */
  get outputWatermark(): number {
    return this.#outputWatermark;
  }

  /** Whether the output status is idle, i.e. every channel is idle. */
  get isIdle(): boolean {
    return this.#activeChannels === 0;
  }

  channelWatermark(channel: number): number {
    this.#checkChannel(channel);
    return this.#channelWatermarks[channel]!;
  }

  isChannelIdle(channel: number): boolean {
    this.#checkChannel(channel);
    return this.#channelIdle[channel] === 1;
  }

  /**
   * A watermark arrived on `channel`. Returns the new combined watermark to emit, or undefined.
   * Preconditions: `channel` is a valid index; `watermark` is not NaN.
   */
  inputWatermark(channel: number, watermark: number): number | undefined {
    this.#checkChannel(channel);
    if (watermark !== watermark) throw new RangeError(`watermark on channel ${channel} is NaN`);
    if (this.#channelIdle[channel] === 1) return undefined;
    const previous = this.#channelWatermarks[channel]!;
    if (!(watermark > previous)) return undefined;
    this.#channelWatermarks[channel] = watermark;
    // Above the output before: aligned and not the minimum (invariant), so the minimum stands.
    if (previous > this.#outputWatermark) return undefined;
    // Still behind the output: not aligned yet, takes no part in the minimum.
    if (watermark < this.#outputWatermark) return undefined;
    return this.#advanceToMinOfAligned();
  }

  /**
   * `channel` became idle (`idle` true) or active again (`idle` false). Repeating the current
   * status of a channel changes nothing. See WatermarkStatusResult for the order of forwarding.
   * Precondition: `channel` is a valid index.
   */
  inputWatermarkStatus(channel: number, idle: boolean): WatermarkStatusResult {
    this.#checkChannel(channel);
    const wasIdle = this.#channelIdle[channel] === 1;
    if (idle === wasIdle) return NOTHING;
    if (idle) {
      this.#channelIdle[channel] = 1;
      this.#activeChannels--;
      if (this.#activeChannels === 0) {
        const watermark = this.#flushToMaxOfAllChannels();
        return watermark === undefined ? { statusChanged: "idle" } : { watermark, statusChanged: "idle" };
      }
      // Only the channel at the minimum can hold the output back (invariant); one above it or
      // one still unaligned below it leaves the minimum of the remaining aligned channels as is.
      if (this.#channelWatermarks[channel] !== this.#outputWatermark) return NOTHING;
      const watermark = this.#advanceToMinOfAligned();
      return watermark === undefined ? NOTHING : { watermark };
    }
    const outputWasIdle = this.#activeChannels === 0;
    this.#channelIdle[channel] = 0;
    this.#activeChannels++;
    // Resuming above the output: aligned at once. It moves the output only if no other channel
    // is aligned (otherwise the minimum is still the output, by the invariant).
    const watermark =
      this.#channelWatermarks[channel]! > this.#outputWatermark ? this.#advanceToMinOfAligned() : undefined;
    if (outputWasIdle) return watermark === undefined ? { statusChanged: "active" } : { watermark, statusChanged: "active" };
    return watermark === undefined ? NOTHING : { watermark };
  }

  /** Sets the output to the minimum over aligned channels if that is greater; returns it then. */
  #advanceToMinOfAligned(): number | undefined {
    const output = this.#outputWatermark;
    let min = Number.POSITIVE_INFINITY;
    let anyAligned = false;
    for (let i = 0; i < this.#channelWatermarks.length; i++) {
      const w = this.#channelWatermarks[i]!;
      if (this.#channelIdle[i] === 0 && w >= output) {
        anyAligned = true;
        if (w < min) min = w;
      }
    }
    if (!anyAligned || !(min > output)) return undefined;
    this.#outputWatermark = min;
    return min;
  }

  /** All channels are idle: sets the output to the maximum channel watermark if greater. */
  #flushToMaxOfAllChannels(): number | undefined {
    let max = MIN_WATERMARK;
    for (let i = 0; i < this.#channelWatermarks.length; i++) {
      const w = this.#channelWatermarks[i]!;
      if (w > max) max = w;
    }
    if (!(max > this.#outputWatermark)) return undefined;
    this.#outputWatermark = max;
    return max;
  }

  #checkChannel(channel: number): void {
    if (!Number.isInteger(channel) || channel < 0 || channel >= this.#channelIdle.length) {
      throw new RangeError(`channel must be an integer in [0, ${this.#channelIdle.length}), got ${channel}`);
    }
  }
}
