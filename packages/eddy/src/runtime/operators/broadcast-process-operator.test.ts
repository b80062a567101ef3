/**
 * The broadcast state operators driven directly (TwoInputOperatorTestHarness): rules written by
 * the broadcast side and read by the other, read-only enforcement, keyed state and timers,
 * applyToKeyedState, copies, and snapshots that restore broadcast, keyed state and timers.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { EddyError } from "../../core/errors.ts";
import { assignToKeyGroup, keyGroupRangeForOperator } from "../../core/key-group.ts";
import { OutputTag } from "../../core/output-tag.ts";
import { MapStateDescriptor, ValueStateDescriptor } from "../../state/descriptors.ts";
import { TwoInputOperatorTestHarness } from "../../testing/operator-harness.ts";
import type { BroadcastProcessFunction, KeyedBroadcastProcessFunction } from "../functions.ts";

interface Tx {
  readonly account: string;
  readonly amount: number;
}
interface Rule {
  readonly id: string;
  /** Undefined: remove the rule. */
  readonly limit?: number;
}

const rules = new MapStateDescriptor<string, { limit: number }>("rules");
const total = new ValueStateDescriptor<number>("total");
const codeOf = (e: unknown): string | undefined => (e instanceof EddyError ? e.code : undefined);

/** Alerts per rule whose limit the account's running total exceeds; removing a rule resets nothing. */
const limits: KeyedBroadcastProcessFunction<string, Tx, Rule, string> = {
  processElement(tx, ctx, out) {
    const state = ctx.getState(total);
    const sum = (state.value() ?? 0) + tx.amount;
    state.update(sum);
    for (const [id, rule] of ctx.getBroadcastState(rules).entries()) {
      if (sum > rule.limit) out.collect(`${ctx.getCurrentKey()}>${id}@${sum}`);
    }
  },
  processBroadcastElement(rule, ctx) {
    const state = ctx.getBroadcastState(rules);
    if (rule.limit === undefined) state.remove(rule.id);
    else state.put(rule.id, { limit: rule.limit });
  },
};

const harness = (fn: KeyedBroadcastProcessFunction<string, Tx, Rule, string> = limits, options = {}) =>
  TwoInputOperatorTestHarness.forKeyedBroadcastProcessFunction(fn, (tx: Tx) => tx.account, [rules], options);

test("rules written by the broadcast side apply to the keyed side from then on, per key with keyed state", () => {
  const h = harness();
  h.processElement1({ account: "a", amount: 50 });
  assert.deepEqual(h.records(), [], "no rule yet");
  h.processBroadcastElement({ id: "r1", limit: 60 });
  h.processElement1({ account: "a", amount: 20 });
  h.processElement1({ account: "b", amount: 20 });
  h.processBroadcastElement({ id: "r2", limit: 10 });
  h.processElement1({ account: "b", amount: 1 });
  h.processBroadcastElement({ id: "r1" });
  h.processElement1({ account: "a", amount: 1 });
  assert.deepEqual(h.records(), ["a>r1@70", "b>r2@21", "a>r2@71"]);
});

test("the keyed side cannot write broadcast state: put, putAll, remove and clear throw BROADCAST_STATE_READ_ONLY", () => {
  for (const write of ["put", "putAll", "remove", "clear"] as const) {
    const h = harness({
      processElement(_tx, ctx) {
        // A cast, as plain JavaScript would do: the type has no writing methods.
        const state = ctx.getBroadcastState(rules) as unknown as Record<string, (...args: unknown[]) => void>;
        state[write]!(write === "putAll" ? [["x", { limit: 1 }]] : "x", { limit: 1 });
      },
      processBroadcastElement(rule, ctx) {
        ctx.getBroadcastState(rules).put(rule.id, { limit: rule.limit ?? 0 });
      },
    });
    h.processBroadcastElement({ id: "x", limit: 5 });
    assert.throws(() => h.processElement1({ account: "a", amount: 1 }), (e) => codeOf(e) === "BROADCAST_STATE_READ_ONLY" && /read-only/.test((e as Error).message), write);
  }
});

