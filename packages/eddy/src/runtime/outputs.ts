/**
 * Output implementations. An operator's output fans out to targets: chained operators (direct
 * calls) and record writers (network edges). Side outputs route by tag id to their own targets.
 * Watermarks and statuses go to every target, main and side.
 */
import { STATUS_ACTIVE, STATUS_IDLE } from "../core/elements.ts";
import type { OutputTag } from "../core/output-tag.ts";
import type { RecordWriter } from "./channels/record-writer.ts";
import type { OneInputOperator, Output } from "./operator.ts";

/** One receiver of an operator's output. */
export interface OutputTarget {
  /** hot path */
  record(value: unknown, timestamp: number): void;
  watermark(watermark: number): void;
  status(idle: boolean): void;
}

export function chainedTarget(operator: OneInputOperator<unknown>): OutputTarget {
  return {
    record: (value, timestamp) => operator.processElement(value, timestamp),
    watermark: (watermark) => operator.processWatermark(watermark),
    status: (idle) => operator.processWatermarkStatus?.(idle),
  };
}

export function networkTarget(writer: RecordWriter): OutputTarget {
  return {
    record: (value, timestamp) => writer.write(value, timestamp),
    watermark: (watermark) => writer.broadcastElement({ kind: "watermark", timestamp: watermark }),
    status: (idle) => writer.broadcastElement(idle ? STATUS_IDLE : STATUS_ACTIVE),
  };
}

const NO_TARGETS: readonly OutputTarget[] = [];

export class RoutingOutput implements Output<unknown> {
  readonly #main: readonly OutputTarget[];
  /** The only main target when there is exactly one (the common, chained case). */
  readonly #single: OutputTarget | undefined;
  readonly #side: ReadonlyMap<string, readonly OutputTarget[]>;
  readonly #all: readonly OutputTarget[];
  /** Records emitted to main targets (for metrics). */
  recordsOut = 0;

  constructor(main: readonly OutputTarget[], side: ReadonlyMap<string, readonly OutputTarget[]>) {
    this.#main = main;
    this.#single = main.length === 1 ? main[0] : undefined;
    this.#side = side;
    this.#all = [...main, ...[...side.values()].flat()];
  }

  collect(value: unknown, timestamp: number): void {
    this.recordsOut++;
    const single = this.#single;
    if (single !== undefined) {
      single.record(value, timestamp);
      return;
    }
    const main = this.#main;
    for (let i = 0; i < main.length; i++) main[i]!.record(value, timestamp);
  }

  collectSide<S>(tag: OutputTag<S>, value: S, timestamp: number): void {
    const targets = this.#side.get(tag.id) ?? NO_TARGETS;
    for (let i = 0; i < targets.length; i++) targets[i]!.record(value, timestamp);
  }

  emitWatermark(watermark: number): void {
    for (const target of this.#all) target.watermark(watermark);
  }

  emitWatermarkStatus(idle: boolean): void {
    for (const target of this.#all) target.status(idle);
  }
}
