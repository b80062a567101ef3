import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Key } from "../core/key.ts";
import { mapKeyOf } from "../core/key.ts";
import { BUCKET_SCAN, TimerQueue, type Timer, type TimerNamespace } from "./timer-queue.ts";

const drain = (queue: TimerQueue): string[] => {
  const out: string[] = [];
  for (let t = queue.poll(); t !== undefined; t = queue.poll()) out.push(`${String(t.namespace)}@${t.timestamp}`);
  return out;
};

const listed = (queue: TimerQueue, kgIndex: number): string[] =>
  [...queue.ofGroup(kgIndex)].map((t: Timer) => `${String(t.namespace)}@${t.timestamp}`).sort();

test("one key's timers stay deduplicated over many timestamps, removed down to a few and registered again", () => {
  const queue = new TimerQueue();
  const key = "k";
  const n = 3 * BUCKET_SCAN;
  const all: [TimerNamespace, number][] = [];
  for (let i = 0; i < n; i++) all.push([i % 2 === 0 ? "w" : 7, 100 - i]);
  for (const [ns, ts] of all) assert.notEqual(queue.add(key, 1, 1, ns, ts), undefined);
  for (const [ns, ts] of all) assert.equal(queue.add(key, 1, 1, ns, ts), undefined, `${ns}@${ts} is a duplicate`);
  assert.equal(queue.size, n);
  assert.equal(listed(queue, 1).length, n);
  // Down to a few timers (the index goes back to an array), then everything again.
  for (const [ns, ts] of all.slice(3)) queue.take(mapKeyOf(key), 1, ns, ts);
  assert.equal(queue.size, 3);
  assert.deepEqual(listed(queue, 1), ["7@99", "w@100", "w@98"]);
  let added = 0;
  for (const [ns, ts] of all) if (queue.add(key, 1, 1, ns, ts) !== undefined) added++;
  assert.equal(added, n - 3);
  assert.equal(queue.size, n);
  // Each removal down to nothing finds its timer, in every shape.
  for (const [ns, ts] of all) queue.take(mapKeyOf(key), 1, ns, ts);
  assert.equal(queue.size, 0);
  assert.deepEqual(listed(queue, 1), []);
  assert.equal(queue.add(key, 1, 1, "w", 100) !== undefined, true, "a removed timer can be registered again");
});

test("timers of one key with equal timestamps fire in registration order, whether the bucket is scanned or indexed", () => {
  for (const count of [1, 2, BUCKET_SCAN, BUCKET_SCAN + 1, 4 * BUCKET_SCAN]) {
    const queue = new TimerQueue();
    const expected: string[] = [];
    for (let i = 0; i < count; i++) {
      queue.add("k", 0, 0, `ns${(i * 7) % count}`, 50);
      expected.push(`ns${(i * 7) % count}@50`);
    }
    queue.add("k", 0, 0, "early", 10);
    assert.deepEqual(drain(queue), ["early@10", ...expected], `${count} timers`);
  }
});

test("a repeated registration is a duplicate only while the timer is pending", () => {
  const queue = new TimerQueue();
  const key: Key = ["a", 1];
  assert.notEqual(queue.add(key, 0, 0, "w", 5), undefined);
  assert.equal(queue.add(key, 0, 0, "w", 5), undefined);
  queue.take(mapKeyOf(key), 0, "w", 5);
  assert.notEqual(queue.add(key, 0, 0, "w", 5), undefined, "deleted, then registered again");
  assert.equal(queue.poll()?.timestamp, 5);
  assert.notEqual(queue.add(key, 0, 0, "w", 5), undefined, "fired, then registered again");
  assert.equal(queue.size, 1);
});

test("the last-registration shortcut compares key, key group, namespace and timestamp by value", () => {
  const queue = new TimerQueue();
  queue.add(["a", 1], 0, 0, "w", 5);
  assert.equal(queue.add(["a", 1], 0, 0, "w", 5), undefined, "an equal composite key in another array");
  assert.notEqual(queue.add("a", 0, 0, "w", 5), undefined, "another key");
  assert.notEqual(queue.add("a", 0, 0, 0, 5), undefined, "another namespace");
  assert.equal(queue.add("a", 0, 0, "0", 5) !== undefined, true, "0 and '0' are different namespaces");
  assert.notEqual(queue.add("a", 0, 0, 0, 6), undefined, "another timestamp");
  assert.notEqual(queue.add("a", 1, 1, 0, 6), undefined, "the same key in another key group index is another entry");
  assert.equal(queue.add("a", 0, 0, 0, 6), undefined);
  queue.add("z", 0, 0, "", 0);
  assert.equal(queue.add("z", 0, 0, "", -0), undefined, "0 and -0 are the same time, as for a Map");
  assert.equal(queue.size, 7);
});

