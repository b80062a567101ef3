/**
 * Processing time, injected. Library code never calls `Date.now()` or `setTimeout` directly; it
 * asks a Clock, so tests drive every time-dependent behaviour with a manual clock.
 */

export interface ScheduledCallback {
  /** Cancels the callback if it has not run yet. May be called more than once. */
  cancel(): void;
}

export interface Clock {
  /** Current processing time in milliseconds. Never decreases. */
  now(): number;
  /**
   * Runs `callback(now)` once, when processing time reaches `atMs` (immediately on the next
   * advance if `atMs` has already passed). Callbacks due at the same time run in registration
   * order. Never calls back synchronously from inside `schedule`.
   */
  schedule(atMs: number, callback: (nowMs: number) => void): ScheduledCallback;
}

/** Wall-clock processing time. */
/** The longest delay setTimeout takes (2^31 − 1 ms, ~24.8 days); a longer one fires at once. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }

  schedule(atMs: number, callback: (nowMs: number) => void): ScheduledCallback {
    const delay = Math.min(MAX_TIMEOUT_MS, Math.max(0, atMs - Date.now()));
    // Timers may fire a little early on some platforms, and one further away than setTimeout
    // can wait fires early on purpose: re-arm until the time has really come.
    let handle: ReturnType<typeof setTimeout> | undefined;
    const fire = (): void => {
      const now = Date.now();
      if (now < atMs) {
        handle = setTimeout(fire, Math.min(MAX_TIMEOUT_MS, atMs - now));
        handle.unref?.();
        return;
      }
      handle = undefined;
      callback(now);
    };
    handle = setTimeout(fire, delay);
    // Processing-time timers never keep the process alive on their own: a job that is finished
    // must be able to exit even if a periodic watermark emitter is still armed.
    handle.unref?.();
    return {
      cancel(): void {
        if (handle !== undefined) clearTimeout(handle);
        handle = undefined;
      },
    };
  }
}

/**
 * A clock that moves only when told. `advance` runs every callback that became due, in time
 * order (registration order for equal times), including callbacks scheduled by callbacks that
 * are due within the same advance.
 */
export class ManualClock implements Clock {
  #nowMs: number;
  #seq = 0;
  readonly #pending: { atMs: number; seq: number; callback: (nowMs: number) => void; cancelled: boolean }[] = [];

  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  now(): number {
    return this.#nowMs;
  }

  schedule(atMs: number, callback: (nowMs: number) => void): ScheduledCallback {
    const entry = { atMs, seq: this.#seq++, callback, cancelled: false };
    this.#pending.push(entry);
    return {
      cancel(): void {
        entry.cancelled = true;
      },
    };
  }

  /** Moves time forward by `ms` (≥ 0) and runs what became due. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance needs a non-negative number, got ${ms}`);
    this.advanceTo(this.#nowMs + ms);
  }

  /** Moves time to `timeMs` (never backwards) and runs what became due. */
  advanceTo(timeMs: number): void {
    if (timeMs < this.#nowMs) throw new RangeError(`ManualClock cannot go back from ${this.#nowMs} to ${timeMs}`);
    for (;;) {
      let next = -1;
      for (let i = 0; i < this.#pending.length; i++) {
        const e = this.#pending[i]!;
        if (e.cancelled || e.atMs > timeMs) continue;
        const best = next < 0 ? undefined : this.#pending[next]!;
        if (best === undefined || e.atMs < best.atMs || (e.atMs === best.atMs && e.seq < best.seq)) next = i;
      }
      if (next < 0) break;
      const [entry] = this.#pending.splice(next, 1);
      this.#nowMs = Math.max(this.#nowMs, entry!.atMs);
      entry!.callback(this.#nowMs);
    }
    this.#nowMs = timeMs;
    for (let i = this.#pending.length - 1; i >= 0; i--) if (this.#pending[i]!.cancelled) this.#pending.splice(i, 1);
  }

  /** Number of callbacks not yet run or cancelled (for tests). */
  get pendingCount(): number {
    return this.#pending.filter((e) => !e.cancelled).length;
  }
}
