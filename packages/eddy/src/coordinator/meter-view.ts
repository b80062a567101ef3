/**
 * A rate per second over a sliding minute, made from a count sampled now and then: Flink's
 * MeterView (60 s span, a sample every 5 s), except that the rate is taken over the time the
 * samples actually cover (so it is not understated during the first minute) and up to the
 * current count, and that a view starts from a known origin (the count was 0 when its task
 * started), so the first reading is already a rate. The count lives where it is counted (a task, maybe on a worker thread); the view
 * holds only samples. A count that went down (a restart began new counters) starts the view over.
 *
 * Cost: SLOTS numbers per view; `update` and `rate` are O(1).
 */

/** Least time between two samples. */
export const METER_UPDATE_INTERVAL_MS = 5_000;
/** How far back a rate looks. */
export const METER_SPAN_MS = 60_000;
const SLOTS = METER_SPAN_MS / METER_UPDATE_INTERVAL_MS + 1;

export class MeterView {
  readonly #times = new Float64Array(SLOTS);
  readonly #counts = new Float64Array(SLOTS);
  /** Samples held (≤ SLOTS), the newest at #newest; the oldest is the one after it, cyclically. */
  #size = 0;
  #newest = -1;

  /** `originMs`: when the count was 0 (the task's start), kept as the first sample. */
  constructor(originMs: number) {
    this.#newest = 0;
    this.#times[0] = originMs;
    this.#counts[0] = 0;
    this.#size = 1;
  }

  /** Keeps (`nowMs`, `count`) as a sample if METER_UPDATE_INTERVAL_MS passed since the last one. */
  update(nowMs: number, count: number): void {
    if (this.#size > 0) {
      if (count < this.#counts[this.#newest]!) this.#size = 0;
      else if (nowMs - this.#times[this.#newest]! < METER_UPDATE_INTERVAL_MS) return;
    }
    this.#newest = (this.#newest + 1) % SLOTS;
    this.#times[this.#newest] = nowMs;
    this.#counts[this.#newest] = count;
    if (this.#size < SLOTS) this.#size++;
  }

  /** Events per second from the oldest sample within METER_SPAN_MS up to `count` at `nowMs` (0 without one). */
  rate(nowMs: number, count: number): number {
    for (let k = this.#size - 1; k >= 0; k--) {
      const i = (this.#newest - k + SLOTS) % SLOTS;
      const elapsed = nowMs - this.#times[i]!;
      if (elapsed > METER_SPAN_MS) continue;
      if (elapsed <= 0 || count < this.#counts[i]!) return 0;
      return ((count - this.#counts[i]!) * 1_000) / elapsed;
    }
    return 0;
  }
}
