/**
 * Retries of transient PostgreSQL errors (connection refused, reset or lost, serialization
 * failure, deadlock, the server shutting down) with a doubling backoff, then a clear failure.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { EddyError } from "../../core/errors.ts";
import type { SinkContext } from "../sink.ts";
import { describePgError, isTransient } from "./pg-client.ts";
import { backoffMs, type SinkConfig } from "./postgres-sink-options.ts";

/**
 * Runs `f` until it resolves, at most `config.maxAttempts` times while it rejects with a transient
 * error; then, or on any other error, rejects with POSTGRES_SINK_FAILED naming what it tried to do
 * (an EddyError passes through as it is). `f` is given the attempt number (1, 2, ...).
 */
export async function withRetries<R>(config: SinkConfig<never>, context: SinkContext, what: string, f: (attempt: number) => Promise<R>): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f(attempt);
    } catch (e) {
      if (e instanceof EddyError) throw e;
      const transient = isTransient(e);
      if (!transient || attempt >= config.maxAttempts) {
        throw new EddyError(
          "POSTGRES_SINK_FAILED",
          `PostgresSink '${context.operatorName}' (subtask ${context.subtaskIndex}, table ${config.table}) could not ${what}${transient ? ` after ${attempt} attempts` : ""}: ${describePgError(e)}`,
          { operator: context.operatorName, subtask: context.subtaskIndex, cause: e },
        );
      }
      await sleep(backoffMs(config, attempt));
    }
  }
}
