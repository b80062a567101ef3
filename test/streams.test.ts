import assert from "node:assert/strict";
import { test } from "node:test";
import { defineJob, OutputTag, ValueStateDescriptor, WatermarkStrategy, type KeyedCoProcessFunction } from "eddy";
import { collectSink, runJob } from "eddy/testing";
import { planJob, assignToKeyGroup, computeOperatorIndexForKeyGroup, silentLogger } from "../packages/eddy/src/internal.ts";

test("union merges streams of the same type; nothing is lost or duplicated", async () => {
  const handle = runJob(
    defineJob("union", (env) => {
      const a = env.fromSequence(1, 500);
      const b = env.fromSequence(1001, 1500);
      const c = env.fromElements(-1, -2);
      a.union(b, c).sinkTo(collectSink("all"));
    }),
    { parallelism: 3 },
  );
  await handle.done;
  const got = handle.collected<number>("all").sort((x, y) => x - y);
  const expected = [-2, -1, ...Array.from({ length: 500 }, (_, i) => i + 1), ...Array.from({ length: 500 }, (_, i) => i + 1001)];
  assert.deepEqual(got, expected);
});

test("side outputs carry what a process function emits to a tag; the main output the rest", async () => {
  const odd = new OutputTag<string>("odd");
  const handle = runJob(
    defineJob("side", (env) => {
      const main = env.fromSequence(1, 10).process<number>({
        processElement(n, ctx, out) {
          if (n % 2 === 0) out.collect(n);
          else ctx.output(odd, `odd:${n}`);
        },
      });
      main.sinkTo(collectSink("even"));
      main.getSideOutput(odd).map((s) => s.toUpperCase()).sinkTo(collectSink("odd"));
    }),
  );
  await handle.done;
  assert.deepEqual(handle.collected("even"), [2, 4, 6, 8, 10]);
  assert.deepEqual(handle.collected("odd"), ["ODD:1", "ODD:3", "ODD:5", "ODD:7", "ODD:9"]);
});

interface Order {
  readonly id: string;
  readonly ts: number;
}
interface Payment {
  readonly orderId: string;
  readonly ts: number;
  readonly amount: number;
}

/** Joins each order with its payment, whichever arrives first; unmatched orders time out. */
function orderPaymentJoin(timeoutMs: number): KeyedCoProcessFunction<string, Order, Payment, string> {
  const orderState = new ValueStateDescriptor<Order>("order");
  const paymentState = new ValueStateDescriptor<Payment>("payment");
  return {
    processElement1(order, ctx, out) {
      const payment = ctx.getState(paymentState).value();
      if (payment !== undefined) {
        out.collect(`${order.id} paid ${payment.amount}`);
        ctx.getState(paymentState).clear();
      } else {
        ctx.getState(orderState).update(order);
        ctx.timerService().registerEventTimeTimer(order.ts + timeoutMs);
      }
    },
    processElement2(payment, ctx, out) {
      const order = ctx.getState(orderState).value();
      if (order !== undefined) {
        out.collect(`${order.id} paid ${payment.amount}`);
        ctx.getState(orderState).clear();
        ctx.timerService().deleteEventTimeTimer(order.ts + timeoutMs);
      } else {
        ctx.getState(paymentState).update(payment);
      }
    },
    onTimer(_ts, ctx, out) {
      if (ctx.getState(orderState).value() !== undefined) out.collect(`${ctx.getCurrentKey()} unpaid`);
      ctx.getState(orderState).clear();
    },
  };
}

for (const parallelism of [1, 4]) {
  test(`connect + keyBy joins two streams with shared keyed state and timers (parallelism ${parallelism})`, async () => {
    const orders: Order[] = Array.from({ length: 300 }, (_, i) => ({ id: `o${i}`, ts: i * 10 }));
    // Every third order is never paid; payments come in a different order than orders.
    const payments: Payment[] = orders
      .filter((_, i) => i % 3 !== 0)
      .map((o, i) => ({ orderId: o.id, ts: o.ts + (i % 7) * 3, amount: i }))
      .reverse();
    const handle = runJob(
      defineJob("join", (env) => {
        env.setParallelism(parallelism);
        const o = env.fromCollection(orders).assignTimestampsAndWatermarks(
          WatermarkStrategy.forMonotonousTimestamps<Order>().withTimestampAssigner((x) => x.ts),
        );
        const p = env.fromCollection(payments).assignTimestampsAndWatermarks(
          WatermarkStrategy.forBoundedOutOfOrderness<Payment>(10_000).withTimestampAssigner((x) => x.ts),
        );
        o.connect(p)
          .keyBy((x) => x.id, (y) => y.orderId)
          .process(orderPaymentJoin(1_000_000))
          .uid("join")
          .sinkTo(collectSink("joined"));
      }),
    );
    await handle.done;
    const expected = [
      ...payments.map((p) => `${p.orderId} paid ${p.amount}`),
      ...orders.filter((_, i) => i % 3 === 0).map((o) => `${o.id} unpaid`),
    ].sort();
    assert.deepEqual(handle.collected<string>("joined").sort(), expected);
  });
}

