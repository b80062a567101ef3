/**
 * The disk backend's cache bound in bytes (`state.backend.disk.cache-bytes`): the estimate of
 * each cached entry (state/size-estimate.ts) follows the writes, the cache evicts when the
 * estimate is over the bound however few keys it holds, and a value larger than the whole bound
 * still works.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ManualClock } from "../core/clock.ts";
import { ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, ValueStateDescriptor } from "./descriptors.ts";
import { DiskKeyedStateBackend } from "./disk-keyed-state-backend.ts";
import { sizeOf } from "./size-estimate.ts";

const root = mkdtempSync(join(tmpdir(), "eddy-disk-bytes-test-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const RANGE = { start: 0, end: 3 };
const kgOf = (i: number): number => i % 4;
const make = (cacheBytes: number, cacheSize = 1_000_000): DiskKeyedStateBackend =>
  new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0), storeDir: join(root, `b${n++}`), cacheSize, cacheBytes });

const text = new ValueStateDescriptor<string>("text");
const items = new ListStateDescriptor<string>("items");
const fields = new MapStateDescriptor<string, string>("fields");

test("disk cache bytes: a few large values are evicted by bytes although the key count is far from its bound; every value survives", () => {
  const b = make(64 * 1024);
  const big = (i: number): string => `${i}:`.padEnd(10_000, "x");
  for (let i = 0; i < 40; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(text).update(big(i));
    assert.ok(b.cachedBytes <= 64 * 1024 + 11_000, `estimate ${b.cachedBytes} past the bound by more than the key just written`);
  }
  assert.ok(b.cachedKeys < 10, `${b.cachedKeys} keys of ~10 KB cached in 64 KiB`);
  for (let i = 0; i < 40; i++) {
    b.setCurrentKey(i, kgOf(i));
    assert.equal(b.getState(text).value(), big(i));
  }
  b.dispose();
});

test("disk cache bytes: appending to a list and putting into a map grow the estimate as they go, and the growth evicts other keys", () => {
  const b = make(256 * 1024);
  for (let i = 1; i <= 20; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(text).update(`small-${i}`);
  }
  assert.equal(b.cachedKeys, 20);
  b.setCurrentKey(0, kgOf(0));
  const list = b.getListState(items);
  const map = b.getMapState(fields);
  let before = b.cachedBytes;
  for (let j = 0; j < 1_000; j++) {
    list.add(`element-${j}`.padEnd(100, "."));
    map.put(`field-${j}`, `value-${j}`.padEnd(100, "."));
    assert.ok(b.cachedBytes >= before + 200, `append ${j}: estimate ${b.cachedBytes} did not grow by the ~200 bytes written (was ${before})`);
    before = b.cachedBytes;
  }
  assert.ok(b.cachedBytes > 200_000, `${b.cachedBytes}`);
  // The next use of a key finds the cache over its bound: the other keys go, the big one (in use) stays.
  b.setCurrentKey(0, kgOf(0));
  assert.ok(b.cachedBytes > 256 * 1024, "the one key in use is over the bound by itself");
  assert.ok(b.cachedKeys <= 2, `${b.cachedKeys} keys left`);
  assert.equal(b.isCached(0), true);
  for (let i = 1; i <= 20; i++) {
    b.setCurrentKey(i, kgOf(i));
    assert.equal(b.getState(text).value(), `small-${i}`);
  }
  b.setCurrentKey(0, kgOf(0));
  assert.equal(b.getListState(items).get().length, 1_000);
  assert.equal([...b.getMapState(fields).keys()].length, 1_000);
  b.dispose();
});

test("disk cache bytes: a value larger than the whole bound works, and the estimate is back at 0 once every key is cleared", () => {
  const b = make(1_000);
  const huge = "h".repeat(100_000);
  b.setCurrentKey(0, kgOf(0));
  b.getState(text).update(huge);
  assert.equal(b.getState(text).value(), huge);
  for (let i = 1; i < 50; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(text).update(`v${i}`);
    b.getListState(items).add(`e${i}`);
  }
  for (let i = 0; i < 50; i++) {
    b.setCurrentKey(i, kgOf(i));
    assert.equal(b.getState(text).value(), i === 0 ? huge : `v${i}`);
    if (i > 0) assert.deepEqual(b.getListState(items).get(), [`e${i}`]);
  }
  // Values shrinking, then keys going: the estimate follows down to nothing.
  b.setCurrentKey(0, kgOf(0));
  assert.equal(b.getState(text).value(), huge); // loaded again: its estimate is the cache's
  const withHuge = b.cachedBytes;
  b.getState(text).update("small again");
  assert.ok(b.cachedBytes < withHuge - 90_000, `replacing 100 KB by a short string: ${withHuge} → ${b.cachedBytes}`);
  for (let i = 0; i < 50; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(text).clear();
    b.getListState(items).clear();
  }
  assert.equal(b.cachedBytes, 0);
  b.dispose();
});

test("disk cache bytes: what writes of every kind add, clearing takes back exactly (cached, and after the keys went to the store and came back)", () => {
  const sum = new ReducingStateDescriptor<string>("sum", (x, y) => `${x}${y}`);
  const b = make(1 << 30);
  const writeAll = (i: number): void => {
    b.setCurrentKey(i, kgOf(i));
    b.getState(text).update(`first-${i}`.repeat(1 + (i % 5)));
    b.getState(text).update(`second-${i}`); // replaced by a smaller one
    const l = b.getListState(items);
    for (let j = 0; j <= i % 7; j++) l.add(`e${j}`.repeat(j + 1));
    const m = b.getMapState(fields);
    for (let j = 0; j <= i % 4; j++) m.put(`k${j}`, `v${j}`.repeat(i % 9));
    m.put("k0", "replaced");
    if (i % 4 > 0) m.remove("k1");
    const r = b.getReducingState(sum);
    for (const w of ["w1", "w2"]) {
      r.setCurrentNamespace(w);
      r.add(`${w}:${i}`);
      r.add("+more");
    }
  };
  const clearAll = (i: number): void => {
    b.setCurrentKey(i, kgOf(i));
    b.getState(text).clear();
    b.getListState(items).clear();
    b.getMapState(fields).clear();
    const r = b.getReducingState(sum);
    for (const w of ["w1", "w2"]) {
      r.setCurrentNamespace(w);
      r.clear();
    }
  };
  for (let i = 0; i < 30; i++) writeAll(i);
  assert.ok(b.cachedBytes > 30 * 240);
  for (let i = 0; i < 30; i++) clearAll(i);
  assert.equal(b.cachedBytes, 0, "cleared while cached");
  // Written out and loaded back (the estimate then starts from the loaded values).
  const small = make(1 << 30, 2);
  for (let i = 0; i < 30; i++) {
    small.setCurrentKey(i, kgOf(i));
    small.getState(text).update(`v-${i}`.repeat(i));
    small.getListState(items).add(`e-${i}`);
  }
  for (let i = 0; i < 30; i++) {
    small.setCurrentKey(i, kgOf(i));
    assert.equal(small.getState(text).value(), `v-${i}`.repeat(i));
    small.getState(text).update("short");
    small.getListState(items).add("more");
    small.getState(text).clear();
    small.getListState(items).clear();
  }
  assert.equal(small.cachedBytes, 0, "cleared after a round trip through the store");
  b.dispose();
  small.dispose();
});

test("disk cache bytes: clearing one window of a key takes back exactly what its writes added (the key's other window stays counted as before)", () => {
  const windowItems = new ListStateDescriptor<string>("window-items");
  const windowFields = new MapStateDescriptor<string, string>("window-fields");
  const fill = (b: DiskKeyedStateBackend, namespace: string, n: number): void => {
    const l = b.getListState(windowItems);
    const m = b.getMapState(windowFields);
    l.setCurrentNamespace(namespace);
    m.setCurrentNamespace(namespace);
    for (let j = 0; j < n; j++) l.add("e".repeat((j * 37) % 50)); // lengths a sample of 8 would not average right
    for (let j = 0; j < n; j++) m.put(`k${j}`, "v".repeat((j * 13) % 40));
    for (let j = 0; j < n; j += 3) m.remove(`k${j}`);
    m.put("k1", "replaced");
  };
  const only = make(1 << 30);
  only.setCurrentKey(0, kgOf(0));
  fill(only, "w2", 5);
  const both = make(1 << 30);
  both.setCurrentKey(0, kgOf(0));
  fill(both, "w1", 40);
  fill(both, "w2", 5);
  assert.ok(both.cachedBytes > only.cachedBytes + 2_000);
  for (const s of [both.getListState(windowItems), both.getMapState(windowFields)]) {
    s.setCurrentNamespace("w1");
    s.clear();
  }
  assert.equal(both.cachedBytes, only.cachedBytes);
  only.dispose();
  both.dispose();
});

test("size estimate: strings by length, objects by their fields, a large array by a sample (fast)", () => {
  assert.ok(sizeOf("x".repeat(1_000)) >= 1_000);
  assert.ok(sizeOf({ a: "x".repeat(500), b: "y".repeat(500) }) >= 1_000);
  const big = Array.from({ length: 1_000_000 }, (_, i) => `element-${i % 10}`.padEnd(40, "."));
  const started = performance.now();
  const estimate = sizeOf(big);
  assert.ok(performance.now() - started < 5, "a sample, not a walk of every element");
  assert.ok(estimate > 40 * 1_000_000 && estimate < 120 * 1_000_000, `${estimate}`);
  assert.ok(sizeOf(new Map([["k", "v".repeat(1_000)]])) >= 1_000);
});
