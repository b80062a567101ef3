import assert from "node:assert/strict";
import { test } from "node:test";
import { compactCount, compactDuration, progressLine, ProgressRates, type Progress } from "./progress.ts";

const base: Progress = {
  atMs: 100_000,
  name: "orders",
  state: "running",
  elapsedMs: 12_345,
  recordsIn: 5_000,
  recordsOut: 1_000,
  watermarkLagMs: 1_200,
  backpressure: { level: "ok", vertex: "Source: Orders" },
  lastCheckpoint: { id: 7, completedAtMs: 97_000, durationMs: 45, bytes: 1_300_000 },
  restarts: 0,
};

test("the status line: state and age, rates, watermark lag, backpressure, the last checkpoint, restarts", () => {
  assert.equal(
    progressLine(base, { inPerSecond: 1_234_567, outPerSecond: 45_600 }),
    "[eddy] orders running 12.3 s | in 1.23 M/s | out 45.6 K/s | watermark lag 1.2 s | backpressure ok | checkpoint 7 3.0 s ago (45 ms, 1.2 MiB) | restarts 0",
  );
});

test("before two samples the line shows counts; parts with nothing to say are left out or shown as –", () => {
  const line = progressLine({ ...base, watermarkLagMs: "none", lastCheckpoint: "disabled", backpressure: { level: "unknown", vertex: null } }, null);
  assert.equal(line, "[eddy] orders running 12.3 s | in 5,000 | out 1,000 | backpressure – | restarts 0");
  assert.match(progressLine({ ...base, watermarkLagMs: null, lastCheckpoint: null }, null), /\| watermark lag – \| backpressure ok \| no checkpoint yet \| restarts 0$/);
});

test("backpressure low or high names the worst vertex; a restarting job says so", () => {
  const line = progressLine({ ...base, state: "restarting", restarts: 2, backpressure: { level: "high", vertex: "Window(Count)" } }, null);
  assert.match(line, /^\[eddy\] orders restarting 12\.3 s \|/);
  assert.match(line, /\| backpressure high \(Window\(Count\)\) \|/);
  assert.match(line, /\| restarts 2$/);
});

test("the line is cut to one column less than the terminal, ending in …; an unsized terminal gets it whole", () => {
  const whole = progressLine(base, null);
  const cut = progressLine(base, null, 40);
  assert.equal(cut.length, 39);
  assert.ok(cut.endsWith("…") && whole.startsWith(cut.slice(0, -1)));
  assert.equal(progressLine(base, null, 0), whole);
  assert.equal(progressLine(base, null, whole.length + 1), whole);
});

test("rates over the window: the oldest sample within it is the base; a restart (counts going down) starts them again", () => {
  const rates = new ProgressRates(5_000);
  const at = (atMs: number, recordsIn: number, recordsOut: number): Progress => ({ ...base, atMs, recordsIn, recordsOut });
  assert.equal(rates.update(at(0, 0, 0)), null);
  assert.deepEqual(rates.update(at(1_000, 1_000, 100)), { inPerSecond: 1_000, outPerSecond: 100 });
  assert.deepEqual(rates.update(at(2_000, 3_000, 300)), { inPerSecond: 1_500, outPerSecond: 150 });
  for (let t = 3_000; t <= 7_000; t += 1_000) rates.update(at(t, t * 2, 0 + t / 10));
  // Samples older than 5 s before the newest are gone: the base is now the one at 3 s (5 s before the newest).
  assert.deepEqual(rates.update(at(8_000, 16_000, 800)), { inPerSecond: (16_000 - 6_000) / 5, outPerSecond: (800 - 300) / 5 });
  // The attempt restarted: its counts begin again.
  assert.equal(rates.update(at(9_000, 10, 1)), null);
  assert.deepEqual(rates.update(at(10_000, 510, 51)), { inPerSecond: 500, outPerSecond: 50 });
});

test("compact numbers and durations", () => {
  assert.deepEqual([0, 999, 9_999, 12_345, 123_456, 1_234_567, 12_345_678, 2_500_000_000, Number.NaN].map(compactCount), ["0", "999", "9,999", "12.3 K", "123 K", "1.23 M", "12.3 M", "2.50 G", "–"]);
  assert.deepEqual([0, 850, 1_000, 12_345, 59_999, 60_000, 754_000, 3_600_000, 7_500_000].map(compactDuration), ["0 ms", "850 ms", "1.0 s", "12.3 s", "60.0 s", "1m00s", "12m34s", "1h00m", "2h05m"]);
});