test("non-keyed connect runs a CoProcessFunction over both inputs", async () => {
  const handle = runJob(
    defineJob("co", (env) => {
      const numbers = env.fromElements(1, 2, 3);
      const words = env.fromElements("a", "b");
      numbers
        .connect(words)
        .process<string>({
          processElement1: (n, _ctx, out) => out.collect(`n${n}`),
          processElement2: (w, _ctx, out) => out.collect(`w${w}`),
        })
        .sinkTo(collectSink("out"));
    }),
  );
  await handle.done;
  assert.deepEqual(handle.collected<string>("out").sort(), ["n1", "n2", "n3", "wa", "wb"]);
});

for (const [parallelism, maxParallelism] of [
  [1, 128],
  [3, 128],
  [4, 7],
  [5, 32768],
] as const) {
  test(`keyed records reach exactly the subtask owning their key group (p=${parallelism}, maxP=${maxParallelism})`, async () => {
    const handle = runJob(
      defineJob("ownership", (env) => {
        env.setParallelism(parallelism).setMaxParallelism(maxParallelism);
        env
          .fromSequence(0, 1999)
          .map((n) => (n % 3 === 0 ? `key-${n % 97}` : n % 5 === 0 ? [n % 11, "x"] : n % 113))
          .keyBy((k) => k as string | number)
          .process<{ key: unknown; subtask: number }>({
            subtask: -1,
            open(ctx) {
              this.subtask = ctx.subtaskIndex;
            },
            processElement(key, _ctx, out) {
              out.collect({ key, subtask: this.subtask });
            },
          } as import("eddy").KeyedProcessFunction<string | number, unknown, { key: unknown; subtask: number }> & { subtask: number })
          .sinkTo(collectSink("placed"));
      }),
    );
    await handle.done;
    const placed = handle.collected<{ key: string | number; subtask: number }>("placed");
    assert.equal(placed.length, 2000);
    for (const { key, subtask } of placed) {
      const expected = computeOperatorIndexForKeyGroup(maxParallelism, parallelism, assignToKeyGroup(key, maxParallelism));
      assert.equal(subtask, expected, `key ${JSON.stringify(key)}`);
    }
  });
}

test("rebalance, rescale, broadcast and custom partitioning deliver every record as specified", async () => {
  const handle = runJob(
    defineJob("partitioners", (env) => {
      env.setParallelism(3);
      const src = env.fromSequence(1, 300);
      const tagged = (name: string) => ({
        idx: -1,
        open(ctx: { subtaskIndex: number }) {
          this.idx = ctx.subtaskIndex;
        },
        processElement(n: number, _ctx: unknown, out: { collect(v: string): void }) {
          out.collect(`${name}:${this.idx}:${n}`);
        },
      });
      src.rebalance().process(tagged("rebalance")).sinkTo(collectSink("rebalance"));
      src.rescale().process(tagged("rescale")).setParallelism(6).sinkTo(collectSink("rescale"));
      src.broadcast().process(tagged("broadcast")).sinkTo(collectSink("broadcast"));
      src.partitionCustom((k: number, n) => k % n, (n) => n).process(tagged("custom")).sinkTo(collectSink("custom"));
    }),
  );
  await handle.done;
  const parse = (s: string) => {
    const [, idx, n] = s.split(":");
    return { idx: Number(idx), n: Number(n) };
  };
  const rebalance = handle.collected<string>("rebalance").map(parse);
  assert.equal(rebalance.length, 300);
  assert.deepEqual(new Set(rebalance.map((r) => r.idx)), new Set([0, 1, 2]));
  const rescale = handle.collected<string>("rescale").map(parse);
  assert.equal(rescale.length, 300);
  assert.deepEqual(new Set(rescale.map((r) => r.idx)), new Set([0, 1, 2, 3, 4, 5]));
  const broadcast = handle.collected<string>("broadcast").map(parse);
  assert.equal(broadcast.length, 900);
  for (let i = 0; i < 3; i++) assert.equal(broadcast.filter((r) => r.idx === i).length, 300);
  for (const r of handle.collected<string>("custom").map(parse)) assert.equal(r.idx, r.n % 3);
});

/** source → map → filter → keyBy → sum → map → rebalance → map (p2) → sink (p2). */
const chaining = defineJob("chaining", (env) => {
  env
    .fromSequence(1, 10)
    .map((n) => n + 1)
    .filter((n) => n > 2)
    .keyBy((n) => n % 2)
    .sum()
    .map((n) => n * 2)
    .rebalance()
    .map((n) => n)
    .setParallelism(2)
    .sinkTo(collectSink("out"))
    .setParallelism(2);
});

/** What `chaining` emits: the rolling sums per parity of 3..11, doubled. */
function chainingExpected(): number[] {
  return rollingSums([3, 4, 5, 6, 7, 8, 9, 10, 11], (n) => n % 2)
    .map((sum) => sum * 2)
    .sort((a, b) => a - b);
}

