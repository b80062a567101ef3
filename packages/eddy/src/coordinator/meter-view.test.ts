import assert from "node:assert/strict";
import { test } from "node:test";
import { METER_SPAN_MS, METER_UPDATE_INTERVAL_MS, MeterView } from "./meter-view.ts";

test("a meter's rate is per second since its origin during the first minute, then over the last minute", () => {
  const view = new MeterView(0);
  // 100 events per second for two minutes, sampled every second.
  for (let t = 1_000; t <= 120_000; t += 1_000) view.update(t, t / 10);
  assert.equal(view.rate(120_000, 12_000), 100);
  // Then 10 per second for 30 s: the rate looks back one minute, half of it at the old rate.
  let count = 12_000;
  for (let t = 121_000; t <= 150_000; t += 1_000) view.update(t, (count += 10));
  const rate = view.rate(150_000, count);
  assert.ok(rate > 50 && rate < 60, `about (30·100 + 30·10)/60 = 55, within a sample interval: ${rate}`);
  // The first reading is already a rate (from the origin), not 0.
  assert.equal(new MeterView(0).rate(2_000, 50), 25);
});

test("a meter keeps samples at least the update interval apart and at most a minute back", () => {
  const view = new MeterView(0);
  view.update(METER_UPDATE_INTERVAL_MS - 1, 1_000_000); // too soon: not kept
  assert.equal(view.rate(METER_UPDATE_INTERVAL_MS * 2, 0 + 10), 1); // 10 events over 10 s since the origin
  const late = new MeterView(0);
  assert.equal(late.rate(METER_SPAN_MS + 1, 100), 0, "no sample within the minute: no rate");
});

test("a count that went down (a restart's new counters) starts the meter over", () => {
  const view = new MeterView(0);
  view.update(10_000, 1_000);
  view.update(20_000, 5); // restarted
  assert.equal(view.rate(25_000, 10), 1);
});
