/**
 * PaneSweep against a recomputation: every window of a forward sweep is the merge of its panes in
 * pane order (checked with a merge that is associative but not commutative, and that mutates its
 * first argument), stored panes never change, and no window's value is shared with the sweep.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ManualClock } from "../../core/clock.ts";
import { assignToKeyGroup } from "../../core/key-group.ts";
import { ValueStateDescriptor } from "../../state/descriptors.ts";
import { HeapKeyedStateBackend } from "../../state/heap-keyed-state-backend.ts";
import { FIRST_PANE, LATER_PANES, PaneSweep } from "./pane-sweep.ts";

const MAX_PARALLELISM = 128;
const BASE = 1_700_000_000; // pane numbers, as the operator has them (epoch-ms starts ÷ a 1 s slide)

/** Concatenation into the first argument: associative, not commutative, mutating. */
const concat = (a: unknown, b: unknown): unknown => {
  (a as number[]).push(...(b as number[]));
  return a;
};

function panesOf(made: readonly number[]) {
  const backend = new HeapKeyedStateBackend({ keyGroupRange: { start: 0, end: MAX_PARALLELISM - 1 }, clock: new ManualClock(0) });
  const state = backend.getState(new ValueStateDescriptor<unknown>("window-pane-numbers", { copy: "none" }));
  backend.setCurrentKey("k", assignToKeyGroup("k", MAX_PARALLELISM));
  for (const i of made) {
    state.setCurrentNamespace(BASE + i);
    state.update([i, i + 0.5]); // a pane of two elements
  }
  return state;
}

test("a forward sweep gives each window the merge of its panes in order, with the panes it found, and leaves stored panes and its own merges untouched", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.integer({ min: 0, max: 80 }), { maxLength: 60 }), // pane indexes, in the order made
      fc.integer({ min: 1, max: 12 }), // panes per window
      fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 40 }), // how far each window moves on
      fc.integer({ min: -15, max: 40 }), // the first window's first pane
      (made, width, steps, first) => {
        const state = panesOf(made);
        const stored = new Map(made.map((i) => [i, [i, i + 0.5]]));
        const last = first + steps.reduce((a, b) => a + b, 0) + width - 1;
        const sweep = new PaneSweep(concat).load(state, BASE + first, BASE + last);
        assert.equal(sweep.count, made.filter((i) => i >= first && i <= last).length);
        let from = first;
        for (const step of steps) {
          from += step;
          const to = from + width - 1;
          const found = sweep.moveTo(BASE + from, BASE + to);
          const panes = made.filter((i) => i >= from && i <= to).sort((a, b) => a - b);
          const expectFound = (panes.includes(from) ? FIRST_PANE : 0) | (panes.some((i) => i !== from) ? LATER_PANES : 0);
          assert.equal(found, expectFound, `window [${from}, ${to}]`);
          const merged = sweep.merged();
          assert.deepEqual(merged, panes.length === 0 ? undefined : panes.flatMap((i) => [i, i + 0.5]), `window [${from}, ${to}]`);
          if (merged !== undefined) (merged as number[]).push(-1); // what the user does with a window's value is no business of the sweep's
          if (to < last) assert.equal(sweep.holds(BASE + (to + 1)), made.includes(to + 1), `holds pane ${to + 1}`);
        }
        for (const i of made) {
          state.setCurrentNamespace(BASE + i);
          assert.deepEqual(state.value(), stored.get(i), `stored pane ${i}`);
        }
      },
    ),
    { numRuns: 400 },
  );
});

test("a window of many panes costs a few merges, not one per pane", () => {
  const PANES = 60;
  const state = panesOf(Array.from({ length: 400 }, (_, i) => i));
  let merges = 0;
  const sweep = new PaneSweep((a, b) => {
    merges++;
    return concat(a, b);
  }).load(state, BASE, BASE + 399);
  const windows = 400 - PANES + 1;
  for (let i = 0; i < windows; i++) {
    sweep.moveTo(BASE + i, BASE + (i + PANES - 1));
    sweep.merged();
  }
  // Two stacks: each pane enters the back once and moves to the front once, plus one merge per window.
  assert.ok(merges <= 3 * windows + 2 * PANES, `${merges} merges for ${windows} windows of ${PANES} panes`);
});

test("a sweep refuses to move back or past what it loaded, and keeps nothing once emptied", () => {
  const state = panesOf([0, 1, 2, 3]);
  const sweep = new PaneSweep(concat).load(state, BASE, BASE + 3);
  sweep.moveTo(BASE + 1, BASE + 2);
  assert.throws(() => sweep.moveTo(BASE, BASE + 1), /moved back/);
  assert.throws(() => sweep.moveTo(BASE + 2, BASE + 4), /past what it loaded/);
  assert.equal(sweep.covers(BASE + 3), true);
  sweep.empty();
  assert.equal(sweep.count, 0);
  assert.equal(sweep.covers(BASE), false);
});
