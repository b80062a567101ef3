/**
 * Incremental snapshots of the disk backend (issue 29) and of the heap backend
 * (`state.backend.heap.incremental`), read back through their chains: after random writes,
 * clears, evictions (disk), window state, TTL'd values and background TTL cleanup, every chain (a
 * base and the deltas after it) restores into the heap and the disk backend exactly what a full
 * snapshot taken at the same moment restores; a base comes every `maxChainLength` deltas and
 * after a failed snapshot; a delta of few changed keys is a small fraction of a base; a damaged
 * shared file is refused by name.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { ByteReader, ByteWriter } from "../../core/codec/bytes.ts";
import { ManualClock } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import { ListStateDescriptor, MapStateDescriptor, ReducingStateDescriptor, ValueStateDescriptor } from "../../state/descriptors.ts";
import { DiskKeyedStateBackend } from "../../state/disk-keyed-state-backend.ts";
import { HeapKeyedStateBackend } from "../../state/heap-keyed-state-backend.ts";
import type { HeapKeyedStateSnapshot } from "../../state/heap-snapshot.ts";
import type { SharedFileRef } from "../../state/incremental-snapshot.ts";
import type { KeyedStateMeta } from "../../state/keyed-state-meta.ts";
import { encodeSnapshotFile, SnapshotFile } from "./container.ts";
import { prng } from "../../../../../test/fixtures.ts";
import { chainKeyGroupCells, chainKeyGroupReader, SHARED_BASE_KIND, SHARED_DELTA_KIND, SHARED_KEYED_SECTION } from "./keyed-chain.ts";

const root = mkdtempSync(join(tmpdir(), "eddy-keyed-chain-"));
after(() => rmSync(root, { recursive: true, force: true }));
const RANGE = { start: 0, end: 7 };
const KEYS = 400;
const kgOf = (k: number): number => k % 8;

const value = new ValueStateDescriptor<{ n: number }>("value");
const list = new ListStateDescriptor<number>("list");
const map = new MapStateDescriptor<string, number>("map");
const windowSum = new ReducingStateDescriptor<number>("window", (a, b) => a + b);
const expiring = new ValueStateDescriptor<number>("expiring", { ttl: { ttlMs: 50 } });

/** The backends whose incremental snapshots are checked: the disk backend with a small cache, the heap backend. */
const BACKENDS = {
  disk: (name: string, clock: ManualClock, cacheSize: number, maxChainLength?: number): HeapKeyedStateBackend =>
    new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock, storeDir: join(root, name), cacheSize, incremental: true, maxChainLength }),
  heap: (_name: string, clock: ManualClock, _cacheSize: number, maxChainLength = 10): HeapKeyedStateBackend =>
    new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock, incrementalCheckpoints: { maxChainLength } }),
} as const;

const dispose = (b: HeapKeyedStateBackend): void => {
  if (b instanceof DiskKeyedStateBackend) b.dispose();
};

/** One random change to key `k` (value, list, map, windows, TTL'd value; writes and clears). */
function change(b: HeapKeyedStateBackend, k: number, r: number): void {
  b.setCurrentKey(k, kgOf(k));
  const op = Math.floor(r * 10);
  if (op === 0) b.getState(value).update({ n: Math.floor(r * 1_000_000) });
  else if (op === 1) b.getState(value).clear();
  else if (op === 2) b.getListState(list).add(k);
  else if (op === 3) b.getListState(list).clear();
  else if (op === 4) b.getMapState(map).put(`m${Math.floor(r * 7_000) % 5}`, k);
  else if (op === 5) b.getMapState(map).remove(`m${Math.floor(r * 7_000) % 5}`);
  else if (op === 6 || op === 7) {
    const s = b.getReducingState(windowSum);
    s.setCurrentNamespace(`w${Math.floor(r * 70) % 3}`);
    if (op === 6) s.add(1);
    else s.clear();
  } else if (op === 8) b.getState(expiring).update(k);
  else assert.equal(typeof b.getState(value).value(), typeof b.getState(value).value()); // a read only
}

