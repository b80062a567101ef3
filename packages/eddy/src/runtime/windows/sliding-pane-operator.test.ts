/**
 * Pane state and timers of the sliding pane operator: without allowed lateness a pane has no
 * cleanup timer (the last window containing it deletes it when it fires); with allowed lateness
 * each pane keeps one. A pane whose first window to fire holds the pane before it registers no
 * fire timer (the earlier pane's firings reach it). Either way nothing is left once the
 * watermark passes every window. And the firings against a replay of the windowing rules, on the
 * heap backend and on the disk backend with a cache of one key.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { OperatorTestHarness } from "../../testing/operator-harness.ts";
import { DiskKeyedStateBackend } from "../../state/disk-keyed-state-backend.ts";
import type { KeyedStateBackend, KeyedStateBackendFactory } from "../../state/keyed-state-backend.ts";
import { heapStateBackend } from "../../state/heap-keyed-state-backend.ts";
import { ValueStateDescriptor } from "../../state/descriptors.ts";
import { assignToKeyGroup } from "../../core/key-group.ts";
import { slidingPaneOperator } from "./sliding-pane-operator.ts";

interface Ev {
  readonly key: string;
  readonly ts: number;
}

function harness(allowedLateness: number) {
  return new OperatorTestHarness<Ev, unknown>(
    slidingPaneOperator<Ev>({
      size: 30,
      slide: 10,
      offset: 0,
      description: "SlidingEventTimeWindows(30, 10)",
      allowedLateness,
      lateDataTag: undefined,
      panes: { create: () => 1, add: (n) => (n as number) + 1, merge: (a, b) => (a as number) + (b as number), result: (n) => n },
      windowFunction: (key, w, [n], out) => out.collect(`${String(key)} ${w.start}-${w.end}: ${String(n)}`),
    }),
    (e) => e.key,
  ).open();
}

const sizeOf = (h: OperatorTestHarness<Ev, unknown>) => (h.operator as unknown as { stateSize(): { keys: number; timers: number } }).stateSize();

for (const [lateness, timers] of [[0, 1], [5, 4]] as const) {
  test(`with allowed lateness ${lateness}: ${timers} timers for 3 consecutive panes of a key (one fire timer: each later pane is in a window of the one before it; with lateness a cleanup timer each), every window once, nothing left`, () => {
    const h = harness(lateness);
    for (const ts of [1, 11, 12, 25]) h.processElement({ key: "a", ts }, ts);
    assert.deepEqual(sizeOf(h), { keys: 1, timers });
    h.processWatermark(29); // windows ending at 9, 19 and 29 (inclusive) have fired
    assert.deepEqual(h.records(), ["a -20-10: 1", "a -10-20: 3", "a 0-30: 4"]);
    h.processWatermark(1_000);
    assert.deepEqual(h.records().slice(3), ["a 10-40: 3", "a 20-50: 1"]);
    assert.deepEqual(sizeOf(h), { keys: 0, timers: 0 });
  });
}

test("a pane after a gap registers its own fire timer; a pane whose first unfired window is its last registers one too", () => {
  const h = harness(0);
  // Panes 0 and 40: no window holds both (size 30), so each has a timer.
  for (const ts of [1, 41]) h.processElement({ key: "a", ts }, ts);
  assert.deepEqual(sizeOf(h), { keys: 1, timers: 2 });
  h.processWatermark(1_000);
  assert.deepEqual(h.records(), ["a -20-10: 1", "a -10-20: 1", "a 0-30: 1", "a 20-50: 1", "a 30-60: 1", "a 40-70: 1"]);
  assert.deepEqual(sizeOf(h), { keys: 0, timers: 0 });
  // With allowed lateness: pane 10 created once the watermark passed its first two windows
  // (ends 19 and 29) fires them at once; its last window (end 39) is not in pane 0's reach.
  const late = harness(100);
  late.processElement({ key: "b", ts: 1 }, 1);
  late.processWatermark(30);
  late.processElement({ key: "b", ts: 15 }, 15);
  late.processWatermark(1_000);
  assert.deepEqual(late.records(), ["b -20-10: 1", "b -10-20: 1", "b 0-30: 1", "b -10-20: 2", "b 0-30: 2", "b 10-40: 1"]);
});


test("panes a snapshot holds under their start ('window-panes') move to their numbers when the operator starts; a start off this slide joins the pane holding it", () => {
  let backend: KeyedStateBackend | undefined;
  const legacy: KeyedStateBackendFactory = (options) => {
    backend = heapStateBackend(options);
    const byStart = backend.getState(new ValueStateDescriptor<number>("window-panes", { copy: "none" }));
    for (const [key, start, n] of [["a", 0, 1], ["a", 10, 3], ["a", 15, 2], ["b", -10, 4]] as const) {
      backend.setCurrentKey(key, assignToKeyGroup(key, 128));
      byStart.setCurrentNamespace(start);
      byStart.update(n);
    }
    return backend;
  };
  new OperatorTestHarness<Ev, unknown>(
    slidingPaneOperator<Ev>({
      size: 30,
      slide: 10,
      offset: 0,
      description: "SlidingEventTimeWindows(30, 10)",
      allowedLateness: 0,
      lateDataTag: undefined,
      panes: { create: () => 1, add: (n) => (n as number) + 1, merge: (a, b) => (a as number) + (b as number), result: (n) => n },
      windowFunction: undefined,
    }),
    (e) => e.key,
    { stateBackend: legacy, maxParallelism: 128 },
  ).open();
  const cells = (name: string) => [...Array.from({ length: 128 }, (_, kg) => [...backend!.entries(name, kg)]).flat()].map((e) => `${String(e.key)} ${e.namespace}: ${String(e.value)}`).sort();
  assert.deepEqual(cells("window-pane-numbers"), ["a 0: 1", "a 1: 5", "b -1: 4"]);
  assert.deepEqual(cells("window-panes"), []);
});


/**
 * The operator against a replay of the windowing rules, over random keys, disorder and watermarks:
 * at a watermark, every window the watermark passes that holds an element fires once, in end
 * order across keys (as its timers fire); a late element within the allowed lateness fires again
 * every window of its that the watermark passed; one too late for every window is dropped. Values
 * are concatenations (associative, not commutative), so panes merged out of order would show, and
 * a low bound on the panes swept per advance runs the fallback (one window per read).
 */
