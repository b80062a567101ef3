/**
 * Jobs for test/function-factories.test.ts: every API that takes a function object gets a factory
 * of a class with `#private` fields and constructor logic. A module of its own because worker
 * threads rebuild a job by importing its module.
 *
 * Each instance takes an id from a per-module counter (per thread: `threadId:n`) and tags every
 * record it emits with it and with its subtask, so a test sees how many instances each operator
 * had and which subtask used which.
 */
import { threadId } from "node:worker_threads";
import {
  defineJob,
  TumblingEventTimeWindows,
  WatermarkStrategy,
  type Collector,
  type CoProcessFunction,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type ProcessFunction,
  type ProcessWindowContext,
  type ProcessWindowFunction,
  type RuntimeContext,
  type TimeWindow,
} from "eddy";
import { collectSink } from "eddy/testing";

export const RECORDS = 400;

/** Constructor calls in this thread, per operator. */
export const constructions = new Map<string, number>();

export interface Tag {
  readonly op: string;
  readonly instance: string;
  readonly subtask: number;
}

/** What every function class here shares: #private state set by the constructor and open(). */
class Tagger {
  readonly #op: string;
  readonly #instance: string;
  #subtask = -1;
  #seen = 0;

  constructor(op: string) {
    const n = (constructions.get(op) ?? 0) + 1;
    constructions.set(op, n);
    this.#op = op;
    this.#instance = `${threadId}:${n}`;
  }

  open(ctx: RuntimeContext): void {
    this.#subtask = ctx.subtaskIndex;
  }

  tag(out: Collector<Tag>): void {
    this.#seen++;
    out.collect({ op: this.#op, instance: this.#instance, subtask: this.#subtask });
  }
}

class NonKeyed extends Tagger implements ProcessFunction<number, Tag> {
  constructor() {
    super("process");
  }
  processElement(_n: number, _ctx: unknown, out: Collector<Tag>): void {
    this.tag(out);
  }
}

class Keyed extends Tagger implements KeyedProcessFunction<number, number, Tag> {
  constructor() {
    super("keyedProcess");
  }
  processElement(_n: number, _ctx: KeyedProcessContext<number>, out: Collector<Tag>): void {
    this.tag(out);
  }
}

class Co extends Tagger implements CoProcessFunction<number, number, Tag> {
  constructor() {
    super("coProcess");
  }
  processElement1(_n: number, _ctx: unknown, out: Collector<Tag>): void {
    this.tag(out);
  }
  processElement2(_n: number, _ctx: unknown, out: Collector<Tag>): void {
    this.tag(out);
  }
}

class KeyedCo extends Tagger implements KeyedCoProcessFunction<number, number, number, Tag> {
  constructor() {
    super("keyedCoProcess");
  }
  processElement1(_n: number, _ctx: unknown, out: Collector<Tag>): void {
    this.tag(out);
  }
  processElement2(_n: number, _ctx: unknown, out: Collector<Tag>): void {
    this.tag(out);
  }
}

class Join extends Tagger {
  constructor() {
    super("intervalJoin");
  }
  processElement(_l: number, _r: number, _ctx: unknown, out: Collector<Tag>): void {
    this.tag(out);
  }
}

class WindowFn extends Tagger implements ProcessWindowFunction<number, Tag, number, TimeWindow> {
  constructor() {
    super("windowProcess");
  }
  process(_key: number, _ctx: ProcessWindowContext<TimeWindow>, _elements: number[], out: Collector<Tag>): void {
    this.tag(out);
  }
}

export const allFactories = defineJob("function-factories", (env) => {
  const numbers = env.fromSequence(0, RECORDS - 1);
  const others = env.fromSequence(0, RECORDS - 1);
  const timed = numbers.assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n));
  const timedOthers = others.assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((n) => n));
  const sink = collectSink<Tag>("out");
  numbers.rebalance().process(() => new NonKeyed()).uid("process").sinkTo(sink);
  numbers.keyBy((n) => n % 17).process(() => new Keyed()).uid("keyed").sinkTo(sink);
  numbers.rebalance().connect(others.rebalance()).process(() => new Co()).uid("co").sinkTo(sink);
  numbers.connect(others).keyBy((n) => n % 17, (n) => n % 17).process(() => new KeyedCo()).uid("keyed-co").sinkTo(sink);
  timed.keyBy((n) => n % 17).intervalJoin(timedOthers.keyBy((n) => n % 17)).between(0, 0).process(() => new Join()).uid("join").sinkTo(sink);
  timed.keyBy((n) => n % 17).window(TumblingEventTimeWindows.of(50)).process(() => new WindowFn()).uid("window").sinkTo(sink);
});

/** Throws once per process (module), at the 100th record of subtask 0, so the job restarts once. */
let failed = false;

class FailsOnce {
  #n = 0;
  #subtask = -1;
  constructor() {
    constructions.set("failsOnce", (constructions.get("failsOnce") ?? 0) + 1);
  }
  open(ctx: RuntimeContext): void {
    this.#subtask = ctx.subtaskIndex;
  }
  processElement(n: number, _ctx: KeyedProcessContext<number>, out: Collector<number>): void {
    if (++this.#n === 100 && this.#subtask === 0 && !failed) {
      failed = true;
      throw new Error("planned failure");
    }
    out.collect(n);
  }
}

export const failsOnce = defineJob("function-factory-restart", (env) => {
  env
    .fromSequence(0, RECORDS - 1)
    .keyBy((n) => n % 17)
    .process(() => new FailsOnce())
    .uid("fails-once")
    .sinkTo(collectSink("out"));
});