/** The shared file a snapshot's incremental part writes, parsed back as restore reads it. */
function sharedFile(snapshot: HeapKeyedStateSnapshot, name: string): { file: SnapshotFile; bytes: number } {
  const shared = snapshot.shared!;
  const sections = [];
  for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
    const out = new ByteWriter();
    if (shared.writeKeyGroup(kg, out)) sections.push({ name: SHARED_KEYED_SECTION, keyGroup: kg, bytes: new Uint8Array(out.finish()) });
  }
  const bytes = encodeSnapshotFile(shared.kind === "base" ? SHARED_BASE_KIND : SHARED_DELTA_KIND, {}, sections);
  return { file: SnapshotFile.parse(bytes, { fileName: name }), bytes: bytes.length };
}

/** Every (state, key group) entry of a heap backend, in a canonical order. */
function contents(b: HeapKeyedStateBackend): string[] {
  const out: string[] = [];
  for (const name of b.stateNames()) {
    for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
      for (const e of b.entries(name, kg)) out.push(JSON.stringify([name, kg, e.key, e.namespace, e.value instanceof Map ? [...e.value] : e.value]));
    }
  }
  return out.sort();
}

function restoreFull(snapshot: HeapKeyedStateSnapshot, clock: ManualClock): HeapKeyedStateBackend {
  const heap = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock });
  for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
    if (!snapshot.hasKeyGroup(kg)) continue;
    const out = new ByteWriter();
    snapshot.writeKeyGroup(kg, out);
    heap.restoreKeyGroup(kg, new ByteReader(out.finish()), snapshot.states);
  }
  return heap;
}

function restoreChain(files: readonly SnapshotFile[], states: readonly KeyedStateMeta[], clock: ManualClock): HeapKeyedStateBackend {
  const heap = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock });
  const byName = new Map(states.map((s) => [s.name, s]));
  for (let kg = RANGE.start; kg <= RANGE.end; kg++) heap.restoreKeyGroup(kg, chainKeyGroupReader(files, kg, (name) => byName.get(name), undefined), states);
  return heap;
}

/** The chain's cells, decoded once (as a job's restore gives them), restored into a heap or a fresh disk backend. */
function restoreChainCells(files: readonly SnapshotFile[], states: readonly KeyedStateMeta[], clock: ManualClock, disk: string | undefined): HeapKeyedStateBackend {
  const b = disk === undefined ? new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock }) : new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock, storeDir: join(root, disk), cacheSize: 10 });
  const byName = new Map(states.map((s) => [s.name, s]));
  for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
    const cells = chainKeyGroupCells(files, kg, (name) => byName.get(name));
    if (cells !== undefined) b.restoreKeyGroupCells(kg, cells, states);
  }
  return b;
}

