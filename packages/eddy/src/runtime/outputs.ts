/**
 * Output implementations. An operator's output fans out to targets: chained operators (direct
 * calls) and record writers (network edges). Side outputs route by tag id to their own targets.
 * Watermarks and statuses go to every target, main and side.
 */
import { compileFunction } from "../core/codegen.ts";
import { STATUS_ACTIVE, STATUS_IDLE } from "../core/elements.ts";
import type { OutputTag } from "../core/output-tag.ts";
import { MIN_WATERMARK } from "../core/time.ts";
import type { RecordWriter } from "./channels/record-writer.ts";
import type { OneInputOperator, Output } from "./operator.ts";

/**
 * One receiver of an operator's output. Each is a complete Output, so a node with a single main
 * target and no side outputs uses the target itself: one call per hop on the hot path.
 */
export type OutputTarget = Output<unknown>;

/** Chained edges built so far in this process: makes each edge's generated source unique. */
let chainedEdges = 0;

/**
 * Direct calls into the next operator of the chain: `collect` is `operator.processElement`.
 *
 * hot path: each edge gets code of its own, compiled from a source that differs per edge, because
 * V8 keeps call feedback per compiled function. With one shared class, the call in `collect` saw
 * every chained operator of the process (map, filter, the keyed step, the sink...) and went
 * megamorphic, so V8 could inline none of them and each hop was a full call. With its own code, an
 * edge's call site sees one target, which V8 inlines into the upstream operator: source → map →
 * filter → rolling reduce → sink ran ~15 % faster (bench/chained-path.ts;
 * docs/benchmarks-history.md, seventh session). The cost is one small compilation per chained
 * edge and subtask when a job starts; in a process that runs many jobs, the heap V8 keeps for
 * compiled sources levels off (~0.8 MB more than with a shared class after 3,000 jobs, no more
 * after 15,000). The source holds only a counter; nothing from the job reaches it. Where the process forbids compiling code, edges share one class.
 */
export function chainedTarget(operator: OneInputOperator<unknown>, meter?: EdgeMeter): OutputTarget {
  // With a meter, one Float64Array increment per record (see EdgeMeter); without, not even that.
  // Measured: ~1 % of the chained path (bench/chained-path.ts, docs/benchmarks.md "Metrics cost").
  const count = meter === undefined ? "" : "meter[0]++;";
  const mark = meter === undefined ? "" : "meter[1] = watermark;";
  const make = compileFunction<(operator: OneInputOperator<unknown>, meter: EdgeMeter | undefined) => OutputTarget>(
    ["operator", "meter"],
    `"use strict";
    return {
      collect(value, timestamp) { /* chained edge ${++chainedEdges} */ ${count} operator.processElement(value, timestamp); },
      collectSide() {},
      emitWatermark(watermark) { ${mark} operator.processWatermark(watermark); },
      emitWatermarkStatus(idle) { if (operator.processWatermarkStatus !== undefined) operator.processWatermarkStatus(idle); },
    };`,
  );
  return make !== undefined ? make(operator, meter) : new SharedChainedTarget(operator, meter);
}

/**
 * What a chained edge counts when per-record metrics are on (`metrics.enabled`): [0] records
 * passed, [1] the last watermark passed (MIN_WATERMARK before any). A Float64Array so the count
 * keeps one representation past 2^30 (see StreamTask's #times), and the increment stays a plain
 * store the task reads only when it reports.
 */
export type EdgeMeter = Float64Array;

export function createEdgeMeter(): EdgeMeter {
  return new Float64Array([0, MIN_WATERMARK]);
}

