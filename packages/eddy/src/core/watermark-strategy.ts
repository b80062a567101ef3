/**
 * How a stream gets event time: a timestamp assigner (event → ms) and a watermark generator
 * (Flink's WatermarkStrategy). A strategy is an immutable description; each subtask creates its
 * own generator from it.
 */

/** Where a generator emits. Only increasing watermarks take effect; others are ignored. */
export interface WatermarkOutput {
  emitWatermark(watermark: number): void;
  /** Marks this stream idle: it stops holding back downstream watermarks until the next record. */
  markIdle(): void;
  /** Marks the stream active again (a record does this implicitly). */
  markActive(): void;
}

export interface WatermarkGenerator<T> {
  /** Called after each record has been emitted downstream (punctuated watermarks emit here). */
  onEvent(event: T, timestamp: number, output: WatermarkOutput): void;
  /** Called every auto-watermark interval of processing time (periodic watermarks emit here). */
  onPeriodicEmit(output: WatermarkOutput): void;
}

/** Returns an event's timestamp in ms. `previousTimestamp` is the one the record carried, if any. */
export type TimestampAssigner<T> = (event: T, previousTimestamp: number | undefined) => number;

export interface WatermarkStrategyOptions<T> {
  readonly generatorFactory: () => WatermarkGenerator<T>;
  readonly timestampAssigner: TimestampAssigner<T> | undefined;
  /** Processing-time ms without records after which the stream is marked idle; undefined: never. */
  readonly idleTimeoutMs: number | undefined;
  /** Watermark alignment of the source subtasks of a group (withWatermarkAlignment); undefined: none. */
  readonly alignment?: WatermarkAlignment | undefined;
}

/**
 * Watermark alignment (Flink's FLIP-182, source level): every `updateIntervalMs` each source
 * subtask of `group` reports its watermark to the coordinator, which answers with the group's
 * minimum plus `maxAllowedDriftMs`; a subtask whose watermark is past that stops reading until
 * the bound moves. Idle and finished subtasks do not hold the group back.
 */
export interface WatermarkAlignment {
  readonly group: string;
  readonly maxAllowedDriftMs: number;
  readonly updateIntervalMs: number;
}

/** Flink's default update interval of watermark alignment (pipeline.watermark-alignment.update-interval is 1 s there). */
export const DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS = 1000;

export class WatermarkStrategy<T> {
  readonly generatorFactory: () => WatermarkGenerator<T>;
  readonly timestampAssigner: TimestampAssigner<T> | undefined;
  readonly idleTimeoutMs: number | undefined;
  readonly alignment: WatermarkAlignment | undefined;

  private constructor(options: WatermarkStrategyOptions<T>) {
    this.generatorFactory = options.generatorFactory;
    this.timestampAssigner = options.timestampAssigner;
    this.idleTimeoutMs = options.idleTimeoutMs;
    this.alignment = options.alignment;
  }

  /** Timestamps never decrease: watermark = max timestamp seen - 1. */
  static forMonotonousTimestamps<T>(): WatermarkStrategy<T> {
    return WatermarkStrategy.forBoundedOutOfOrderness<T>(0);
  }

  /** Records may be up to `maxOutOfOrdernessMs` late: watermark = max timestamp - bound - 1. */
  static forBoundedOutOfOrderness<T>(maxOutOfOrdernessMs: number): WatermarkStrategy<T> {
    if (!(Number.isFinite(maxOutOfOrdernessMs) && maxOutOfOrdernessMs >= 0)) {
      throw new RangeError(`forBoundedOutOfOrderness needs a finite bound ≥ 0 ms, got ${maxOutOfOrdernessMs}`);
    }
    return new WatermarkStrategy<T>({
      generatorFactory: () => boundedOutOfOrdernessGenerator<T>(maxOutOfOrdernessMs),
      timestampAssigner: undefined,
      idleTimeoutMs: undefined,
    });
  }

