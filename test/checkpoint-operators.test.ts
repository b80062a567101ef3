/**
 * Operators restored from a snapshot behave exactly as the operator that went on without one:
 * for every kind of keyed operator state (session windows with merging, pane-evaluated sliding
 * windows, a process function with keyed state and timers), a harness restored from a snapshot
 * taken mid-stream produces, for the rest of the stream, the same records, side outputs and late
 * decisions as the original harness after the snapshot.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  EventTimeSessionWindows,
  OutputTag,
  ValueStateDescriptor,
  type AggregateFunction,
  type KeyedProcessFunction,
  type TimeWindow,
} from "eddy";
import { OperatorTestHarness, type SerializedOperatorSnapshot } from "eddy/testing";
import {
  type OneInputOperator,
  type OperatorContext,
  type Output,
  windowOperator,
  slidingPaneOperator,
  keyedProcessOperator,
} from "../packages/eddy/src/internal.ts";
import { prng } from "./fixtures.ts";

interface Ev {
  readonly key: string;
  readonly ts: number;
  readonly v: number;
}

const late = new OutputTag<Ev>("late");

type Step = { readonly kind: "record"; readonly ev: Ev } | { readonly kind: "watermark"; readonly watermark: number };

/** Out-of-order events with late ones, and watermarks every 20 events. */
function steps(seed: number): Step[] {
  const rnd = prng(seed);
  const out: Step[] = [];
  let max = 0;
  for (let i = 0; i < 600; i++) {
    const ts = Math.max(0, i * 10 - Math.floor(rnd() * 120) - (i % 37 === 0 ? 800 : 0));
    max = Math.max(max, ts);
    out.push({ kind: "record", ev: { key: `k${i % 7}`, ts, v: i } });
    if (i % 20 === 19) out.push({ kind: "watermark", watermark: max - 100 });
  }
  out.push({ kind: "watermark", watermark: 100_000 });
  return out;
}

type Factory = (ctx: OperatorContext, output: Output<unknown>) => OneInputOperator<Ev>;

function drive(h: OperatorTestHarness<Ev, unknown>, list: readonly Step[]): void {
  for (const s of list) {
    if (s.kind === "record") h.processElement(s.ev, s.ev.ts);
    else h.processWatermark(s.watermark);
  }
}

async function checkRestore(name: string, factory: () => Factory): Promise<void> {
  for (const seed of [1, 2, 3]) {
    const all = steps(seed);
    const cut = Math.floor(all.length * (0.3 + 0.2 * seed) / 1.6);
    const original = new OperatorTestHarness<Ev, unknown>(factory(), (e) => e.key);
    drive(original, all.slice(0, cut));
    const snapshot: SerializedOperatorSnapshot = await original.snapshot();
    original.clearOutput();
    const lateBefore = original.sideOutput(late).length;
    // Right after the snapshot, before any new watermark: an event far behind the watermark,
    // which only a restored watermark recognizes as late.
    const lastWatermark = Math.max(...all.slice(0, cut).flatMap((st) => (st.kind === "watermark" ? [st.watermark] : [])));
    const rest: Step[] = [{ kind: "record", ev: { key: "k0", ts: lastWatermark - 1_000, v: -1 } }, ...all.slice(cut)];
    drive(original, rest);
    const restored = new OperatorTestHarness<Ev, unknown>(factory(), (e) => e.key, { restore: snapshot });
    drive(restored, rest);
    const where = `${name}, seed ${seed}, snapshot after step ${cut}`;
    assert.deepEqual(restored.records(), original.records(), `${where}: records`);
    assert.deepEqual(restored.sideOutput(late), original.sideOutput(late).slice(lateBefore), `${where}: late events`);
    assert.ok(original.sideOutput(late).length > lateBefore || name === "process", `${where}: the rest of the stream has late events`);
  }
}

const sum: AggregateFunction<Ev, { sum: number }, number> = {
  createAccumulator: () => ({ sum: 0 }),
  add: (e, acc) => ({ sum: acc.sum + e.v }),
  getResult: (acc) => acc.sum,
  merge: (a, b) => ({ sum: a.sum + b.sum }),
};

test("session windows (merging) restored from a snapshot: same results, same late events", async () => {
  await checkRestore("sessions", () =>
    windowOperator<Ev, TimeWindow>({
      assigner: EventTimeSessionWindows.withGap<Ev>(40),
      trigger: EventTimeSessionWindows.withGap<Ev>(40).defaultTrigger(),
      allowedLateness: 50,
      lateDataTag: late,
      contents: { kind: "aggregate", aggregate: sum as AggregateFunction<Ev, unknown, unknown> },
      windowFunction: undefined,
    }) as unknown as Factory,
  );
});

test("pane-evaluated sliding windows restored from a snapshot: same results, same late events", async () => {
  await checkRestore("panes", () =>
    slidingPaneOperator<Ev>({
      size: 300,
      slide: 100,
      offset: 0,
      description: "SlidingEventTimeWindows(300, 100)",
      allowedLateness: 0,
      lateDataTag: late,
      panes: { create: (e) => e.v, add: (acc, e) => (acc as number) + e.v, merge: (a, b) => (a as number) + (b as number), result: (a) => a },
      windowFunction: undefined,
    }) as unknown as Factory,
  );
});

test("a process function with keyed state and event-time timers restored from a snapshot: same output", async () => {
  // Sums per key and emits the sum 50 ms after each record's time (one timer per record time).
  const fn: KeyedProcessFunction<string, Ev, string> = {
    processElement(e, ctx) {
      const s = ctx.getState(new ValueStateDescriptor<number>("sum"));
      s.update((s.value() ?? 0) + e.v);
      ctx.timerService().registerEventTimeTimer(e.ts + 50);
    },
    onTimer(ts, ctx, out) {
      out.collect(`${ctx.getCurrentKey()}@${ts}=${ctx.getState(new ValueStateDescriptor<number>("sum")).value()}`);
    },
  };
  await checkRestore("process", () => keyedProcessOperator(fn) as unknown as Factory);
});
