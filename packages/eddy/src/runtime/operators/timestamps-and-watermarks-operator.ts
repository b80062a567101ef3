/**
 * Assigns timestamps and generates watermarks (`assignTimestampsAndWatermarks`, and the event
 * time of `fromSource`). Per record: assign the timestamp, emit the record, then let the
 * generator see it, so a punctuated watermark follows the record that caused it. Every
 * auto-watermark interval of processing time the generator may emit periodically, and idleness is
 * checked. Upstream watermarks are dropped except the final MAX watermark (Flink does the same):
 * this operator is where event time starts.
 *
 * Per split (fromSource, whose source emits a split's records through
 * `ReaderOutput.createOutputForSplit`; the task calls `openSplit` / `releaseSplit`): each split has
 * a generator of its own, idleness is checked per split, and the watermark is the minimum over the
 * active splits (runtime/watermark-output-multiplexer.ts), as Flink's SourceOperator does. So a
 * reader holding a partition far ahead in event time does not make the others' records late.
 */
import { EddyError, userFunctionError } from "../../core/errors.ts";
import type { ScheduledCallback } from "../../core/clock.ts";
import { hasTimestamp, MAX_WATERMARK, MIN_WATERMARK } from "../../core/time.ts";
import type { WatermarkAlignment, WatermarkGenerator, WatermarkOutput, WatermarkStrategy } from "../../core/watermark-strategy.ts";
import { WATERMARK_ALIGNMENT_PAUSES, type OperatorContext, type Output, type SplitAwareOperator } from "../operator.ts";
import { WatermarkOutputMultiplexer, type PartialWatermarkOutput } from "../watermark-output-multiplexer.ts";
import { recordErrorPolicy } from "../record-error-policy.ts";

/** A split's own watermark generator and where it emits (the multiplexer's output for the split). */
interface SplitWatermarks<T> {
  readonly id: string;
  readonly generator: WatermarkGenerator<T>;
  readonly output: PartialWatermarkOutput;
  lastRecordAtMs: number;
}