  /** A custom generator, punctuated (emits in onEvent) or periodic (emits in onPeriodicEmit). */
  static forGenerator<T>(factory: () => WatermarkGenerator<T>): WatermarkStrategy<T> {
    if (typeof factory !== "function") throw new TypeError("forGenerator needs a function returning a generator");
    return new WatermarkStrategy<T>({ generatorFactory: factory, timestampAssigner: undefined, idleTimeoutMs: undefined });
  }

  /** Assigns no watermarks (records keep or get timestamps, event time advances only at the end). */
  static noWatermarks<T>(): WatermarkStrategy<T> {
    return WatermarkStrategy.forGenerator<T>(() => ({ onEvent() {}, onPeriodicEmit() {} }));
  }

  withTimestampAssigner(assigner: TimestampAssigner<T>): WatermarkStrategy<T> {
    if (typeof assigner !== "function") throw new TypeError("withTimestampAssigner needs a function");
    return new WatermarkStrategy<T>({ ...this.#options(), timestampAssigner: assigner });
  }

  /** Marks the stream idle after `idleTimeoutMs` of processing time without records. */
  withIdleness(idleTimeoutMs: number): WatermarkStrategy<T> {
    if (!(Number.isFinite(idleTimeoutMs) && idleTimeoutMs > 0)) {
      throw new RangeError(`withIdleness needs a positive finite timeout in ms, got ${idleTimeoutMs}`);
    }
    return new WatermarkStrategy<T>({ ...this.#options(), idleTimeoutMs });
  }

  /**
   * Aligns the watermarks of the source subtasks in `group` (every source read with a strategy of
   * this group, across sources): a subtask whose watermark runs more than `maxAllowedDriftMs` ahead
   * of the slowest one stops reading until the others catch up, so state waiting for the slow
   * ones (windows, join buffers) stays bounded. The coordinator learns the watermarks every
   * `updateIntervalMs` (default 1 s, as in Flink). For `fromSource` only: a strategy with alignment
   * given to `assignTimestampsAndWatermarks` is refused. Flink's alignment of source subtasks
   * (FLIP-182) and of splits (FLIP-217): a reader that can pause single splits
   * (SourceReader.pauseOrResumeSplits, e.g. the Kafka source's) has each split past the bound
   * paused while its others read on; any other reader is paused as a whole.
   */
  withWatermarkAlignment(group: string, maxAllowedDriftMs: number, updateIntervalMs: number = DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS): WatermarkStrategy<T> {
    if (typeof group !== "string" || group.length === 0) throw new TypeError("withWatermarkAlignment needs a non-empty group name");
    if (!(Number.isFinite(maxAllowedDriftMs) && maxAllowedDriftMs >= 0)) {
      throw new RangeError(`withWatermarkAlignment needs a finite drift ≥ 0 ms, got ${maxAllowedDriftMs}`);
    }
    if (!(Number.isFinite(updateIntervalMs) && updateIntervalMs > 0)) {
      throw new RangeError(`withWatermarkAlignment needs a positive finite update interval in ms, got ${updateIntervalMs}`);
    }
    return new WatermarkStrategy<T>({ ...this.#options(), alignment: { group, maxAllowedDriftMs, updateIntervalMs } });
  }

  #options(): WatermarkStrategyOptions<T> {
    return {
      generatorFactory: this.generatorFactory,
      timestampAssigner: this.timestampAssigner,
      idleTimeoutMs: this.idleTimeoutMs,
      alignment: this.alignment,
    };
  }
}

function boundedOutOfOrdernessGenerator<T>(boundMs: number): WatermarkGenerator<T> {
  let maxTimestamp = Number.NEGATIVE_INFINITY;
  return {
    onEvent(_event, timestamp) {
      if (timestamp > maxTimestamp) maxTimestamp = timestamp;
    },
    onPeriodicEmit(output) {
      if (maxTimestamp !== Number.NEGATIVE_INFINITY) output.emitWatermark(maxTimestamp - boundMs - 1);
    },
  };
}
