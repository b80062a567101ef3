import { test } from "node:test";
import assert from "node:assert/strict";
import { SlidingEventTimeWindows, TumblingEventTimeWindows, TumblingProcessingTimeWindows, WindowStagger, type WindowAssigner } from "./assigners.ts";
import { Time, timeWindowNamespace, type TimeWindow } from "./windows.ts";

const noClock = { currentProcessingTime: (): number => assert.fail("event time reads no clock") };

test("a tumbling assigner gives each element its window, reusing the assignment within one window", () => {
  const assigner = TumblingEventTimeWindows.of(10, 3);
  const first = assigner.assignWindows("x", 3, noClock);
  assert.deepEqual(first.map((w) => [w.start, w.end]), [[3, 13]]);
  assert.equal(assigner.assignWindows("y", 12, noClock), first, "same window: the same frozen assignment");
  assert.equal(Object.isFrozen(first), true);
  const next = assigner.assignWindows("z", 13, noClock);
  assert.deepEqual(next.map((w) => [w.start, w.end]), [[13, 23]]);
  assert.deepEqual(first.map((w) => [w.start, w.end]), [[3, 13]], "an earlier assignment never changes");
  assert.deepEqual(assigner.assignWindows("w", -8, noClock).map((w) => [w.start, w.end]), [[-17, -7]]);
  assert.deepEqual(assigner.assignWindows("v", 5, noClock).map((w) => [w.start, w.end]), [[3, 13]], "back to an earlier window");
});

test("a tumbling processing-time assigner reads the clock per element", () => {
  let now = 995;
  const assigner = TumblingProcessingTimeWindows.of(1000);
  const clock = { currentProcessingTime: (): number => now };
  assert.deepEqual(assigner.assignWindows("a", Number.NaN, clock).map((w) => w.start), [0]);
  now = 1000;
  assert.deepEqual(assigner.assignWindows("a", Number.NaN, clock).map((w) => w.start), [1000]);
});

test("window stagger: NATURAL starts a subtask's windows at its first element, RANDOM draws once per subtask, ALIGNED is the default", () => {
  let now = 1234;
  const clock = { currentProcessingTime: (): number => now };
  const starts = (a: WindowAssigner<string, TimeWindow>) => a.assignWindows("x", Number.NaN, clock).map((w) => [w.start, w.end]);
  const natural = TumblingProcessingTimeWindows.of<string>(1000, 0, WindowStagger.NATURAL).forSubtask!();
  assert.deepEqual(starts(natural), [[1234, 2234]]);
  now = 2300;
  assert.deepEqual(starts(natural), [[2234, 3234]], "the stagger is drawn once");
  // Flink adds the stagger to the offset, modulo the size.
  now = 1234;
  assert.deepEqual(starts(TumblingProcessingTimeWindows.of<string>(1000, 900, WindowStagger.NATURAL).forSubtask!()), [[1134, 2134]]);
  assert.deepEqual(starts(TumblingProcessingTimeWindows.of<string>(1000)), [[1000, 2000]], "ALIGNED");

  const random = TumblingProcessingTimeWindows.of<string>(1000, 0, WindowStagger.RANDOM);
  const a = random.forSubtask!();
  const b = random.forSubtask!();
  assert.notEqual(a, b, "each subtask draws its own stagger");
  const first = a.assignWindows("x", Number.NaN, clock)[0]!;
  assert.ok(first.start <= now && now < first.end && first.end - first.start === 1000);
  now = 5678;
  const later = a.assignWindows("x", Number.NaN, clock)[0]!;
  assert.equal((later.start - first.start) % 1000, 0, "one subtask keeps its stagger");
  const aligned = TumblingProcessingTimeWindows.of<string>(1000);
  assert.equal(aligned.forSubtask!(), aligned, "ALIGNED: one assigner shared by every subtask");
  const custom = TumblingProcessingTimeWindows.of<string>(1000, 0, { name: "QUARTER", staggerOffset: (_now, size) => size / 4 }).forSubtask!();
  assert.deepEqual(starts(custom), [[5250, 6250]]);
  assert.match(custom.description, /QUARTER/);
});

test("Time helpers take negative durations (offsets), as Flink", () => {
  assert.equal(Time.milliseconds(-100), -100);
  assert.equal(Time.hours(-8), -8 * 3_600_000);
  const daysInUtcPlus8 = TumblingEventTimeWindows.of(Time.days(1), Time.hours(-8));
  assert.deepEqual(daysInUtcPlus8.assignWindows("x", Date.UTC(2026, 0, 1, 20), noClock).map((w) => new Date(w.start).toISOString()), ["2026-01-01T16:00:00.000Z"]);
  assert.throws(() => Time.seconds(Number.NaN), RangeError);
});

test("sliding windows whose slide exceeds their size leave gaps: elements there belong to no window (as Flink)", () => {
  const assigner = SlidingEventTimeWindows.of(100, 300);
  const windows = (t: number) => assigner.assignWindows("x", t, noClock).map((w) => [w.start, w.end]);
  assert.deepEqual(windows(0), [[0, 100]]);
  assert.deepEqual(windows(99), [[0, 100]]);
  assert.deepEqual(windows(100), []);
  assert.deepEqual(windows(299), []);
  assert.deepEqual(windows(350), [[300, 400]]);
  assert.deepEqual(windows(-250), [[-300, -200]]);
  assert.equal(assigner.paneSpec?.(), undefined, "evaluated by the general window operator");
});

test("a session window's namespace is `${start}|${end}` for every kind of number (the persisted form)", () => {
  const values = [0, -0, 1, -5, 2 ** 30 - 1, 2 ** 30, 99_999_999, 100_000_000, 100_000_005, 1_699_999_200_000, 1_699_999_200_123.5, -1_699_999_200_000, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 1e21, Infinity, -Infinity];
  for (const a of values) for (const b of values) assert.equal(timeWindowNamespace(a, b), `${a}|${b}`);
  for (let i = 0; i < 10_000; i++) {
    const n = Math.floor(Math.random() * Number.MAX_SAFE_INTEGER);
    assert.equal(timeWindowNamespace(n, n + 1), `${n}|${n + 1}`);
  }
});
