import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { EddyError } from "../core/errors.ts";
import { type AlignerResult, BarrierAligner, type CheckpointingMode, NO_ALIGNER_ACTION } from "./barrier-aligner.ts";

// ---------------------------------------------------------------------------------------------
// Unit tests, one rule each
// ---------------------------------------------------------------------------------------------

function r(triggered: number[] = [], aborted: number[] = [], unblocked: number[] = []): AlignerResult {
  return { triggered, aborted, unblocked };
}

test("with one channel a barrier triggers at once", () => {
  for (const mode of ["exactly-once", "at-least-once"] as const) {
    const a = new BarrierAligner(1, mode);
    assert.deepEqual(a.onBarrier(0, 1), r([1]));
    assert.equal(a.isBlocked(0), false);
    assert.equal(a.pendingCheckpoint, undefined);
    assert.deepEqual(a.onBarrier(0, 4), r([4]), "ids may skip");
  }
});

test("exactly-once: blocks each channel that delivered n and triggers when all did, unblocking all", () => {
  const a = new BarrierAligner(3, "exactly-once");
  assert.equal(a.onBarrier(1, 1), NO_ALIGNER_ACTION, "nothing happens: the shared empty result");
  assert.equal(a.isBlocked(1), true);
  assert.equal(a.pendingCheckpoint, 1);
  assert.equal(a.onBarrier(0, 1), NO_ALIGNER_ACTION);
  assert.deepEqual([a.isBlocked(0), a.isBlocked(1), a.isBlocked(2)], [true, true, false]);
  assert.deepEqual(a.onBarrier(2, 1), r([1], [], [0, 1]));
  assert.deepEqual([a.isBlocked(0), a.isBlocked(1), a.isBlocked(2)], [false, false, false]);
  assert.equal(a.pendingCheckpoint, undefined);
});

test("exactly-once: a newer barrier aborts the aligning checkpoint and starts the newer one", () => {
  const a = new BarrierAligner(3, "exactly-once");
  a.onBarrier(0, 1);
  a.onBarrier(1, 1);
  assert.deepEqual(a.onBarrier(2, 3), r([], [1], [0, 1]), "channel 2 skipped 1: decline 1, read 0 and 1 again");
  assert.equal(a.pendingCheckpoint, 3);
  assert.deepEqual([a.isBlocked(0), a.isBlocked(1), a.isBlocked(2)], [false, false, true]);
  assert.equal(a.onBarrier(0, 3), NO_ALIGNER_ACTION);
  assert.deepEqual(a.onBarrier(1, 3), r([3], [], [0, 2]));
});

test("a barrier older than the newest seen, or of an aborted checkpoint, is ignored", () => {
  const a = new BarrierAligner(2, "exactly-once");
  a.onBarrier(0, 2);
  assert.equal(a.onBarrier(1, 1), NO_ALIGNER_ACTION, "1 is older than 2 and never started");
  assert.equal(a.isBlocked(1), false);
  assert.deepEqual(a.onBarrier(1, 2), r([2], [], [0]));

  const b = new BarrierAligner(2, "exactly-once");
  assert.equal(b.abort(5), NO_ALIGNER_ACTION, "aborted before its first barrier");
  assert.equal(b.onBarrier(0, 5), NO_ALIGNER_ACTION);
  assert.equal(b.isBlocked(0), false);
  assert.equal(b.onBarrier(1, 5), NO_ALIGNER_ACTION);
  assert.equal(b.pendingCheckpoint, undefined);
  assert.deepEqual(b.onBarrier(1, 6), NO_ALIGNER_ACTION);
  assert.deepEqual(b.onBarrier(0, 6), r([6], [], [1]));
});

test("abort of the aligning checkpoint unblocks its channels and is not reported back", () => {
  const a = new BarrierAligner(3, "exactly-once");
  a.onBarrier(0, 1);
  a.onBarrier(2, 1);
  assert.deepEqual(a.abort(1), r([], [], [0, 2]));
  assert.equal(a.pendingCheckpoint, undefined);
  assert.equal(a.abort(1), NO_ALIGNER_ACTION, "idempotent");
  assert.equal(a.onBarrier(1, 1), NO_ALIGNER_ACTION, "a late barrier of the aborted checkpoint is ignored");
});

