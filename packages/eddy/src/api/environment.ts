/** The job's entry point: sources and job-wide settings (Flink's StreamExecutionEnvironment). */
import { FAIL_POLICY } from "../core/error-policy.ts";
import { resolveCheckpointConfig, type CheckpointConfig, type CheckpointConfigInput } from "../checkpoint/checkpoint-config.ts";
import { createRestartStrategy, type RestartStrategyConfig } from "../checkpoint/restart-strategy.ts";
import { collectionSource, sequenceSource } from "../connector/collection-source.ts";
import type { Source } from "../connector/source.ts";
import { checkParallelism, MAX_MAX_PARALLELISM } from "../core/key-group.ts";
import type { WatermarkStrategy } from "../core/watermark-strategy.ts";
import type { SourceTransformation } from "../graph/transformation.ts";
import { timestampsAndWatermarksOperator } from "../runtime/operators/timestamps-and-watermarks-operator.ts";
import { stateBackendSpec, type DiskStateBackendInput, type HeapStateBackendInput, type StateBackendKind, type StateBackendSpec } from "../state/state-backend-spec.ts";
import { DataStream } from "./data-stream.ts";
import { JobBuilder } from "./job-builder.ts";

export const DEFAULT_AUTO_WATERMARK_INTERVAL_MS = 200;

export class StreamExecutionEnvironment {
  readonly #builder = new JobBuilder();
  #parallelism: number | undefined;
  #maxParallelism: number | undefined;
  #autoWatermarkIntervalMs = DEFAULT_AUTO_WATERMARK_INTERVAL_MS;
  #checkpointing: CheckpointConfig | undefined;
  #restartStrategy: RestartStrategyConfig | undefined;
  #stateBackend: StateBackendSpec | undefined;

  /** Elements of a finite list, in order (one non-parallel source). */
  fromElements<T>(...values: T[]): DataStream<T> {
    return this.#addSource(collectionSource(values), "Source: Elements");
  }

  /** Elements of a finite iterable, in order; the iterable is read when the job is built. */
  fromCollection<T>(values: Iterable<T>): DataStream<T> {
    return this.#addSource(collectionSource([...values]), "Source: Collection");
  }

  /** The numbers from..to inclusive, split across parallel source subtasks. */
  fromSequence(from: number, to: number): DataStream<number> {
    return this.#addSource(sequenceSource(from, to), "Source: Sequence");
  }

  /** A source with event time assigned by `strategy`. */
  fromSource<T>(source: Source<T, unknown>, watermarkStrategy: WatermarkStrategy<T>, name: string): DataStream<T> {
    if (typeof name !== "string" || name.length === 0) throw new TypeError("fromSource needs a name");
    const stream = this.#addSource(source, name);
    const timed = stream._transform(`${name}: Timestamps/Watermarks`, timestampsAndWatermarksOperator(watermarkStrategy), false)._withErrorPolicy();
    // One operator to the user: uid, parallelism and the error policy set on `timed` apply to the
    // source as well, and its dead letters are both operators' (DataStream.deadLetters).
    Object.assign(timed._transformation, { ofSource: stream._transformation });
    return timed;
  }

  /** Default parallelism of every operator of this job. */
  setParallelism(parallelism: number): this {
    checkParallelism(parallelism, MAX_MAX_PARALLELISM);
    this.#parallelism = parallelism;
    return this;
  }

  getParallelism(): number | undefined {
    return this.#parallelism;
  }

  /** Number of key groups of keyed state; fixed for the life of the job's state. */
  setMaxParallelism(maxParallelism: number): this {
    checkParallelism(1, maxParallelism);
    this.#maxParallelism = maxParallelism;
    return this;
  }

  getMaxParallelism(): number | undefined {
    return this.#maxParallelism;
  }

  /** How often periodic watermark generators are asked for a watermark (processing time). */
  setAutoWatermarkInterval(intervalMs: number): this {
    if (!(Number.isFinite(intervalMs) && intervalMs > 0)) {
      throw new RangeError(`auto-watermark interval must be a positive number of ms, got ${intervalMs}`);
    }
    this.#autoWatermarkIntervalMs = intervalMs;
    return this;
  }

  getAutoWatermarkInterval(): number {
    return this.#autoWatermarkIntervalMs;
  }

  /**
   * Takes a consistent snapshot of the job's state every `intervalMs`
   * (docs/design/checkpoint-protocol.md), from which it recovers after a failure. Options: mode
   * ("exactly-once" default, or "at-least-once"), timeoutMs, minPauseMs, maxConcurrent,
   * tolerableFailures, retained. A run's own options (`eddy run --checkpoint-interval`,
   * RunOptions.checkpointing) override these.
   */
  enableCheckpointing(intervalMs: number, options: Omit<CheckpointConfigInput, "intervalMs"> = {}): this {
    this.#checkpointing = resolveCheckpointConfig({ ...options, intervalMs });
    return this;
  }

  getCheckpointConfig(): CheckpointConfig | undefined {
    return this.#checkpointing;
  }

  /** What happens after a failure (default with checkpointing: fixed-delay, 3 attempts, 1 s). */
  setRestartStrategy(strategy: RestartStrategyConfig): this {
    createRestartStrategy(strategy); // validates
    this.#restartStrategy = strategy;
    return this;
  }

  getRestartStrategy(): RestartStrategyConfig | undefined {
    return this.#restartStrategy;
  }

  /**
   * The keyed state backend of the job's keyed operators: "heap" (default: state on the V8 heap) or
   * "disk" (an embedded LMDB store per operator subtask with a cache of hot keys on the heap, for
   * state larger than memory; options dir, cacheBytes, cacheSize, incremental, maxChainLength, localRecovery). The heap backend
   * takes incremental and maxChainLength (incremental checkpoints; default off). A run's `-D state.backend…` keys win.
   * docs/state-backends.md.
   */
  setStateBackend(kind: "heap", options?: HeapStateBackendInput): this;
  setStateBackend(kind: "disk", options?: DiskStateBackendInput): this;
  setStateBackend(kind: StateBackendKind, options?: DiskStateBackendInput | HeapStateBackendInput): this {
    this.#stateBackend = stateBackendSpec(kind, options);
    return this;
  }

  getStateBackend(): StateBackendSpec | undefined {
    return this.#stateBackend;
  }

  /** @internal read by the executor after the job function has run. */
  _builder(): JobBuilder {
    return this.#builder;
  }

  #addSource<T>(source: Source<T, unknown>, name: string): DataStream<T> {
    const t: SourceTransformation = this.#builder.add({
      kind: "source",
      id: this.#builder.nextId(),
      name,
      uid: undefined,
      parallelism: undefined,
      maxParallelism: undefined,
      codec: undefined,
      stateful: false,
      errorPolicy: FAIL_POLICY,
      source: source as Source<unknown, unknown>,
    });
    return new DataStream<T>(this.#builder, t);
  }
}