for (const [minTs, maxTs] of [[-5, 60], [0, 3]] as const) {
test(`any interleaving of registrations, deletions and firings matches a sorted list of the live timers (timestamps ${minTs}..${maxTs})`, () => {
  interface Live {
    readonly key: string;
    readonly kg: number;
    readonly ns: TimerNamespace;
    readonly ts: number;
    readonly order: number;
  }
  const op = fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant("add" as const), key: fc.integer({ min: 0, max: 12 }), kg: fc.integer({ min: 0, max: 3 }), ns: fc.constantFrom<TimerNamespace>("w", "x", 1), ts: fc.integer({ min: minTs, max: maxTs }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("remove" as const), key: fc.integer({ min: 0, max: 12 }), kg: fc.integer({ min: 0, max: 3 }), ns: fc.constantFrom<TimerNamespace>("w", "x", 1), ts: fc.integer({ min: minTs, max: maxTs }) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("removeLive" as const), pick: fc.nat() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("poll" as const) }) },
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 600, size: "large" }), (ops) => {
      const queue = new TimerQueue();
      let live: Live[] = [];
      let order = 0;
      const earliest = (): Live | undefined => live.reduce<Live | undefined>((m, t) => (m === undefined || t.ts < m.ts || (t.ts === m.ts && t.order < m.order) ? t : m), undefined);
      const same = (t: Live, o: { key: number; kg: number; ns: TimerNamespace; ts: number }) => t.key === `k${o.key}` && t.kg === o.kg && t.ns === o.ns && t.ts === o.ts;
      for (const o of ops) {
        if (o.kind === "add") {
          const exists = live.some((t) => same(t, o));
          const added = queue.add(`k${o.key}`, o.kg, o.kg, o.ns, o.ts);
          assert.equal(added !== undefined, !exists);
          if (!exists) live.push({ key: `k${o.key}`, kg: o.kg, ns: o.ns, ts: o.ts, order: order++ });
        } else if (o.kind === "removeLive") {
          // A live timer anywhere in the heap: its slot is refilled from the heap's end.
          if (live.length === 0) continue;
          const victim = live[o.pick % live.length]!;
          const head = earliest();
          const before = queue.peek();
          const taken = queue.take(mapKeyOf(victim.key), victim.kg, victim.ns, victim.ts);
          assert.equal(taken?.key, victim.key);
          assert.equal(taken === before, victim === head);
          live = live.filter((t) => t !== victim);
        } else if (o.kind === "remove") {
          const head = earliest();
          const before = queue.peek();
          const taken = queue.take(mapKeyOf(`k${o.key}`), o.kg, o.ns, o.ts);
          assert.equal(taken !== undefined, live.some((t) => same(t, o)));
          assert.equal(taken !== undefined && taken === before, head !== undefined && same(head, o));
          live = live.filter((t) => !same(t, o));
        } else {
          const expected = earliest();
          const fired = queue.poll();
          assert.equal(fired === undefined, expected === undefined);
          if (expected !== undefined) {
            assert.deepEqual([fired!.key, fired!.kgIndex, fired!.namespace, fired!.timestamp], [expected.key, expected.kg, expected.ns, expected.ts]);
            live = live.filter((t) => t !== expected);
          }
        }
        assert.equal(queue.size, live.length);
        const head = earliest();
        const peeked = queue.peek();
        assert.deepEqual(peeked === undefined ? undefined : [peeked.key, peeked.namespace, peeked.timestamp], head === undefined ? undefined : [head.key, head.ns, head.ts]);
      }
      assert.deepEqual(drain(queue), [...live].sort((a, b) => a.ts - b.ts || a.order - b.order).map((t) => `${String(t.ns)}@${t.ts}`));
    }),
    { numRuns: 300 },
  );
});
}