test("a channel that ends while aligning counts as aligned; an ended channel never blocks", () => {
  const a = new BarrierAligner(3, "exactly-once");
  a.onBarrier(0, 1);
  a.onBarrier(1, 1);
  assert.deepEqual(a.onEndOfInput(2), r([1], [], [0, 1]));
  assert.equal(a.isBlocked(2), false);
  assert.equal(a.onBarrier(1, 2), NO_ALIGNER_ACTION);
  assert.deepEqual(a.onEndOfInput(0), r([2], [], [1]), "channel 0 ends: every open channel has delivered 2");
  assert.equal(a.isBlocked(1), false);
});

test("at-least-once: never blocks and triggers when every open channel delivered n", () => {
  const a = new BarrierAligner(2, "at-least-once");
  assert.equal(a.onBarrier(0, 1), NO_ALIGNER_ACTION);
  assert.equal(a.isBlocked(0), false);
  assert.equal(a.onBarrier(0, 2), NO_ALIGNER_ACTION, "channel 0 goes on to 2 while 1 is in flight on channel 1");
  assert.equal(a.pendingCheckpoint, 2);
  assert.deepEqual(a.onBarrier(1, 1), r([1]), "1 can still complete: channel 0 delivered it");
  assert.deepEqual(a.onBarrier(1, 2), r([2]));
});

test("at-least-once: a channel that skips n aborts n", () => {
  const a = new BarrierAligner(2, "at-least-once");
  a.onBarrier(0, 1);
  assert.deepEqual(a.onBarrier(1, 2), r([], [1]));
  assert.deepEqual(a.onBarrier(0, 2), r([2]));
});

test("at-least-once: an end-of-input completing several pending checkpoints triggers all, in order", () => {
  const a = new BarrierAligner(2, "at-least-once");
  a.onBarrier(0, 1);
  a.onBarrier(0, 2);
  assert.deepEqual(a.onEndOfInput(1), r([1, 2]));
});

test("protocol violations by the caller throw BARRIER_PROTOCOL_VIOLATION", () => {
  const isViolation = (e: unknown) => e instanceof EddyError && e.code === "BARRIER_PROTOCOL_VIOLATION";
  const a = new BarrierAligner(2, "exactly-once");
  a.onBarrier(0, 1);
  assert.throws(() => a.onBarrier(0, 2), isViolation, "read from a blocked channel");
  assert.throws(() => a.onEndOfInput(0), isViolation, "end read from a blocked channel");
  assert.throws(() => a.onBarrier(2, 1), isViolation, "channel out of range");
  a.onBarrier(1, 1);
  assert.throws(() => a.onBarrier(1, 1), isViolation, "ids must increase per channel");
  a.onEndOfInput(1);
  assert.throws(() => a.onEndOfInput(1), isViolation, "ended twice");
  assert.throws(() => new BarrierAligner(0, "exactly-once"), isViolation);
});

// ---------------------------------------------------------------------------------------------
// Reference model: the declarative rule, recomputed from a summary of the history
// ---------------------------------------------------------------------------------------------

type Event =
  | { readonly kind: "barrier"; readonly channel: number; readonly id: number }
  | { readonly kind: "end"; readonly channel: number }
  | { readonly kind: "abort"; readonly id: number };

/** Everything the rule depends on. Barrier ids increase per channel, so order within a channel is implied. */
interface RefState {
  readonly delivered: ReadonlySet<number>[];
  readonly ended: readonly boolean[];
  readonly coordinatorAborted: ReadonlySet<number>;
  readonly triggered: ReadonlySet<number>;
}

function initialRef(channels: number): RefState {
  return {
    delivered: Array.from({ length: channels }, () => new Set<number>()),
    ended: Array.from({ length: channels }, () => false),
    coordinatorAborted: new Set(),
    triggered: new Set(),
  };
}