/** The same calls in code every chained edge shares: where the process forbids compiling code (core/codegen.ts). */
class SharedChainedTarget implements OutputTarget {
  readonly #operator: OneInputOperator<unknown>;
  readonly #meter: EdgeMeter | undefined;
  constructor(operator: OneInputOperator<unknown>, meter: EdgeMeter | undefined) {
    this.#operator = operator;
    this.#meter = meter;
  }
  collect(value: unknown, timestamp: number): void {
    if (this.#meter !== undefined) this.#meter[0]!++;
    this.#operator.processElement(value, timestamp);
  }
  collectSide(): void {}
  emitWatermark(watermark: number): void {
    if (this.#meter !== undefined) this.#meter[1] = watermark;
    this.#operator.processWatermark(watermark);
  }
  emitWatermarkStatus(idle: boolean): void {
    this.#operator.processWatermarkStatus?.(idle);
  }
}

/** Into a record writer (a network edge). */
export class NetworkTarget implements OutputTarget {
  readonly #writer: RecordWriter;
  /** The last watermark sent (MIN_WATERMARK before any): the sender's currentOutputWatermark. */
  watermark = MIN_WATERMARK;
  constructor(writer: RecordWriter) {
    this.#writer = writer;
  }
  /** Records sent on this edge so far (a broadcast edge counts each copy). */
  get recordsOut(): number {
    return this.#writer.recordsOut;
  }
  collect(value: unknown, timestamp: number): void {
    this.#writer.write(value, timestamp);
  }
  collectSide(): void {}
  emitWatermark(watermark: number): void {
    this.watermark = watermark;
    this.#writer.broadcastElement({ kind: "watermark", timestamp: watermark });
  }
  emitWatermarkStatus(idle: boolean): void {
    this.#writer.broadcastElement(idle ? STATUS_IDLE : STATUS_ACTIVE);
  }
}

/** Outputs with routing built so far in this process: makes each one's generated source unique. */
let routingOutputs = 0;
/** Main targets up to which a routing output's `collect` is compiled as one call per target. */
const MAX_COMPILED_TARGETS = 8;

/**
 * The output of a node with the given main and side-output targets.
 *
 * hot path: a node with one main target and no side outputs uses the target itself. Otherwise
 * (fan-out, side outputs) `collect` is compiled per output, one call per main target, for the
 * reason chainedTarget gives: a shared loop over the targets is one call site for every fan-out
 * of the process. Measured on a job whose map feeds two chains (docs/benchmarks-history.md,
 * seventh session, "Fan-out and side outputs"): ~5-10 % faster per job. Side outputs,
 * watermarks and statuses go through RoutingOutput, as do nodes with more main targets than
 * MAX_COMPILED_TARGETS, and every node where the process forbids compiling code.
 */
export function createOutput(main: readonly OutputTarget[], side: ReadonlyMap<string, readonly OutputTarget[]>): Output<unknown> {
  if (side.size === 0 && main.length === 1) return main[0]!;
  const routing = new RoutingOutput(main, side);
  if (main.length > MAX_COMPILED_TARGETS) return routing;
  const names = main.map((_, i) => `target${i}`);
  const make = compileFunction<(routing: RoutingOutput, ...targets: OutputTarget[]) => Output<unknown>>(
    ["routing", ...names],
    `"use strict";
    return {
      collect(value, timestamp) { /* routing output ${++routingOutputs} */ ${names.map((t) => `${t}.collect(value, timestamp);`).join(" ")} },
      collectSide(tag, value, timestamp) { routing.collectSide(tag, value, timestamp); },
      emitWatermark(watermark) { routing.emitWatermark(watermark); },
      emitWatermarkStatus(idle) { routing.emitWatermarkStatus(idle); },
    };`,
  );
  return make !== undefined ? make(routing, ...main) : routing;
}

const NO_TARGETS: readonly OutputTarget[] = [];

export class RoutingOutput implements Output<unknown> {
  readonly #main: readonly OutputTarget[];
  /** The only main target when there is exactly one (the common, chained case). */
  readonly #single: OutputTarget | undefined;
  readonly #side: ReadonlyMap<string, readonly OutputTarget[]>;
  readonly #all: readonly OutputTarget[];

  constructor(main: readonly OutputTarget[], side: ReadonlyMap<string, readonly OutputTarget[]>) {
    this.#main = main;
    this.#single = main.length === 1 ? main[0] : undefined;
    this.#side = side;
    this.#all = [...main, ...[...side.values()].flat()];
  }

  collect(value: unknown, timestamp: number): void {
    const single = this.#single;
    if (single !== undefined) {
      single.collect(value, timestamp);
      return;
    }
    const main = this.#main;
    for (let i = 0; i < main.length; i++) main[i]!.collect(value, timestamp);
  }

  collectSide<S>(tag: OutputTag<S>, value: S, timestamp: number): void {
    const targets = this.#side.get(tag.id) ?? NO_TARGETS;
    for (let i = 0; i < targets.length; i++) targets[i]!.collect(value, timestamp);
  }

  emitWatermark(watermark: number): void {
    for (const target of this.#all) target.emitWatermark(watermark);
  }

  emitWatermarkStatus(idle: boolean): void {
    for (const target of this.#all) target.emitWatermarkStatus(idle);
  }
}
