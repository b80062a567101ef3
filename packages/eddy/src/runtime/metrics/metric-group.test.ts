import assert from "node:assert/strict";
import { test } from "node:test";
import { EddyError } from "../../core/errors.ts";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import type { ProcessFunction } from "../functions.ts";
import { HISTOGRAM_QUANTILES, HISTOGRAM_WINDOW, MAX_USER_METRICS, OperatorMetricGroup } from "./metric-group.ts";

/** The EddyError `fn` throws. */
function thrown(fn: () => unknown): EddyError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof EddyError, String(e));
    return e;
  }
  assert.fail("did not throw");
}

test("a bad metric name is refused with INVALID_METRIC_NAME, naming the operator and the name", () => {
  const group = new OperatorMetricGroup("Parse", 3);
  for (const bad of ["", "1st", "has space", "dash-ed", "a".repeat(101), "records_total", "x_count", "x_sum", "x_bucket", 42 as unknown as string]) {
    const e = thrown(() => group.counter(bad));
    assert.equal(e.code, "INVALID_METRIC_NAME", JSON.stringify(bad));
    assert.match(e.message, /operator 'Parse' \(subtask 3\)/);
  }
  assert.equal(thrown(() => group.gauge("g", 5 as unknown as () => number)).code, "INVALID_METRIC_NAME");
  for (const good of ["a", "_x", "recordsParsed", "a".repeat(100), "total_bytes"]) group.counter(good);
  assert.equal(group.size, 5);
});

test("a second metric of the same name is refused with DUPLICATE_METRIC_NAME, whatever its kind", () => {
  const group = new OperatorMetricGroup("Parse", 0);
  group.counter("seen");
  assert.equal(thrown(() => group.counter("seen")).code, "DUPLICATE_METRIC_NAME");
  assert.equal(thrown(() => group.meter("seen")).code, "DUPLICATE_METRIC_NAME");
  assert.equal(thrown(() => group.gauge("seen", () => 1)).code, "DUPLICATE_METRIC_NAME");
});

test("an operator subtask registers at most MAX_USER_METRICS metrics", () => {
  const group = new OperatorMetricGroup("Parse", 0);
  for (let i = 0; i < MAX_USER_METRICS; i++) group.counter(`c${i}`);
  assert.equal(thrown(() => group.counter("one_more")).code, "TOO_MANY_METRICS");
});

test("samples: counters and meters count, a failing gauge reads NaN, a histogram keeps the quantiles of its last window", () => {
  const group = new OperatorMetricGroup("Parse", 0);
  const c = group.counter("c");
  const m = group.meter("m");
  const h = group.histogram("h");
  group.gauge("g", () => 7);
  group.gauge("broken", () => {
    throw new Error("no");
  });
  c.inc();
  c.inc(4);
  m.markEvent(3);
  // More values than the window: the oldest leave the quantiles, not the count or the sum.
  for (let v = 1; v <= HISTOGRAM_WINDOW + 100; v++) h.update(v);
  const byName = Object.fromEntries(group.samples().map((s) => [s.name, s]));
  assert.deepEqual(byName.c, { kind: "counter", name: "c", count: 5 });
  assert.deepEqual(byName.m, { kind: "meter", name: "m", count: 3 });
  assert.deepEqual(byName.g, { kind: "gauge", name: "g", value: 7 });
  assert.ok(byName.broken?.kind === "gauge" && Number.isNaN(byName.broken.value));
  const hs = byName.h;
  assert.ok(hs?.kind === "histogram");
  const n = HISTOGRAM_WINDOW + 100;
  assert.equal(hs.count, n);
  assert.equal(hs.sum, (n * (n + 1)) / 2);
  // The window holds 101..n; nearest-rank quantiles of it.
  const window = Array.from({ length: HISTOGRAM_WINDOW }, (_, i) => 101 + i);
  assert.deepEqual(
    hs.quantiles,
    HISTOGRAM_QUANTILES.map((q) => window[Math.ceil(q * HISTOGRAM_WINDOW) - 1]),
  );
});

test("a process function registers its metrics in open through its runtime context; a bad name fails open with the code", () => {
  const fn: ProcessFunction<number, number> & { seen?: { inc(): void } } = {
    open(ctx) {
      this.seen = ctx.metrics.counter("seen");
    },
    processElement(v, _ctx, out) {
      this.seen!.inc();
      out.collect(v);
    },
  };
  const h = OperatorTestHarness.forProcessFunction(fn).open();
  h.processElement(1, 0);
  h.processElement(2, 0);
  assert.deepEqual(h.metrics.samples(), [{ kind: "counter", name: "seen", count: 2 }]);

  const bad = OperatorTestHarness.forProcessFunction<number, number>({
    open(ctx) {
      ctx.metrics.counter("not ok");
    },
    processElement() {},
  });
  assert.equal(thrown(() => bad.open()).code, "INVALID_METRIC_NAME");
});