function lastOf(s: ReadonlySet<number>): number {
  let last = Number.NEGATIVE_INFINITY;
  for (const n of s) if (n > last) last = n;
  return last;
}
/** Some channel delivered a newer barrier without delivering n: n cannot complete here. */
const skipped = (s: RefState, n: number) => s.delivered.some((d) => !d.has(n) && lastOf(d) > n);
/** Started, and may still trigger. */
function live(s: RefState, n: number): boolean {
  return liveIds(s).has(n);
}
const liveCache = new WeakMap<RefState, Set<number>>();
function liveIds(s: RefState): Set<number> {
  let ids = liveCache.get(s);
  if (ids === undefined) {
    const newestTriggered = lastOf(s.triggered);
    ids = new Set(allIds(s).filter((n) => !s.triggered.has(n) && !s.coordinatorAborted.has(n) && !skipped(s, n) && newestTriggered < n));
    liveCache.set(s, ids);
  }
  return ids;
}
const complete = (s: RefState, n: number) => s.delivered.every((d, c) => d.has(n) || s.ended[c]);

function blockedByRef(s: RefState, mode: CheckpointingMode, channel: number): number | undefined {
  if (mode !== "exactly-once" || s.ended[channel]) return undefined;
  for (const n of s.delivered[channel]!) if (live(s, n)) return n;
  return undefined;
}

function allIds(s: RefState): number[] {
  const ids = new Set<number>();
  for (const d of s.delivered) for (const n of d) ids.add(n);
  return [...ids].sort((a, b) => a - b);
}

/** Applies `event` to the reference; returns the new state and what the aligner must report. */
function refStep(s: RefState, mode: CheckpointingMode, event: Event): { next: RefState; expected: AlignerResult } {
  const delivered = s.delivered.map((d) => new Set(d));
  const ended = [...s.ended];
  const coordinatorAborted = new Set(s.coordinatorAborted);
  if (event.kind === "barrier") delivered[event.channel]!.add(event.id);
  else if (event.kind === "end") ended[event.channel] = true;
  else coordinatorAborted.add(event.id);
  const applied: RefState = { delivered, ended, coordinatorAborted, triggered: s.triggered };

  // Trigger every started checkpoint that is complete and not excluded by the rule.
  const now = allIds(applied).filter((n) => live(applied, n) && complete(applied, n));
  const next: RefState = { ...applied, triggered: new Set([...s.triggered, ...now]) };
  const aborted = allIds(s).filter((n) => live(s, n) && !live(next, n) && !now.includes(n) && !coordinatorAborted.has(n));
  const unblocked: number[] = [];
  for (let c = 0; c < ended.length; c++) {
    if (blockedByRef(s, mode, c) !== undefined && blockedByRef(next, mode, c) === undefined) unblocked.push(c);
  }
  return { next, expected: r(now, aborted, unblocked) };
}

function enabledEvents(s: RefState, mode: CheckpointingMode, maxId: number): Event[] {
  const events: Event[] = [];
  for (let c = 0; c < s.ended.length; c++) {
    if (s.ended[c] || blockedByRef(s, mode, c) !== undefined) continue;
    for (let id = Math.max(1, lastOf(s.delivered[c]!) + 1); id <= maxId; id++) events.push({ kind: "barrier", channel: c, id });
    events.push({ kind: "end", channel: c });
  }
  for (let id = 1; id <= maxId; id++) if (!s.coordinatorAborted.has(id)) events.push({ kind: "abort", id });
  return events;
}

function apply(a: BarrierAligner, e: Event): AlignerResult {
  if (e.kind === "barrier") return a.onBarrier(e.channel, e.id);
  if (e.kind === "end") return a.onEndOfInput(e.channel);
  return a.abort(e.id);
}

/**
 * Feeds `event` to both, and checks the aligner against the reference and the invariants.
 * Returns the reference state after the event.
 */