export function timestampsAndWatermarksOperator<T>(strategy: WatermarkStrategy<T>) {
  return (ctx: OperatorContext, output: Output<T>): SplitAwareOperator<T> => {
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
    // Records a source emits through a split's output have that split's generator (see below).
    const splits = new Map<string, SplitWatermarks<T>>();
    const alignment = strategy.alignment === undefined ? undefined : sourceAlignment(ctx, strategy.alignment, splits);

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
        alignment?.watermarkChanged(watermark);
      },
      markIdle() {
        if (!idle && !finished) {
          idle = true;
          output.emitWatermarkStatus(true);
          alignment?.idleChanged(true);
        }
      },
      markActive() {
        if (idle && !finished) {
          idle = false;
          output.emitWatermarkStatus(false);
          alignment?.idleChanged(false);
        }
      },
    };

    // Records a source emits through a split's output (createOutputForSplit) have that split's
    // generator; the operator's watermark is then the minimum over its splits (the multiplexer).
    // Records emitted without a split have `generator` above, which emits directly (Flink: the
    // reader's main output); a source should use one or the other.
    let multiplexer: WatermarkOutputMultiplexer | undefined;
    /** Records came through the main output: its generator takes part in periodic emission. */
    let mainUsed = false;

    const onPeriodic = (): void => {
      periodic = undefined;
      if (finished) return;
      const now = ctx.clock.now();
      try {
        // A source that emits per split leaves the main generator out (it has seen no records, and
        // a generator that marks itself idle would mark the whole source idle).
        if (mainUsed || multiplexer === undefined) generator.onPeriodicEmit(wmOutput);
        // A source (or split) paused by watermark alignment reads nothing, which is not idleness:
        // its time without records starts again when it reads again (else it would be marked idle,
        // stop holding its group back, read, and be paused again, in turn).
        const pausedByAlignment = alignment?.paused === true;
        if (multiplexer !== undefined && splits.size > 0) {
          multiplexer.deferUpdates(() => {
            for (const split of splits.values()) {
              split.generator.onPeriodicEmit(split.output);
              if (pausedByAlignment || alignment?.splitPaused(split.id) === true) split.lastRecordAtMs = now;
              else if (idleTimeoutMs !== undefined && now - split.lastRecordAtMs >= idleTimeoutMs) split.output.markIdle();
            }
          });
          alignment?.periodic();
        }
        // Nor is a source idle whose splits with records left are paused.
        if (pausedByAlignment || alignment?.splitsPaused === true) lastRecordAtMs = now;
      } catch (e) {
        throw userFunctionError(ctx, e);
      }
      if (idleTimeoutMs !== undefined && now - lastRecordAtMs >= idleTimeoutMs) wmOutput.markIdle();
      arm();
    };
    const arm = (): void => {
      periodic = ctx.clock.schedule(ctx.clock.now() + ctx.autoWatermarkIntervalMs, () => ctx.postMail(onPeriodic));
    };

    /** Assigns the timestamp, emits the record, then lets the generator of its split (or the main one) see it. */
    /** A record is about to leave: the stream (and its split) is active. */
    const active = (split: SplitWatermarks<T> | undefined): void => {
      if (idleTimeoutMs !== undefined) {
        lastRecordAtMs = ctx.clock.now();
        if (split !== undefined) split.lastRecordAtMs = lastRecordAtMs;
      }
      if (idle) wmOutput.markActive();
      if (split !== undefined && split.output.idle) split.output.markActive();
    };
    const processRecord = (value: T, timestamp: number, split: SplitWatermarks<T> | undefined): void => {
      if (assigner === undefined && !hasTimestamp(timestamp)) {
        // No assigner and no timestamp from the source: the record has no event time and
        // the generator does not see it (it cannot move event time).
        active(split);
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
      active(split);
      output.collect(value, ts);
      try {
        if (split === undefined) generator.onEvent(value, ts, wmOutput);
        else {
          split.generator.onEvent(value, ts, split.output);
          if (alignment !== undefined) alignment.splitMoved(split);
        }
      } catch (e) {
        throw userFunctionError(ctx, e);
      }
    };

    return {
      open() {
        arm();
        alignment?.open();
      },
      processElement(value, timestamp) {
        mainUsed = true;
        processRecord(value, timestamp, undefined);
      },
      openSplit(splitId) {
        multiplexer ??= new WatermarkOutputMultiplexer(wmOutput);
        const split: SplitWatermarks<T> = { id: splitId, generator: strategy.generatorFactory(), output: multiplexer.register(splitId), lastRecordAtMs: ctx.clock.now() };
        splits.set(splitId, split);
        return (value, timestamp) => processRecord(value, timestamp, split);
      },
      releaseSplit(splitId) {
        if (splits.delete(splitId)) multiplexer!.unregister(splitId);
        alignment?.splitReleased(splitId);
      },
      processWatermark(watermark) {
        if (watermark !== MAX_WATERMARK) return;
        // Alignment first: the MAX watermark must not look like a subtask running ahead.
        alignment?.finish();
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
        alignment?.close();
      },
    };
  };
}

/**
 * Watermark alignment of one source subtask (Flink's SourceOperator with FLIP-182 and FLIP-217):
 * every update interval it reports its last emitted watermark to the coordinator (MAX_WATERMARK
 * when idle or finished, so it holds nobody back; nothing before its first watermark), and the
 * coordinator answers with the most it may reach.
 * - The subtask: while its watermark is past the answer the source reads nothing. Checked on each
 *   answer and each watermark it emits, so a punctuated generator stops the source right after the
 *   record that crossed the bound.
 * - Its splits, when the reader can pause them (SourceReader.pauseOrResumeSplits) and records come
 *   per split: a split whose own watermark is past the answer is paused, the others read on, so a
 *   partition far ahead of a slow one on the same reader waits too. Checked on each answer, at each
 *   periodic emission, and after the reader's poll in which a split's watermark crossed the bound.
 */
