/**
 * Combines the watermarks of several outputs into one, as Flink's WatermarkOutputMultiplexer
 * does: the per-split watermarks of a source reader (ReaderOutput.createOutputForSplit). A pure
 * state machine over the WatermarkOutput it writes to; no timers.
 *
 * Rules:
 * - Each registered output has a watermark (starting at the minimum watermark, so a new split
 *   holds event time back until it emits) and an idle flag (starting active). A watermark only
 *   moves an output forward; a smaller or equal one is ignored. Emitting a watermark makes an
 *   idle output active again (Flink does the same).
 * - The combined watermark is the minimum over the active outputs. When every output is idle the
 *   combined output is marked idle; when one becomes active again, active.
 * - Unregistering an output (the split is finished) removes it from the minimum, which may advance
 *   the combined watermark.
 * - With no outputs registered nothing is emitted: the last combined watermark stands.
 * The underlying output only takes increasing watermarks (WatermarkOutput's contract), so the
 * combined watermark never regresses, even when a split registered late starts behind it; its
 * records up to then are late, as in Flink.
 *
 * Updates are immediate (after every call on a partial output), except inside `deferUpdates`,
 * which combines once at its end: the periodic emission of every split costs one O(outputs) pass,
 * not one per split.
 */
import { EddyError } from "../core/errors.ts";
import { MIN_WATERMARK } from "../core/time.ts";
import type { WatermarkOutput } from "../core/watermark-strategy.ts";

/** One output of the multiplexer (a split's), with what it has emitted so far. */
export interface PartialWatermarkOutput extends WatermarkOutput {
  readonly watermark: number;
  readonly idle: boolean;
}

class Partial implements PartialWatermarkOutput {
  watermark = MIN_WATERMARK;
  idle = false;
  readonly #changed: () => void;

  constructor(changed: () => void) {
    this.#changed = changed;
  }

  emitWatermark(watermark: number): void {
    if (typeof watermark !== "number" || Number.isNaN(watermark)) {
      throw new EddyError("INVALID_WATERMARK", `watermark generator emitted ${String(watermark)}`);
    }
    if (watermark <= this.watermark && !this.idle) return;
    if (watermark > this.watermark) this.watermark = watermark;
    this.idle = false;
    this.#changed();
  }

  markIdle(): void {
    if (this.idle) return;
    this.idle = true;
    this.#changed();
  }

  markActive(): void {
    if (!this.idle) return;
    this.idle = false;
    this.#changed();
  }
}

export class WatermarkOutputMultiplexer {
  readonly #underlying: WatermarkOutput;
  readonly #outputs = new Map<string, Partial>();
  #deferring = false;
  #pending = false;

  constructor(underlying: WatermarkOutput) {
    this.#underlying = underlying;
  }

  get size(): number {
    return this.#outputs.size;
  }

  /** A new output under `id`; an id registered already is a programming error. */
  register(id: string): PartialWatermarkOutput {
    if (this.#outputs.has(id)) throw new EddyError("INTERNAL", `watermark output '${id}' is registered already`);
    const output = new Partial(() => this.#update());
    this.#outputs.set(id, output);
    this.#update();
    return output;
  }

  /** Removes the output `id` (false: there was none); the combined watermark may advance. */
  unregister(id: string): boolean {
    if (!this.#outputs.delete(id)) return false;
    this.#update();
    return true;
  }

  /** Runs `emit` (which may call any partial output many times), then combines once. */
  deferUpdates(emit: () => void): void {
    if (this.#deferring) {
      emit();
      return;
    }
    this.#deferring = true;
    try {
      emit();
    } finally {
      this.#deferring = false;
    }
    if (this.#pending) this.#update();
  }

  #update(): void {
    if (this.#deferring) {
      this.#pending = true;
      return;
    }
    this.#pending = false;
    if (this.#outputs.size === 0) return;
    let min = Number.POSITIVE_INFINITY;
    let allIdle = true;
    for (const output of this.#outputs.values()) {
      if (output.idle) continue;
      allIdle = false;
      if (output.watermark < min) min = output.watermark;
    }
    if (allIdle) {
      this.#underlying.markIdle();
      return;
    }
    this.#underlying.markActive();
    if (min > MIN_WATERMARK) this.#underlying.emitWatermark(min);
  }
}