function checkStep(a: BarrierAligner, s: RefState, mode: CheckpointingMode, event: Event, path: readonly Event[]): RefState {
  const where = () => `${mode}, ${a.numChannels} channels, after ${JSON.stringify([...path, event])}`;
  const { next, expected } = refStep(s, mode, event);
  const got = apply(a, event);
  assert.deepEqual({ ...got }, { ...expected }, where());
  if (expected.triggered.length + expected.aborted.length + expected.unblocked.length === 0) {
    assert.equal(got, NO_ALIGNER_ACTION, `${where()}: nothing happened, so the shared empty result`);
  }
  // Invariants, stated directly (they also follow from agreeing with the reference).
  const before = lastOf(s.triggered);
  for (const n of got.triggered) {
    assert.ok(!s.triggered.has(n), `${where()}: ${n} triggered twice`);
    assert.ok(n > before, `${where()}: triggered ${n} after ${before}`);
  }
  for (const c of got.unblocked) {
    const by = blockedByRef(s, mode, c)!;
    assert.ok(got.triggered.includes(by) || got.aborted.includes(by) || (event.kind === "abort" && event.id === by), where());
  }
  for (let c = 0; c < a.numChannels; c++) {
    assert.equal(a.isBlocked(c), blockedByRef(next, mode, c) !== undefined, `${where()}: isBlocked(${c})`);
    if (mode === "at-least-once") assert.equal(a.isBlocked(c), false);
  }
  const pending = [...liveIds(next)];
  assert.equal(a.pendingCheckpoint, pending.at(-1), `${where()}: pendingCheckpoint`);
  if (mode === "exactly-once") assert.ok(pending.length <= 1, `${where()}: at most one pending in exactly-once`);
  return next;
}

// ---------------------------------------------------------------------------------------------
// Exhaustive: every reachable (state, event) pair for 1–3 channels and checkpoints 1–3
// ---------------------------------------------------------------------------------------------

function refKey(s: RefState): string {
  return JSON.stringify([s.delivered.map((d) => [...d].sort()), s.ended, [...s.coordinatorAborted].sort(), [...s.triggered].sort()]);
}

/** The aligner's own state, read in the test only, so that two paths meet only if both machines agree. */
function alignerKey(a: BarrierAligner): string {
  return JSON.stringify(a, (_k, v: unknown) => (v instanceof Float64Array || v instanceof Uint8Array ? [...v].map(String) : v));
}

/** A copy of the aligner to branch on (white-box: copies its own fields). */


for (const mode of ["exactly-once", "at-least-once"] as const) {
  test(`${mode}: agrees with the reference on every interleaving of barriers, ends and aborts (1–3 channels, ids 1–3)`, () => {
    // Both machines are deterministic, so a state reached twice (same reference state, same
    // aligner state) behaves the same from there: visiting each once covers every interleaving.
    let transitions = 0;
    let states = 0;
    for (let channels = 1; channels <= 3; channels++) {
      const seen = new Set<string>();
      const explore = (a: BarrierAligner, s: RefState, path: Event[]): void => {
        const key = refKey(s) + alignerKey(a);
        if (seen.has(key)) return;
        seen.add(key);
        for (const event of enabledEvents(s, mode, 3)) {
          const branch = a.clone();
          const next = checkStep(branch, s, mode, event, path);
          transitions++;
          path.push(event);
          explore(branch, next, path);
          path.pop();
        }
      };
      explore(new BarrierAligner(channels, mode), initialRef(channels), []);
      states += seen.size;
    }
    assert.ok(states > 40_000 && transitions > 100_000, `explored ${states} states, ${transitions} transitions`);
  });
}

// ---------------------------------------------------------------------------------------------
// Properties: random walks over larger task shapes
// ---------------------------------------------------------------------------------------------

for (const mode of ["exactly-once", "at-least-once"] as const) {
  test(`${mode}: agrees with the reference on random runs with up to 8 channels and 12 checkpoints`, () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 12 }), fc.array(fc.nat(), { maxLength: 120, size: "max" }), (channels, maxId, choices) => {
        const a = new BarrierAligner(channels, mode);
        let s = initialRef(channels);
        const path: Event[] = [];
        for (const choice of choices) {
          // Favour barriers over aborts so that checkpoints complete often.
          const events = enabledEvents(s, mode, maxId);
          const barriers = events.filter((e) => e.kind === "barrier");
          const pool = choice % 4 !== 0 && barriers.length > 0 ? barriers : events;
          if (pool.length === 0) break;
          const event = pool[Math.floor(choice / 4) % pool.length]!;
          s = checkStep(a, s, mode, event, path);
          path.push(event);
        }
      }),
      { numRuns: 300 },
    );
  });
}
