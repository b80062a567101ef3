/**
 * Assigns timestamps and generates watermarks (`assignTimestampsAndWatermarks`, and the event
 * time of `fromSource`). Per record: assign the timestamp, emit the record, then let the
 * generator see it, so a punctuated watermark follows the record that caused it. Every
 * auto-watermark interval of processing time the generator may emit periodically, and idleness is
 * checked. Upstream watermarks are dropped except the final MAX watermark (Flink does the same):
 * this operator is where event time starts.
 */
import { EddyError, userFunctionError } from "../../core/errors.ts";
import type { ScheduledCallback } from "../../core/clock.ts";
import { hasTimestamp, MAX_WATERMARK, MIN_WATERMARK } from "../../core/time.ts";
import type { WatermarkOutput, WatermarkStrategy } from "../../core/watermark-strategy.ts";
import type { OneInputOperator, OperatorContext, Output } from "../operator.ts";
import { recordErrorPolicy } from "../record-error-policy.ts";

export function timestampsAndWatermarksOperator<T>(strategy: WatermarkStrategy<T>) {
  return (ctx: OperatorContext, output: Output<T>): OneInputOperator<T> => {
    const generator = strategy.generatorFactory();
    // The timestamp assigner's failures (a throw, a timestamp that is not a finite number) go to
    // the policy; the watermark generator's fail the job (it is called after the record left).
    const errors = recordErrorPolicy(ctx, output as Output<unknown>);
    const assigner = strategy.timestampAssigner;
    const idleTimeoutMs = strategy.idleTimeoutMs;
    let lastEmitted = MIN_WATERMARK;
    let idle = false;
    let lastRecordAtMs = ctx.clock.now();
    let finished = false;
    let periodic: ScheduledCallback | undefined;

    const wmOutput: WatermarkOutput = {
      emitWatermark(watermark) {
        if (finished) return;
        if (typeof watermark !== "number" || Number.isNaN(watermark)) {
          throw new EddyError("INVALID_WATERMARK", `watermark generator emitted ${String(watermark)}`);
        }
        if (watermark <= lastEmitted) return;
        lastEmitted = watermark;
        if (idle) {
          idle = false;
          output.emitWatermarkStatus(false);
        }
        output.emitWatermark(watermark);
      },
      markIdle() {
        if (!idle && !finished) {
          idle = true;
          output.emitWatermarkStatus(true);
        }
      },
      markActive() {
        if (idle && !finished) {
          idle = false;
          output.emitWatermarkStatus(false);
        }
      },
    };

    const onPeriodic = (): void => {
      periodic = undefined;
      if (finished) return;
      try {
        generator.onPeriodicEmit(wmOutput);
      } catch (e) {
        throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
      }
      if (idleTimeoutMs !== undefined && ctx.clock.now() - lastRecordAtMs >= idleTimeoutMs) wmOutput.markIdle();
      arm();
    };
    const arm = (): void => {
      periodic = ctx.clock.schedule(ctx.clock.now() + ctx.autoWatermarkIntervalMs, () => ctx.postMail(onPeriodic));
    };

    return {
      open: arm,
      processElement(value, timestamp) {
        if (assigner === undefined && !hasTimestamp(timestamp)) {
          // No assigner and no timestamp from the source: the record has no event time and
          // the generator does not see it (it cannot move event time).
          if (idleTimeoutMs !== undefined) lastRecordAtMs = ctx.clock.now();
          if (idle) wmOutput.markActive();
          output.collect(value, timestamp);
          return;
        }
        let ts = timestamp;
        try {
          if (assigner !== undefined) ts = assigner(value, hasTimestamp(timestamp) ? timestamp : undefined);
        } catch (e) {
          errors.onRecordError(e, value, timestamp);
          return;
        }
        if (typeof ts !== "number" || !Number.isFinite(ts)) {
          const invalid = new EddyError(
            "INVALID_TIMESTAMP",
            `timestamp assigner of '${ctx.operatorName}' returned ${String(ts)}; expected a finite number of ms`,
            { operator: ctx.operatorName, subtask: ctx.subtaskIndex },
          );
          errors.onRecordError(invalid, value, timestamp);
          return;
        }
        if (idleTimeoutMs !== undefined) lastRecordAtMs = ctx.clock.now();
        if (idle) wmOutput.markActive();
        output.collect(value, ts);
        try {
          generator.onEvent(value, ts, wmOutput);
        } catch (e) {
          throw userFunctionError(ctx.operatorName, ctx.subtaskIndex, e);
        }
      },
      processWatermark(watermark) {
        if (watermark !== MAX_WATERMARK) return;
        if (idle) wmOutput.markActive();
        wmOutput.emitWatermark(MAX_WATERMARK);
        finished = true;
      },
      processWatermarkStatus() {
        // Idleness is decided here, from this operator's own records.
      },
      close() {
        finished = true;
        periodic?.cancel();
      },
    };
  };
}