function sourceAlignment<T>(ctx: OperatorContext, params: WatermarkAlignment, splits: ReadonlyMap<string, SplitWatermarks<T>>) {
  const port = ctx.sourceAlignment;
  if (port === undefined) {
    throw new EddyError(
      "WATERMARK_ALIGNMENT_WITHOUT_SOURCE",
      `'${ctx.operatorName}' has watermark alignment (group '${params.group}') but no source to pause: alignment applies to fromSource, with the source chained to its watermarks`,
      { operator: ctx.operatorName, subtask: ctx.subtaskIndex },
    );
  }
  const pauses = ctx.counter(WATERMARK_ALIGNMENT_PAUSES);
  let watermark = MIN_WATERMARK;
  let idle = false;
  let done = false;
  /** The coordinator's last answer; before the first, nothing holds the source back. */
  let maxAllowed = MAX_WATERMARK;
  let paused = false;
  /** Splits paused on their own (pauseOrResumeSplits). */
  const pausedSplits = new Set<string>();
  /** A check of the splits is posted as mail (splitMoved). */
  let pausing = false;
  let timer: ScheduledCallback | undefined;

  const apply = (): void => {
    const pause = !done && !idle && watermark > maxAllowed;
    if (pause === paused) return;
    paused = pause;
    if (pause) pauses.inc();
    port.setPaused(pause);
  };
  const applySplits = (): void => {
    if (splits.size === 0 && pausedSplits.size === 0) return;
    if (!port.splitsPausable) return;
    const pause: string[] = [];
    const resume: string[] = [];
    for (const { id, output } of splits.values()) {
      const ahead = !done && !output.idle && output.watermark > maxAllowed;
      if (ahead && !pausedSplits.has(id)) {
        pausedSplits.add(id);
        pause.push(id);
      } else if (!ahead && pausedSplits.has(id)) {
        pausedSplits.delete(id);
        resume.push(id);
      }
    }
    if (pause.length === 0 && resume.length === 0) return;
    pauses.inc(pause.length);
    port.pauseOrResumeSplits(pause, resume);
  };
  const report = (): void => {
    if (done || idle) port.report(params.group, MAX_WATERMARK, params.maxAllowedDriftMs);
    else if (watermark !== MIN_WATERMARK) port.report(params.group, watermark, params.maxAllowedDriftMs);
  };
  const tick = (): void => {
    timer = undefined;
    if (done) return;
    report();
    schedule();
  };
  const schedule = (): void => {
    timer = ctx.clock.schedule(ctx.clock.now() + params.updateIntervalMs, () => ctx.postMail(tick));
  };
  port.onMaxAllowedWatermark((max) => {
    maxAllowed = max;
    apply();
    applySplits();
  });
  // Flink's watermarkAlignmentDrift: how far this subtask's watermark is ahead of its group's
  // slowest, as of the last answer (0 before one, when idle or done, or with no bound).
  port.setDriftGauge(() => {
    if (done || idle || watermark === MIN_WATERMARK || maxAllowed === MAX_WATERMARK) return 0;
    return watermark - (maxAllowed - params.maxAllowedDriftMs);
  });
  return {
    open: schedule,
    /** Whether the whole source reads nothing now because of alignment. */
    get paused(): boolean {
      return paused;
    },
    /** Whether any split is paused on its own. */
    get splitsPaused(): boolean {
      return pausedSplits.size > 0;
    },
    /** Whether split `id` is paused on its own. */
    splitPaused(id: string): boolean {
      return pausedSplits.has(id);
    },
    /** After a periodic emission: the splits' watermarks may have moved. */
    periodic: applySplits,
    /**
     * A split's generator saw a record (a punctuated one may have moved its watermark past the
     * bound): pause it, after the reader's current poll (pauseOrResumeSplits is never called from
     * inside pollNext). The rest of that poll's records of the split still go out.
     */
    splitMoved(split: SplitWatermarks<T>): void {
      if (split.output.watermark <= maxAllowed || pausing || done || pausedSplits.has(split.id) || !port.splitsPausable) return;
      pausing = true;
      ctx.postMail(() => {
        pausing = false;
        applySplits();
      });
    },
    /** Split `id` is finished or handed back: the reader no longer holds it. */
    splitReleased(id: string): void {
      pausedSplits.delete(id);
    },
    watermarkChanged(w: number): void {
      watermark = w;
      apply();
    },
    idleChanged(isIdle: boolean): void {
      idle = isIdle;
      apply();
    },
    /** The input ended (MAX watermark): read on, and tell the group at once that this one holds nobody back. */
    finish(): void {
      if (done) return;
      done = true;
      apply();
      applySplits();
      report();
      timer?.cancel();
    },
    close(): void {
      done = true;
      timer?.cancel();
    },
  };
}