type Op = { k: number; ts: number } | { dw: number };

function replay(ops: readonly Op[], size: number, slide: number, lateness: number): string[][] {
  let watermark = Number.NEGATIVE_INFINITY;
  const accepted: { k: number; ts: number; seq: number }[] = [];
  const value = (k: number, end: number): string | undefined => {
    const inside = accepted.filter((e) => e.k === k && e.ts > end - size && e.ts <= end);
    if (inside.length === 0) return undefined;
    // Panes in start order, a pane's elements in arrival order.
    inside.sort((a, b) => Math.floor(a.ts / slide) - Math.floor(b.ts / slide) || a.seq - b.seq);
    return `${k} ${end - size + 1}-${end + 1}: ${inside.map((e) => e.ts).join(",")}`;
  };
  const steps: string[][] = [];
  for (const [seq, op] of ops.entries()) {
    const out: string[] = [];
    if ("k" in op) {
      const pane = op.ts - (op.ts % slide);
      const lastEnd = pane + size - 1;
      if (lastEnd + lateness > watermark) {
        accepted.push({ ...op, seq });
        for (let end = pane + slide - 1; end <= lastEnd && end <= watermark; end += slide) {
          if (end + lateness > watermark) out.push(value(op.k, end)!);
        }
      }
    } else {
      const next = watermark === Number.NEGATIVE_INFINITY ? op.dw : op.dw === Infinity ? Infinity : watermark + op.dw;
      const due: { end: number; k: number; text: string }[] = [];
      const ends = new Set(accepted.flatMap((e) => Array.from({ length: size / slide }, (_, i) => e.ts - (e.ts % slide) + slide - 1 + i * slide)));
      for (const end of ends) {
        if (end <= watermark || end > next) continue;
        for (const k of new Set(accepted.map((e) => e.k))) {
          const text = value(k, end);
          if (text !== undefined) due.push({ end, k, text });
        }
      }
      due.sort((a, b) => a.end - b.end || a.k - b.k);
      out.push(...due.map((d) => d.text));
      watermark = next;
    }
    steps.push(out);
  }
  return steps;
}

