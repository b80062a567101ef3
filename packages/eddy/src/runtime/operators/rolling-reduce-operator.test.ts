/**
 * The rolling reduce operator, through its batch path (processBatch, as the task calls it) and
 * its per-record path, against a from-scratch recomputation: per-key running results over random
 * inputs with mixed keys, random batch boundaries and checkpoints between batches; no aliasing
 * between what it emits, what it was given and what it stores; failures mid-batch.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { EddyError } from "../../core/errors.ts";
import { assignToKeyGroup, defaultMaxParallelism } from "../../core/key-group.ts";
import type { Key } from "../../core/key.ts";
import { NO_TIMESTAMP } from "../../core/time.ts";
import { OperatorTestHarness, type HarnessOptions } from "../../testing/operator-harness.ts";
import type { SerializedOperatorSnapshot } from "../checkpointing.ts";
import { rollingReduceOperator } from "./rolling-reduce-operator.ts";

interface Rec {
  key: Key;
  sum: number;
  n: number;
  /** Set by the "nested" reduce function: a result with an object field. */
  last?: { sum: number };
}

/** Keys that look alike but must stay apart (1 and "1"), composite keys, a fraction, a bigint. */
const KEYS: readonly Key[] = [1, "1", 2, "b", ["b", 1], ["b", "1"], 3.5, 10n];
const MAX_PARALLELISM = defaultMaxParallelism(1);

/** Mutates and returns its accumulator, as a reduce function may. */
const add = (acc: Rec, value: Rec): Rec => {
  acc.sum += value.sum;
  acc.n += value.n;
  return acc;
};

/**
 * Reduce functions of every style the operator must keep apart from what it emits and was given:
 * one mutating and returning its accumulator, one returning a fresh object, one mutating and
 * returning the input record, one changing the key order, one whose results hold an object (and
 * read it back), and one freezing its accumulator.
 */
const REDUCERS = {
  mutate: add,
  fresh: (acc: Rec, value: Rec): Rec => ({ key: acc.key, sum: acc.sum + value.sum, n: acc.n + value.n }),
  input: (acc: Rec, value: Rec): Rec => {
    value.sum += acc.sum;
    value.n += acc.n;
    return value;
  },
  reordered: (acc: Rec, value: Rec): Rec => ({ n: acc.n + value.n, sum: acc.sum + value.sum, key: acc.key }),
  nested: (acc: Rec, value: Rec): Rec => {
    // Reads its running sum from the object field, so a field shared with what was emitted shows.
    const sum = (acc.last?.sum ?? acc.sum) + value.sum;
    return { key: acc.key, sum, n: acc.n + value.n, last: { sum } };
  },
  frozen: (acc: Rec, value: Rec): Rec => {
    Object.freeze(acc);
    return { key: acc.key, sum: acc.sum + value.sum, n: acc.n + value.n };
  },
};
type ReducerName = keyof typeof REDUCERS;

function harness(options?: HarnessOptions, reducer: ReducerName = "mutate"): OperatorTestHarness<Rec, Rec> {
  return new OperatorTestHarness<Rec, Rec>(rollingReduceOperator(REDUCERS[reducer]), (r) => r.key, {
    operatorName: "Sum",
    ...options,
  }).open();
}

/** How a chunk of records reaches the operator: a batch with or without key groups, or one by one. */
type Delivery = "batch" | "batch-with-key-groups" | "per-record";

function deliver(h: OperatorTestHarness<Rec, Rec>, records: Rec[], timestamps: number[], how: Delivery): void {
  if (how === "per-record") {
    for (let i = 0; i < records.length; i++) h.processElement(records[i]!, timestamps[i]!);
    return;
  }
  const keyGroups = how === "batch" ? undefined : records.map((r) => assignToKeyGroup(r.key, MAX_PARALLELISM));
  h.operator.processBatch!(records, timestamps, keyGroups);
}

const chunkArb = fc.record({
  records: fc.array(fc.record({ key: fc.integer({ min: 0, max: KEYS.length - 1 }), v: fc.integer({ min: -50, max: 50 }) }), { maxLength: 40 }),
  how: fc.constantFrom<Delivery>("batch", "batch-with-key-groups", "per-record"),
  /** Take a checkpoint after this chunk and go on in an operator restored from it. */
  restore: fc.boolean(),
});