test("onTimer sees broadcast state read-only, keyed state of the timer's key, and fires in event time", () => {
  const h = harness({
    processElement(tx, ctx) {
      ctx.getState(total).update(tx.amount);
      ctx.timerService().registerEventTimeTimer(ctx.timestamp()! + 10);
    },
    processBroadcastElement(rule, ctx) {
      ctx.getBroadcastState(rules).put(rule.id, { limit: rule.limit! });
    },
    onTimer(timestamp, ctx, out) {
      const limit = ctx.getBroadcastState(rules).get("r")?.limit;
      out.collect(`${ctx.getCurrentKey()}@${timestamp}:${ctx.getState(total).value()! > (limit ?? Infinity)}`);
      if (ctx.getCurrentKey() === "write") (ctx.getBroadcastState(rules) as unknown as { clear(): void }).clear();
    },
  });
  h.processElement1({ account: "a", amount: 5 }, 100);
  h.processElement1({ account: "b", amount: 50 }, 105);
  h.processBroadcastElement({ id: "r", limit: 10 }, 90);
  h.processWatermark(112);
  assert.deepEqual(h.records(), ["a@110:false"]);
  h.processWatermark(115);
  assert.deepEqual(h.records(), ["a@110:false", "b@115:true"]);
  h.processElement1({ account: "write", amount: 1 }, 200);
  assert.throws(() => h.processWatermark(300), (e) => codeOf(e) === "BROADCAST_STATE_READ_ONLY");
});

test("processBroadcastElement has no current key: it cannot set timers, and sees time and side outputs", () => {
  const side = new OutputTag<string>("side");
  const h = harness({
    processElement() {},
    processBroadcastElement(rule, ctx, out) {
      ctx.output(side, `${rule.id}@${ctx.timestamp()} wm=${ctx.timerService().currentWatermark()}`);
      out.collect(rule.id);
      if (rule.id === "timer") ctx.timerService().registerEventTimeTimer(1);
    },
  });
  h.processWatermark(40);
  h.processBroadcastElement({ id: "r" }, 50);
  assert.deepEqual(h.sideOutput(side), [{ value: "r@50 wm=40", timestamp: 50 }]);
  assert.deepEqual(h.output().at(-1), { type: "record", value: "r", timestamp: 50 });
  assert.throws(() => h.processBroadcastElement({ id: "timer" }), (e) => codeOf(e) === "TIMERS_NEED_KEYED_STREAM" && /no current key/.test((e as Error).message));
});

test("a descriptor not given to broadcast(...) is UNKNOWN_BROADCAST_STATE, on either side", () => {
  const other = new MapStateDescriptor<string, number>("other");
  const h = harness({
    processElement(_tx, ctx) {
      ctx.getBroadcastState(other);
    },
    processBroadcastElement(_rule, ctx) {
      ctx.getBroadcastState(other);
    },
  });
  assert.throws(() => h.processBroadcastElement({ id: "r" }), (e) => codeOf(e) === "UNKNOWN_BROADCAST_STATE" && /'other' .*declared: rules/.test((e as Error).message));
  assert.throws(() => h.processElement1({ account: "a", amount: 1 }), (e) => codeOf(e) === "UNKNOWN_BROADCAST_STATE");
});

test("applyToKeyedState visits every key of the subtask holding the state, once, with the state scoped to it", () => {
  const maxParallelism = 128;
  const range = keyGroupRangeForOperator(maxParallelism, 2, 1);
  const accounts = Array.from({ length: 40 }, (_, i) => `acct-${i}`).filter((a) => {
    const kg = assignToKeyGroup(a, maxParallelism);
    return kg >= range.start && kg <= range.end;
  });
  assert.ok(accounts.length >= 10);
  const visited: string[] = [];
  const h = harness(
    {
      processElement(tx, ctx, out) {
        const state = ctx.getState(total);
        state.update((state.value() ?? 0) + tx.amount);
        out.collect(`${tx.account}=${state.value()}`);
      },
      processBroadcastElement(rule, ctx) {
        // "reset": clears totals above the limit, halves the others.
        ctx.applyToKeyedState(total, (account, state) => {
          visited.push(account);
          if (rule.id === "count") return;
          const v = state.value()!;
          if (v > rule.limit!) state.clear();
          else state.update(v / 2);
        });
      },
    },
    { maxParallelism, parallelism: 2, subtaskIndex: 1 },
  );
  accounts.forEach((account, i) => h.processElement1({ account, amount: i }));
  h.processBroadcastElement({ id: "reset", limit: 20 });
  assert.deepEqual([...visited].sort(), [...accounts].sort(), "each key with state, once");
  visited.length = 0;
  h.processBroadcastElement({ id: "count" });
  assert.deepEqual([...visited].sort(), accounts.filter((_, i) => i <= 20).sort(), "cleared keys hold nothing: not visited");
  visited.length = 0;
  h.clearOutput();
  accounts.forEach((account) => h.processElement1({ account, amount: 1 }));
  assert.deepEqual(
    h.records(),
    accounts.map((a, i) => `${a}=${i > 20 ? 1 : i / 2 + 1}`),
  );
  h.processBroadcastElement({ id: "count" });
  assert.equal(visited.length, accounts.length);
});