const storeRoot = mkdtempSync(join(tmpdir(), "eddy-sliding-panes-"));
after(() => rmSync(storeRoot, { recursive: true, force: true }));
let stores = 0;
/** The disk backend with a cache of one key: every key switch evicts, so firings and sweeps read entries loaded again. */
const diskOneKey: KeyedStateBackendFactory = (options) => new DiskKeyedStateBackend({ ...options, storeDir: join(storeRoot, String(stores++)), cacheSize: 1 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ k: fc.integer({ min: 0, max: 2 }), ts: fc.integer({ min: 0, max: 300 }) }) },
  { weight: 1, arbitrary: fc.record({ dw: fc.integer({ min: 1, max: 90 }) }) },
);

for (const [size, lateness, backend] of [[30, 0, "heap"], [30, 25, "heap"], [60, 0, "heap"], [60, 25, "heap"], [30, 0, "disk"], [60, 25, "disk"]] as const) {
  test(`size ${size}, slide 10, allowed lateness ${lateness}, ${backend} backend: firings equal a replay of the rules, in end order across keys, whatever the bound on panes swept per advance`, () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 120 }), fc.constantFrom(undefined, 0, 4), (body, maxSweptPanes) => {
        const ops: Op[] = [...body, { dw: Infinity }];
        const h = new OperatorTestHarness<{ k: number; ts: number }, string>(
          slidingPaneOperator<{ k: number; ts: number }>({
            size,
            slide: 10,
            offset: 0,
            description: `SlidingEventTimeWindows(${size}, 10)`,
            allowedLateness: lateness,
            lateDataTag: undefined,
            panes: {
              create: (e) => [e.ts],
              add: (acc, e) => ((acc as number[]).push(e.ts), acc),
              merge: (a, b) => ((a as number[]).push(...(b as number[])), a),
              result: (acc) => (acc as number[]).join(","),
            },
            windowFunction: (key, w, [v], out) => out.collect(`${String(key)} ${w.start}-${w.end}: ${String(v)}`),
            maxSweptPanes,
          }),
          (e) => e.k,
          backend === "disk" ? { stateBackend: diskOneKey } : undefined,
        ).open();
        const expected = replay(ops, size, 10, lateness);
        let watermark = Number.NEGATIVE_INFINITY;
        for (const [i, op] of ops.entries()) {
          const before = h.records().length;
          if ("k" in op) h.processElement(op, op.ts);
          else h.processWatermark((watermark = watermark === Number.NEGATIVE_INFINITY ? op.dw : watermark + op.dw));
          const got = h.records().slice(before);
          if ("k" in op) {
            assert.deepEqual(got, expected[i], `element ${i}`);
          } else {
            const ends = got.map((r) => Number(/-(\d+):/.exec(r)![1]));
            assert.deepEqual(ends, [...ends].sort((a, b) => a - b), `watermark ${i}: windows fire in end order`);
            const byEndAndKey = (a: string, b: string): number => Number(/-(\d+):/.exec(a)![1]) - Number(/-(\d+):/.exec(b)![1]) || a.localeCompare(b);
            assert.deepEqual([...got].sort(byEndAndKey), expected[i], `watermark ${i}`);
          }
        }
        assert.deepEqual(sizeOf(h as never), { keys: 0, timers: 0 });
        h.close();
      }),
      { numRuns: backend === "disk" ? 40 : 150 },
    );
  });
}
