/**
 * Restart strategies (Flink's): whether a failed job restarts from its latest checkpoint, and
 * after how long. Pure: time comes in as `now`.
 */
import { EddyError } from "../core/errors.ts";

export type RestartStrategyConfig =
  | { readonly type: "none" }
  /** Up to `attempts` restarts in total, each after `delayMs`. */
  | { readonly type: "fixed-delay"; readonly attempts: number; readonly delayMs: number }
  /**
   * Unlimited restarts; the delay starts at `initialDelayMs`, grows by `multiplier` per failure up
   * to `maxDelayMs`, and goes back to the start after `resetAfterMs` without a failure.
   */
  | {
      readonly type: "exponential-delay";
      readonly initialDelayMs: number;
      readonly maxDelayMs: number;
      readonly multiplier?: number;
      readonly resetAfterMs?: number;
    }
  /** Restarts after `delayMs` unless more than `maxFailures` failures fall within `intervalMs`. */
  | { readonly type: "failure-rate"; readonly maxFailures: number; readonly intervalMs: number; readonly delayMs: number };

export type RestartDecision = { readonly restart: true; readonly delayMs: number } | { readonly restart: false; readonly reason: string };

export interface RestartStrategy {
  /** A failure happened at `now`: restart, and after how long? */
  onFailure(now: number): RestartDecision;
}

export function createRestartStrategy(config: RestartStrategyConfig): RestartStrategy {
  switch (config.type) {
    case "none":
      return { onFailure: () => ({ restart: false, reason: "the restart strategy is 'none'" }) };
    case "fixed-delay": {
      nonNegative("attempts", config.attempts, true);
      nonNegative("delayMs", config.delayMs);
      let used = 0;
      return {
        onFailure: () =>
          used < config.attempts
            ? (used++, { restart: true, delayMs: config.delayMs })
            : { restart: false, reason: `restarted ${config.attempts} times already (fixed-delay attempts: ${config.attempts})` },
      };
    }
    case "exponential-delay": {
      nonNegative("initialDelayMs", config.initialDelayMs);
      nonNegative("maxDelayMs", config.maxDelayMs);
      const multiplier = config.multiplier ?? 2;
      if (!(multiplier >= 1)) throw invalid(`exponential-delay multiplier must be ≥ 1, got ${multiplier}`);
      const resetAfterMs = config.resetAfterMs ?? 60 * 60 * 1000;
      let next = config.initialDelayMs;
      let lastFailure = Number.NEGATIVE_INFINITY;
      return {
        onFailure: (now) => {
          if (now - lastFailure >= resetAfterMs) next = config.initialDelayMs;
          lastFailure = now;
          const delayMs = Math.min(next, config.maxDelayMs);
          next = Math.min(config.maxDelayMs, Math.max(1, next) * multiplier);
          return { restart: true, delayMs };
        },
      };
    }
    case "failure-rate": {
      nonNegative("maxFailures", config.maxFailures, true);
      nonNegative("intervalMs", config.intervalMs);
      nonNegative("delayMs", config.delayMs);
      const failures: number[] = [];
      return {
        onFailure: (now) => {
          failures.push(now);
          while (failures.length > 0 && failures[0]! <= now - config.intervalMs) failures.shift();
          return failures.length > config.maxFailures
            ? { restart: false, reason: `${failures.length} failures within ${config.intervalMs} ms (failure-rate allows ${config.maxFailures})` }
            : { restart: true, delayMs: config.delayMs };
        },
      };
    }
  }
}

function nonNegative(field: string, value: number, integer = false): void {
  if (!(typeof value === "number" && value >= 0 && Number.isFinite(value)) || (integer && !Number.isInteger(value))) {
    throw invalid(`restart strategy ${field} must be a non-negative ${integer ? "integer" : "number"}, got ${String(value)}`);
  }
}

function invalid(message: string): EddyError {
  return new EddyError("INVALID_RESTART_STRATEGY", message);
}