test("batches, with or without key groups, emit what per-key recomputation gives, across checkpoints between batches", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(chunkArb, { maxLength: 12 }),
      fc.constantFrom(...(Object.keys(REDUCERS) as ReducerName[])),
      async (chunks, reducer) => {
        let h = harness(undefined, reducer);
        const sums = new Map<number, { sum: number; n: number }>();
        let seen = 0;
        let t = 0;
        for (const chunk of chunks) {
          const records = chunk.records.map((r): Rec => ({ key: KEYS[r.key]!, sum: r.v, n: 1 }));
          const timestamps = records.map(() => (t += 1));
          deliver(h, records, timestamps, chunk.how);
          const out = h.output().slice(seen);
          seen += out.length;
          assert.equal(out.length, records.length);
          for (let i = 0; i < records.length; i++) {
            const k = chunk.records[i]!.key;
            const prev = sums.get(k) ?? { sum: 0, n: 0 };
            const next = { sum: prev.sum + chunk.records[i]!.v, n: prev.n + 1 };
            sums.set(k, next);
            const e = out[i]!;
            assert.equal(e.type, "record");
            if (e.type !== "record") continue;
            assert.deepEqual({ key: e.value.key, sum: e.value.sum, n: e.value.n }, { key: KEYS[k], ...next });
            assert.equal(e.timestamp, timestamps[i]);
            // Downstream owns what was emitted, and the source what it handed in: both may change it.
            e.value.sum = 1e9;
            records[i]!.sum = -1e9;
            if (e.value.last !== undefined) e.value.last.sum = 1e9;
          }
          if (chunk.restore) {
            const snapshot: SerializedOperatorSnapshot = await h.snapshot();
            h.close();
            h = harness({ restore: snapshot }, reducer);
            seen = 0;
          }
        }
        h.close();
      },
    ),
    { numRuns: 300 },
  );
});

test("a failing reduce function mid-batch names the operator and subtask; the records before it were processed", () => {
  const h = new OperatorTestHarness<Rec, Rec>(
    rollingReduceOperator<Rec>((acc, value) => {
      if (value.sum === 13) throw new RangeError("no 13");
      return add(acc, value);
    }),
    (r) => r.key,
    { operatorName: "Sum" },
  ).open();
  const records: Rec[] = [1, 2, 3, 13, 4].map((sum) => ({ key: "k", sum, n: 1 }));
  assert.throws(
    () => h.operator.processBatch!(records, records.map(() => NO_TIMESTAMP), undefined),
    (e: unknown) =>
      e instanceof EddyError &&
      e.code === "USER_FUNCTION_FAILED" &&
      e.operator === "Sum" &&
      e.subtask === 0 &&
      /Sum/.test(e.message) &&
      /no 13/.test(e.message),
  );
  assert.deepEqual(
    h.records().map((r) => r.sum),
    [1, 3, 6],
  );
  // The failed record changed nothing: the next one continues from the last stored result.
  h.processElement({ key: "k", sum: 4, n: 1 });
  assert.equal(h.records().at(-1)!.sum, 10);
});

test("a reduce result that cannot be kept in state fails mid-batch naming the operator", () => {
  class Box {
    constructor(readonly sum: number) {}
  }
  const h = new OperatorTestHarness<unknown, unknown>(
    rollingReduceOperator<unknown>((_acc, value) => (value === 3 ? new Box(3) : value)),
    () => "k",
    { operatorName: "Boxes" },
  ).open();
  assert.throws(
    () => h.operator.processBatch!([1, 2, 3, 4], [0, 0, 0, 0], undefined),
    (e: unknown) => e instanceof EddyError && e.code === "VALUE_NOT_COPYABLE" && e.operator === "Boxes" && /Boxes/.test(e.message),
  );
  assert.deepEqual(h.records(), [1, 2]);
});

test("a reduce function returning undefined clears the key, in a batch as record by record", () => {
  for (const how of ["batch", "per-record"] as const) {
    const h = new OperatorTestHarness<number | undefined, number | undefined>(
      rollingReduceOperator<number | undefined>((a, b) => (b === 0 ? undefined : a! + b!)),
      () => "k",
    ).open();
    const values = [1, 2, 0, 5, 6];
    if (how === "batch") h.operator.processBatch!(values, values.map(() => NO_TIMESTAMP), undefined);
    else for (const v of values) h.processElement(v);
    // After the clear the key starts again from the next record.
    assert.deepEqual(h.records(), [1, 3, undefined, 5, 11], how);
    h.close();
  }
});
