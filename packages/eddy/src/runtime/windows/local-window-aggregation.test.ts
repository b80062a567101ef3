/**
 * The local half of two-phase window aggregation: one partial per (key, bucket), stamped with the
 * bucket's last millisecond, and nothing held back past a watermark, an idle status, a barrier or
 * the end of input.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { localWindowAggregationOperator } from "./local-window-aggregation.ts";
import type { LocalPartial, SessionPartial } from "./local-partial.ts";
import { TimeWindow } from "./windows.ts";

interface Ev {
  readonly key: string | [string, number];
  readonly v: number;
}

const sum = { create: (e: Ev) => e.v, add: (acc: unknown, e: Ev) => (acc as number) + e.v, merge: (a: unknown, b: unknown) => (a as number) + (b as number) };

function harness(width = 1000, maxEntries = 100, offset = 0, byKey = false): OperatorTestHarness<Ev, LocalPartial> {
  return new OperatorTestHarness<Ev, LocalPartial>(
    localWindowAggregationOperator<Ev>({ description: "TumblingEventTimeWindows(1000)", buckets: { kind: "buckets", width, offset }, keySelector: (e: Ev) => e.key, fold: sum, maxEntries, byKey }),
    undefined,
  ).open();
}

const partials = (h: OperatorTestHarness<Ev, LocalPartial>) =>
  h.output().map((e) => (e.type === "record" ? { k: e.value.k, a: e.value.a, n: e.value.n, ts: e.timestamp } : e));

test("local aggregation: one partial per (key, bucket), sent before the watermark, stamped with the bucket's last millisecond", () => {
  const h = harness();
  h.processElement({ key: "a", v: 1 }, 10).processElement({ key: "b", v: 2 }, 20).processElement({ key: "a", v: 3 }, 999);
  h.processElement({ key: "a", v: 4 }, 1000).processElement({ key: "a", v: 5 }, -1); // next bucket; a negative timestamp's bucket is [-1000, 0)
  assert.equal(h.output().length, 0, "nothing is sent before a watermark");
  h.processWatermark(500);
  assert.deepEqual(partials(h), [
    { k: "a", a: 4, n: 2, ts: 999 },
    { k: "b", a: 2, n: 1, ts: 999 },
    { k: "a", a: 4, n: 1, ts: 1999 },
    { k: "a", a: 5, n: 1, ts: -1 },
    { type: "watermark", watermark: 500 },
  ]);
  h.clearOutput();
  h.processElement({ key: "a", v: 7 }, 10); // a new partial after the flush, not added to the sent one
  h.processWatermark(600);
  assert.deepEqual(partials(h), [{ k: "a", a: 7, n: 1, ts: 999 }, { type: "watermark", watermark: 600 }]);
});

test("in front of panes (byKey) a flush sends its partials key by key, each key's in the order its buckets came; with more than 16 buckets, or without byKey, bucket by bucket", () => {
  for (const [buckets, byKey] of [[4, true], [16, true], [17, true], [30, true], [4, false]] as const) {
    const h = harness(1000, 10_000, 0, byKey);
    // Elements of three keys, bucket after bucket, keys interleaved (c skips the even buckets).
    for (let b = 0; b < buckets; b++) {
      for (const key of ["a", "b", "c"]) if (key !== "c" || b % 2 === 1) h.processElement({ key, v: b }, b * 1000 + 5);
    }
    h.processWatermark(0);
    const sent = h.records().map((p) => `${String(p.k)}${p.a as number}`);
    const byBucket: string[] = [];
    for (let b = 0; b < buckets; b++) for (const key of ["a", "b", "c"]) if (key !== "c" || b % 2 === 1) byBucket.push(`${key}${b}`);
    const keyByKey = ["a", "b", "c"].flatMap((key) => byBucket.filter((p) => p.startsWith(key)));
    assert.deepEqual(sent, byKey && buckets <= 16 ? keyByKey : byBucket, `${buckets} buckets, byKey ${String(byKey)}`);
  }
});

test("local aggregation: composite keys are one key by value; offsets shift the buckets", () => {
  const h = harness(1000, 100, 250);
  h.processElement({ key: ["x", 1], v: 1 }, 249).processElement({ key: ["x", 1], v: 2 }, 250).processElement({ key: ["x", 1], v: 3 }, 1249);
  h.processElement({ key: ["x", 2], v: 4 }, 300);
  h.endInput();
  assert.deepEqual(partials(h), [
    { k: ["x", 1], a: 1, n: 1, ts: 249 },
    { k: ["x", 1], a: 5, n: 2, ts: 1249 },
    { k: ["x", 2], a: 4, n: 1, ts: 1249 },
  ]);
});

test("local aggregation: an idle status, the end of input and a full buffer flush; a barrier flushes before anything is snapshotted", async () => {
  const h = harness(1000, 3);
  h.processElement({ key: "a", v: 1 }, 1).processWatermarkStatus(true);
  assert.deepEqual(partials(h), [{ k: "a", a: 1, n: 1, ts: 999 }, { type: "status", idle: true }]);
  h.clearOutput();
  h.processElement({ key: "a", v: 1 }, 1).processElement({ key: "a", v: 1 }, 2).processElement({ key: "b", v: 1 }, 3);
  assert.equal(h.output().length, 0, "two partials: under the bound of 3");
  h.processElement({ key: "c", v: 1 }, 4);
  assert.deepEqual(h.records().map((p) => p.k), ["a", "b", "c"], "the third partial filled the buffer");
  h.clearOutput();
  h.processElement({ key: "d", v: 9 }, 5);
  await h.snapshot(1);
  assert.deepEqual(partials(h), [{ k: "d", a: 9, n: 1, ts: 999 }], "the barrier flushed");
  const sent = Object.entries(h.counters()).find(([name]) => name.endsWith(".numPartialAggregatesSent"));
  assert.equal(sent?.[1], 5, "partials sent: 1 + 3 + 1");
  h.clearOutput();
  h.endInput();
  assert.equal(h.output().length, 0, "nothing left after the barrier's flush");
});

test("local aggregation: a record without a timestamp fails with NO_TIMESTAMP, as the window would", () => {
  const h = harness();
  assert.throws(() => h.processElement({ key: "a", v: 1 }), (e: Error & { code?: string }) => e.code === "NO_TIMESTAMP");
});

test("local aggregation of sessions: a key's elements merge into the sessions the window operator would make, out of order too", () => {
  const gap = 10;
  const h = new OperatorTestHarness<Ev, LocalPartial>(
    localWindowAggregationOperator<Ev>({
      description: "EventTimeSessionWindows(10)",
      buckets: { kind: "sessions", window: (_v, ts) => new TimeWindow(ts, ts + gap) },
      keySelector: (e: Ev) => e.key,
      fold: sum,
      maxEntries: 100,
    }),
    undefined,
  ).open();
  // a: [0,10) and [30,40) apart; 15 joins neither... until 20 bridges [15,25) and [30,40)? 25 >= 30 is false: no.
  h.processElement({ key: "a", v: 1 }, 0).processElement({ key: "a", v: 2 }, 30).processElement({ key: "a", v: 4 }, 15);
  h.processElement({ key: "b", v: 100 }, 5);
  // 10 touches [0,10) (windows that meet merge, as Flink's TimeWindow.intersects) and [15,25): all three become [0,25).
  h.processElement({ key: "a", v: 8 }, 10);
  // 26 gives [26,36): it meets [30,40) only.
  h.processElement({ key: "a", v: 16 }, 26);
  h.processWatermark(1);
  const got = h.records().map((p) => {
    const s = p as SessionPartial;
    return { k: s.k, s: s.s, e: s.e, a: s.a, n: s.n };
  });
  assert.deepEqual(got, [
    { k: "a", s: 0, e: 25, a: 13, n: 3 },
    { k: "a", s: 26, e: 40, a: 18, n: 2 },
    { k: "b", s: 5, e: 15, a: 100, n: 1 },
  ]);
  assert.deepEqual(
    h.output().filter((e) => e.type === "record").map((e) => (e as { timestamp: number }).timestamp),
    [24, 39, 14],
    "each stamped with its session's last millisecond",
  );
});