test("a deleted timer's slot refilled with a timer earlier than that slot's parent moves it up", () => {
  // Registered in this order, the timers sit in heap slots 0..21 in order (each is later than its
  // parent, (i - 1) >> 2). The last one, 11.5 in slot 21, is a child of slot 5 (11). Deleting 21
  // (slot 9, child of slot 2: 20) moves 11.5 into slot 9, below 20: it must rise above it.
  const order = [0, 10, 20, 30, 40, 11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34, 41, 42, 43, 44, 11.5];
  const queue = new TimerQueue();
  for (const ts of order) queue.add(`k${ts}`, 0, 0, "w", ts);
  queue.take(mapKeyOf("k21"), 0, "w", 21);
  assert.deepEqual(
    drain(queue).map((s) => Number(s.slice(2))),
    order.filter((ts) => ts !== 21).sort((a, b) => a - b),
  );
});

test("a bucket of many keys deduplicates, deletes and fires in registration order while it grows past the scan size and shrinks", () => {
  for (const count of [BUCKET_SCAN, BUCKET_SCAN + 1, 50 * BUCKET_SCAN]) {
    const queue = new TimerQueue();
    // Keys k0..k(count-1) at one timestamp, two namespaces each, interleaved with another time.
    for (let i = 0; i < count; i++) {
      assert.notEqual(queue.add(`k${i}`, i % 4, i % 4, "w", 1000), undefined);
      assert.notEqual(queue.add(i, i % 4, i % 4, "w", 1000), undefined, "a number key is another key than its string");
      queue.add(`k${i}`, i % 4, i % 4, "w", 2000);
    }
    for (let i = 0; i < count; i++) {
      assert.equal(queue.add(`k${i}`, i % 4, i % 4, "w", 1000), undefined, `k${i} is a duplicate`);
      assert.notEqual(queue.add(`k${i}`, i % 4, i % 4, "v", 1000), undefined, "another namespace");
    }
    assert.equal(queue.size, 4 * count);
    // The same key in another key group index is another timer (and is deleted on its own).
    assert.notEqual(queue.add("k1", 3, 3, "w", 1000), undefined);
    assert.notEqual(queue.add("k1", 2, 2, "v", 1000), undefined);
    assert.equal(queue.add("k1", 3, 3, "w", 1000), undefined);
    assert.equal(queue.take(mapKeyOf("k1"), 3, "w", 1000)?.kgIndex, 3);
    assert.equal(queue.take(mapKeyOf("k1"), 2, "v", 1000)?.namespace, "v");
    assert.equal(queue.take(mapKeyOf("k1"), 3, "w", 1000), undefined, "already gone");
    // Delete every second key's "w" timer at 1000, then register a few again: they go last.
    for (let i = 0; i < count; i += 2) {
      const before = queue.peek();
      assert.equal(queue.take(mapKeyOf(`k${i}`), i % 4, "w", 1000) === before, i === 0);
    }
    queue.add("k0", 0, 0, "w", 1000);
    const fired: string[] = [];
    for (let t = queue.poll(); t !== undefined && t.timestamp === 1000; t = queue.poll()) fired.push(`${String(t.key)}/${String(t.namespace)}`);
    const expected: string[] = [];
    for (let i = 0; i < count; i++) {
      if (i % 2 === 1) expected.push(`k${i}/w`);
      expected.push(`${i}/w`);
    }
    for (let i = 0; i < count; i++) expected.push(`k${i}/v`);
    expected.push("k0/w");
    assert.deepEqual(fired, expected, `${count} keys`);
    assert.equal(queue.size, count - 1, "the 2000 timers but the one polled to end the loop");
  }
});

test("a registration at the timestamp of a bucket that fired (or was emptied by deletes) goes into a new bucket in the queue", () => {
  const queue = new TimerQueue();
  queue.add("a", 0, 0, "w", 5);
  assert.equal(queue.poll()?.key, "a", "the bucket of 5 leaves the queue");
  assert.notEqual(queue.add("b", 0, 0, "w", 5), undefined);
  queue.add("c", 0, 0, "w", 7);
  queue.take(mapKeyOf("c"), 0, "w", 7);
  assert.notEqual(queue.add("d", 0, 0, "w", 7), undefined);
  assert.deepEqual(drain(queue), ["w@5", "w@7"]);
  assert.equal(queue.size, 0);
});
