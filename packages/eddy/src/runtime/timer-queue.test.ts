import { test } from "node:test";
import assert from "node:assert/strict";
import type { Key } from "../core/key.ts";
import { mapKeyOf } from "../core/key.ts";
import { SMALL_KEY_TIMERS, TimerQueue, type Timer, type TimerNamespace } from "./timer-queue.ts";

const drain = (queue: TimerQueue): string[] => {
  const out: string[] = [];
  for (let t = queue.poll(); t !== undefined; t = queue.poll()) out.push(`${String(t.namespace)}@${t.timestamp}`);
  return out;
};

const listed = (queue: TimerQueue, kgIndex: number): string[] =>
  [...queue.ofGroup(kgIndex)].map((t: Timer) => `${String(t.namespace)}@${t.timestamp}`).sort();

test("one key's timers stay deduplicated while the key's index grows past the array size and shrinks back", () => {
  const queue = new TimerQueue(4);
  const key = "k";
  const n = 3 * SMALL_KEY_TIMERS;
  const all: [TimerNamespace, number][] = [];
  for (let i = 0; i < n; i++) all.push([i % 2 === 0 ? "w" : 7, 100 - i]);
  for (const [ns, ts] of all) assert.notEqual(queue.add(key, 1, 1, ns, ts), undefined);
  for (const [ns, ts] of all) assert.equal(queue.add(key, 1, 1, ns, ts), undefined, `${ns}@${ts} is a duplicate`);
  assert.equal(queue.size, n);
  assert.equal(listed(queue, 1).length, n);
  // Down to a few timers (the index goes back to an array), then everything again.
  for (const [ns, ts] of all.slice(3)) queue.remove(mapKeyOf(key), 1, ns, ts);
  assert.equal(queue.size, 3);
  assert.deepEqual(listed(queue, 1), ["7@99", "w@100", "w@98"]);
  let added = 0;
  for (const [ns, ts] of all) if (queue.add(key, 1, 1, ns, ts) !== undefined) added++;
  assert.equal(added, n - 3);
  assert.equal(queue.size, n);
  // Each removal down to nothing finds its timer, in every shape.
  for (const [ns, ts] of all) queue.remove(mapKeyOf(key), 1, ns, ts);
  assert.equal(queue.size, 0);
  assert.deepEqual(listed(queue, 1), []);
  assert.equal(queue.add(key, 1, 1, "w", 100) !== undefined, true, "a removed timer can be registered again");
});

test("timers of one key with equal timestamps fire in registration order, whatever the index shape", () => {
  for (const count of [1, 2, SMALL_KEY_TIMERS, SMALL_KEY_TIMERS + 1, 4 * SMALL_KEY_TIMERS]) {
    const queue = new TimerQueue(1);
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
  const queue = new TimerQueue(2);
  const key: Key = ["a", 1];
  assert.notEqual(queue.add(key, 0, 0, "w", 5), undefined);
  assert.equal(queue.add(key, 0, 0, "w", 5), undefined);
  queue.remove(mapKeyOf(key), 0, "w", 5);
  assert.notEqual(queue.add(key, 0, 0, "w", 5), undefined, "deleted, then registered again");
  assert.equal(queue.poll()?.timestamp, 5);
  assert.notEqual(queue.add(key, 0, 0, "w", 5), undefined, "fired, then registered again");
  assert.equal(queue.size, 1);
});

test("the last-registration shortcut compares key, key group, namespace and timestamp by value", () => {
  const queue = new TimerQueue(2);
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