test("broadcast values are copies: mutating what was put or read changes nothing", () => {
  const seen: number[] = [];
  const h = harness({
    processElement(_tx, ctx) {
      const rule = ctx.getBroadcastState(rules).get("r")!;
      seen.push(rule.limit);
      rule.limit = -1;
    },
    processBroadcastElement(rule, ctx) {
      const value = { limit: rule.limit! };
      ctx.getBroadcastState(rules).put(rule.id, value);
      value.limit = 0;
    },
  });
  h.processBroadcastElement({ id: "r", limit: 7 });
  h.processElement1({ account: "a", amount: 1 });
  h.processElement1({ account: "a", amount: 1 });
  assert.deepEqual(seen, [7, 7]);
});

test("a snapshot restores broadcast state, keyed state and timers; later changes are not in it", async () => {
  const fn: KeyedBroadcastProcessFunction<string, Tx, Rule, string> = {
    ...limits,
    processElement(tx, ctx, out) {
      limits.processElement(tx, ctx, out);
      ctx.timerService().registerEventTimeTimer(1_000);
    },
    onTimer(_ts, ctx, out) {
      out.collect(`timer ${ctx.getCurrentKey()} sees ${[...ctx.getBroadcastState(rules).keys()].join(",")}`);
    },
  };
  const h = harness(fn);
  h.processBroadcastElement({ id: "r1", limit: 10 });
  h.processBroadcastElement({ id: "r2", limit: 100 });
  h.processElement1({ account: "a", amount: 50 }, 1);
  const snapshot = await h.snapshot();
  h.processBroadcastElement({ id: "r1" });
  h.processBroadcastElement({ id: "r3", limit: 0 });

  const restored = harness(fn, { restore: snapshot });
  restored.processElement1({ account: "a", amount: 60 }, 2);
  assert.deepEqual(restored.records(), ["a>r1@110", "a>r2@110"], "the rules and the total at the snapshot");
  restored.processWatermark(1_000);
  assert.deepEqual(restored.records().at(-1), "timer a sees r1,r2");
  assert.deepEqual(snapshot.meta.operatorStates, [{ name: "rules", mode: "broadcast", count: 2 }]);
});

test("BroadcastProcessFunction on a non-keyed stream: rules and records, the combined watermark forwarded", () => {
  const prefixes = new MapStateDescriptor<string, string>("prefixes");
  const fn: BroadcastProcessFunction<string, [string, string], string> = {
    processElement(value, ctx, out) {
      const prefix = ctx.getBroadcastState(prefixes).get(value[0]!);
      out.collect(prefix === undefined ? value : `${prefix}${value}`);
      assert.throws(() => (ctx.getBroadcastState(prefixes) as unknown as { put(k: string, v: string): void }).put("x", "y"), (e) => codeOf(e) === "BROADCAST_STATE_READ_ONLY");
    },
    processBroadcastElement([key, prefix], ctx) {
      ctx.getBroadcastState(prefixes).put(key, prefix);
      assert.throws(() => ctx.timerService().registerProcessingTimeTimer(1), (e) => codeOf(e) === "TIMERS_NEED_KEYED_STREAM");
    },
  };
  const h = TwoInputOperatorTestHarness.forBroadcastProcessFunction(fn, [prefixes]);
  h.processElement1("apple");
  h.processBroadcastElement(["a", "A:"]);
  h.processElement1("avocado", 5);
  h.processElement1("banana");
  h.processWatermark(10);
  assert.deepEqual(h.output(), [
    { type: "record", value: "apple", timestamp: undefined },
    { type: "record", value: "A:avocado", timestamp: 5 },
    { type: "record", value: "banana", timestamp: undefined },
    { type: "watermark", watermark: 10 },
  ]);
});