/** A rolling sum per key over `values` in order, as `keyBy(keyOf).sum()` emits it, sorted. */
function rollingSums(values: readonly number[], keyOf: (n: number) => number): number[] {
  const sums = new Map<number, number>();
  return values
    .map((n) => {
      const sum = (sums.get(keyOf(n)) ?? 0) + n;
      sums.set(keyOf(n), sum);
      return sum;
    })
    .sort((a, b) => a - b);
}

test("a side output keyed at parallelism 1 is chained too, and gives what it gives at parallelism 2", async () => {
  const odd = new OutputTag<number>("odd");
  const job = defineJob("side-keyed", (env) => {
    const main = env.fromSequence(1, 2000).process<number>({
      processElement(n, ctx, out) {
        if (n % 2 === 0) out.collect(n);
        else ctx.output(odd, n);
      },
    });
    main.getSideOutput(odd).keyBy((n) => n % 7).sum().sinkTo(collectSink("odd"));
    main.keyBy((n) => n % 5).reduce((a, b) => a + b).sinkTo(collectSink("even"));
  });
  const odds = Array.from({ length: 1000 }, (_, i) => 2 * i + 1);
  const evens = Array.from({ length: 1000 }, (_, i) => 2 * i + 2);
  for (const parallelism of [1, 2]) {
    const handle = runJob(job, { parallelism, mode: "inline" });
    await handle.done;
    if (parallelism === 1) assert.deepEqual(handle.plan.chains.map((c) => c.name), ["Source: Sequence -> Process -> Sum -> Sink -> Reduce -> Sink"]);
    assert.deepEqual(handle.collected<number>("odd").sort((a, b) => a - b), rollingSums(odds, (n) => n % 7), `odd, parallelism ${parallelism}`);
    assert.deepEqual(handle.collected<number>("even").sort((a, b) => a - b), rollingSums(evens, (n) => n % 5), `even, parallelism ${parallelism}`);
  }
});

test("operators on forward edges with equal parallelism are chained; keyBy and parallelism changes split chains", async () => {
  const handle = runJob(chaining, { parallelism: 2, mode: "inline" });
  assert.deepEqual(
    handle.plan.chains.map((c) => c.name),
    ["Source: Sequence -> Map -> Filter", "Sum -> Map", "Map -> Sink"],
  );
  await handle.done;
  assert.deepEqual(handle.collected<number>("out").sort((a, b) => a - b), chainingExpected());
});

test("a keyBy edge from one subtask into a keyed operator of one subtask is chained; into other operators, and rebalance, it is not", async () => {
  const handle = runJob(chaining, { parallelism: 1 });
  assert.deepEqual(
    handle.plan.chains.map((c) => c.name),
    ["Source: Sequence -> Map -> Filter -> Sum -> Map", "Map -> Sink"],
  );
  await handle.done;
  assert.deepEqual(handle.collected<number>("out").sort((a, b) => a - b), chainingExpected());
  // Into an operator that is not keyed, the partitioner is what checks the key: the edge stays.
  const notKeyed = defineJob("keyed-map", (env) => {
    env.fromSequence(1, 10).keyBy((n) => n % 2).map((n) => n).sinkTo(collectSink("out"));
  });
  const plan = planJob(notKeyed, { parallelism: 1 }, silentLogger).plan;
  assert.deepEqual(plan.chains.map((c) => c.name), ["Source: Sequence", "Map -> Sink"]);
});

test("a keyed rolling reduce emits each key's running result, at parallelism 1 (batches without key groups) and 3 (with)", async () => {
  // Keys that look alike (7 and "7") stay apart; every key's results come in input order.
  const key = (n: number): number | string => (n % 3 === 0 ? String(n % 11) : n % 11);
  const expected = new Map<string, number[]>();
  const sums = new Map<string, number>();
  for (let n = 0; n < 5_000; n++) {
    const k = JSON.stringify(key(n));
    const sum = (sums.get(k) ?? 0) + n;
    sums.set(k, sum);
    expected.set(k, [...(expected.get(k) ?? []), sum]);
  }
  for (const parallelism of [1, 3]) {
    const handle = runJob(
      defineJob("rolling-sums", (env) => {
        env
          .fromSequence(0, 4_999)
          .setParallelism(1) // one source subtask: each key's records arrive in input order
          .map((n) => ({ k: key(n), sum: n }))
          .setParallelism(1)
          .keyBy((r) => r.k)
          .reduce((a, b) => ({ k: a.k, sum: a.sum + b.sum }))
          .sinkTo(collectSink("sums"));
      }),
      { parallelism },
    );
    await handle.done;
    const got = new Map<string, number[]>();
    for (const r of handle.collected<{ k: number | string; sum: number }>("sums")) {
      const k = JSON.stringify(r.k);
      got.set(k, [...(got.get(k) ?? []), r.sum]);
    }
    assert.deepEqual(got, expected, `parallelism ${parallelism}`);
  }
});