for (const [backend, create] of Object.entries(BACKENDS)) {
test(`incremental snapshots of the ${backend} backend: every chain restores what a full snapshot of the same moment restores; bases every maxChainLength deltas and after a failure`, () => {
  const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 1_000_000);
  const random = prng(seed);
  const clock = new ManualClock(0);
  const b = create(`random-${backend}`, clock, 25, 3);
  let files: SnapshotFile[] = [];
  let refs: SharedFileRef[] = [];
  const kinds: string[] = [];
  for (let round = 0; round < 14; round++) {
    const at = `seed ${seed}, round ${round}`;
    // A few keys change a lot, a few more a little: deltas see evicted, cached, removed and expired keys.
    const changes = round === 0 ? KEYS * 3 : 20 + Math.floor(random() * 120);
    for (let i = 0; i < changes; i++) change(b, round === 0 ? i % KEYS : Math.floor(random() * KEYS), random());
    clock.advance(Math.floor(random() * 30));
    // Expired keys of the TTL'd state removed in the background, between records.
    if (round % 3 === 2) b.cleanupExpired(Math.floor(random() * 100));
    if (round === 8) {
      // A snapshot that fails before its file is written: the next one must be a base.
      const failed = b.snapshot({ incremental: true });
      failed.release();
      kinds.push("failed");
      continue;
    }
    const incremental = b.snapshot({ incremental: true });
    const full = b.snapshot();
    // Writes after the snapshot are not in it.
    for (let i = 0; i < 30; i++) change(b, Math.floor(random() * KEYS), random());
    const { file } = sharedFile(incremental, `f${round}`);
    const kind = incremental.shared!.kind;
    kinds.push(kind);
    if (kind === "base") files = [];
    files.push(file);
    refs = kind === "base" ? [] : refs;
    refs.push({ name: `f${round}`, size: 1, sha256: "0".repeat(64) });
    incremental.shared!.settle([...refs]);
    const expected = contents(restoreFull(full, clock));
    const actual = contents(restoreChain(files, incremental.states, clock));
    incremental.release();
    full.release();
    assert.deepEqual(actual, expected, `${at}: the chain of ${files.length} files restores what the full snapshot does`);
    assert.deepEqual(contents(restoreChainCells(files, incremental.states, clock, undefined)), expected, `${at}: the chain's cells into the heap backend`);
    const disk = restoreChainCells(files, incremental.states, clock, `cells-${backend}-${round}`) as DiskKeyedStateBackend;
    assert.deepEqual(contents(disk), expected, `${at}: the chain's cells straight into a disk backend's store`);
    assert.equal(disk.cachedKeys, 0, `${at}: restored into the store, not the cache`);
    disk.dispose();
  }
  assert.deepEqual(kinds, ["base", "delta", "delta", "delta", "base", "delta", "delta", "delta", "failed", "base", "delta", "delta", "delta", "base"], `seed ${seed}`);
  dispose(b);
});

test(`incremental snapshots of the ${backend} backend: a delta of 1 % of the keys is a small fraction of the base; a savepoint (no incremental option) stays full`, () => {
  const clock = new ManualClock(0);
  const b = create(`sizes-${backend}`, clock, 100);
  const N = 5_000;
  for (let k = 0; k < N; k++) {
    b.setCurrentKey(k, kgOf(k));
    b.getState(value).update({ n: k });
    b.getListState(list).addAll([k, k + 1, k + 2]);
  }
  const base = b.snapshot({ incremental: true });
  assert.equal(base.shared!.kind, "base");
  const baseBytes = sharedFile(base, "base").bytes;
  base.shared!.settle([{ name: "base", size: baseBytes, sha256: "0".repeat(64) }]);
  base.release();
  for (let k = 0; k < N; k += 100) {
    b.setCurrentKey(k, kgOf(k));
    b.getState(value).update({ n: -k });
  }
  const delta = b.snapshot({ incremental: true });
  assert.equal(delta.shared!.kind, "delta");
  const deltaBytes = sharedFile(delta, "delta").bytes;
  delta.release();
  assert.ok(deltaBytes < baseBytes * 0.05, `a delta of 1 % of the keys has ${deltaBytes} bytes, the base ${baseBytes}`);
  const savepoint = b.snapshot();
  assert.equal(savepoint.shared, undefined, "a snapshot not asked to be incremental has no shared part");
  savepoint.release();
  dispose(b);
});
}

test("the heap backend records removed keys only while the next snapshot can be a delta (a job without checkpoints does not grow), only those a snapshot held, and never without incrementalCheckpoints", () => {
  const clock = new ManualClock(0);
  /** Writes keys `from` to `to` - 1 and clears those ≡ `cleared` (mod 3). */
  const churn = (b: HeapKeyedStateBackend, cleared: number, from = 0, to = 2_000): void => {
    for (let k = from; k < to; k++) {
      b.setCurrentKey(k, kgOf(k));
      b.getState(value).update({ n: k });
      if (k % 3 === cleared) b.getState(value).clear();
    }
  };
  const b = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock, incrementalCheckpoints: { maxChainLength: 10 } });
  churn(b, 0);
  assert.equal(b.removedKeysRecorded, 0, "before any snapshot the next one is a base: nothing to record");
  const base = b.snapshot({ incremental: true });
  base.shared!.settle([{ name: "b", size: 1, sha256: "0".repeat(64) }]);
  base.release();
  churn(b, 1);
  assert.equal(b.removedKeysRecorded, 667, "after a base, every key it held that is cleared is recorded");
  churn(b, 0, 2_000, 2_300);
  assert.equal(b.removedKeysRecorded, 667, "keys created since the base and cleared again are in no snapshot: not recorded");
  const failed = b.snapshot({ incremental: true });
  failed.release(); // never written
  churn(b, 2);
  assert.equal(b.removedKeysRecorded, 0, "after a failed snapshot the next one is a base: nothing recorded");
  const full = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock });
  churn(full, 0);
  const snapshot = full.snapshot({ incremental: true });
  assert.equal(snapshot.shared, undefined, "without incrementalCheckpoints every snapshot is full");
  snapshot.release();
  churn(full, 1);
  assert.equal(full.removedKeysRecorded, 0);
});

test("a damaged shared file is refused by name (CHECKPOINT_CORRUPT), never restored into wrong state", () => {
  const clock = new ManualClock(0);
  const b = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock, storeDir: join(root, "corrupt"), cacheSize: 10, incremental: true });
  for (let k = 0; k < 200; k++) {
    b.setCurrentKey(k, kgOf(k));
    b.getState(value).update({ n: k });
  }
  const snapshot = b.snapshot({ incremental: true });
  const shared = snapshot.shared!;
  const sections = [];
  for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
    const out = new ByteWriter();
    if (shared.writeKeyGroup(kg, out)) sections.push({ name: SHARED_KEYED_SECTION, keyGroup: kg, bytes: new Uint8Array(out.finish()) });
  }
  snapshot.release();
  const bytes = encodeSnapshotFile(SHARED_BASE_KIND, {}, sections);
  const isCorrupt = (e: unknown): boolean => e instanceof EddyError && e.code === "CHECKPOINT_CORRUPT" && e.message.includes("task-0-0-0-base-1-ab.kgs");
  // A flipped byte in the body: the file's CRC refuses it.
  const damaged = bytes.slice();
  damaged[Math.floor(damaged.length / 2)]! ^= 0x40;
  assert.throws(() => SnapshotFile.parse(damaged, { fileName: "task-0-0-0-base-1-ab.kgs" }), isCorrupt);
  // A delta where the base must be: refused by the chain reader.
  const asDelta = SnapshotFile.parse(encodeSnapshotFile(SHARED_DELTA_KIND, {}, sections), { fileName: "task-0-0-0-base-1-ab.kgs" });
  assert.throws(() => chainKeyGroupReader([asDelta], 0, () => undefined, undefined), isCorrupt);
  b.dispose();
});

test("incremental snapshots: nothing is recorded before the first snapshot (a job without checkpoints does not grow), or after a failed one", () => {
  const clock = new ManualClock(0);
  const b = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock, storeDir: join(root, "unbounded"), cacheSize: 10, incremental: true });
  const churn = (): void => {
    for (let k = 0; k < 2_000; k++) {
      b.setCurrentKey(k, kgOf(k));
      b.getState(value).update({ n: k });
      if (k % 3 === 0) b.getState(value).clear();
    }
  };
  churn();
  assert.equal(b.changedKeysOutsideCache, 0, "before any snapshot the next one is a base: nothing to record");
  const base = b.snapshot({ incremental: true });
  base.shared!.settle([{ name: "b", size: 1, sha256: "0".repeat(64) }]);
  base.release();
  churn();
  assert.ok(b.changedKeysOutsideCache > 1_000, `after a base, evicted and removed keys are recorded (${b.changedKeysOutsideCache})`);
  const failed = b.snapshot({ incremental: true });
  failed.release(); // never written
  churn();
  assert.equal(b.changedKeysOutsideCache, 0, "after a failed snapshot the next one is a base: nothing recorded");
  b.dispose();
});
