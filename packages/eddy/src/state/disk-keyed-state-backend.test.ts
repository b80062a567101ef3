/**
 * What the disk backend adds to the contract (disk-keyed-state-backend.contract.test.ts): the
 * cache stays bounded, snapshots see removals that are not flushed yet, the LOCK refuses a second
 * live process, a damaged store is reported by name and never read back after a restart, and
 * codec migrations reach entries in the store.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import fc from "fast-check";
import { open as openLmdb } from "lmdb";
import { ByteReader, ByteWriter } from "../core/codec/bytes.ts";
import { ManualClock } from "../core/clock.ts";
import { EddyError } from "../core/errors.ts";
import { ListStateDescriptor, ValueStateDescriptor } from "./descriptors.ts";
import { DiskKeyedStateBackend, diskStateBackend, lockJobDir } from "./disk-keyed-state-backend.ts";
import { HeapKeyedStateBackend } from "./heap-keyed-state-backend.ts";
import type { KeyedStateBackend, KeyGroupCells } from "./keyed-state-backend.ts";
import { writeKeyGroups } from "../testing/keyed-state-backend-contract.ts";
import { mapKeyOf, type Key } from "../core/key.ts";
import type { InternalValueState } from "./internal-state.ts";
import { metaOf, type KeyedStateMeta } from "./keyed-state-meta.ts";
import type { Namespace } from "./namespace.ts";
import { Cell, VOID_NAMESPACE } from "./state-table.ts";

const root = mkdtempSync(join(tmpdir(), "eddy-disk-test-"));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const RANGE = { start: 0, end: 3 };
const kgOf = (i: number): number => i % 4;
const make = (cacheSize: number, storeDir = join(root, `b${n++}`)): DiskKeyedStateBackend =>
  new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0), storeDir, cacheSize });

const count = new ValueStateDescriptor<number>("count");
const items = new ListStateDescriptor<string>("items");

const writeAll = (b: KeyedStateBackend): Map<number, ArrayBuffer> => writeKeyGroups(b.snapshot(), RANGE);

test("disk backend: the cache holds at most cache-size keys; every value survives eviction (through several write batches)", () => {
  const b = make(50);
  for (let i = 0; i < 6_000; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(count).update(i * 2);
    b.getListState(items).add(`item-${i}`);
    assert.ok(b.cachedKeys <= 50, `cached ${b.cachedKeys} keys`);
  }
  for (let i = 0; i < 6_000; i++) {
    b.setCurrentKey(i, kgOf(i));
    assert.equal(b.getState(count).value(), i * 2);
    assert.deepEqual(b.getListState(items).get(), [`item-${i}`]);
  }
  assert.equal(b.numKeys("count"), 6_000);
  b.dispose();
  assert.equal(existsSync(b.storeDir), false, "dispose removes the store");
});

test("disk backend: eviction gives keys used since the last pass a second chance, and still evicts when every key was used", () => {
  const b = make(8); // evicts 8 >> 2 = 2 keys at a time
  const use = (i: number): void => {
    b.setCurrentKey(i, kgOf(i));
    b.getState(count).update((b.getState(count).value() ?? 0) + 1);
  };
  for (let i = 0; i < 8; i++) use(i);
  use(0);
  use(1);
  use(8); // the cache is full: the two oldest not used again go (2 and 3), not 0 and 1
  assert.deepEqual([0, 1, 2, 3, 8].map((i) => b.isCached(i)), [true, true, false, false, true]);
  const all = make(4);
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 4; i++) {
      all.setCurrentKey(i, kgOf(i));
      all.getState(count).update(round);
    }
  }
  all.setCurrentKey(4, kgOf(4));
  all.getState(count).update(0);
  assert.equal(all.cachedKeys, 4, "bounded although every key was referenced");
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => all.isCached(i)), [false, true, true, true, true], "the oldest goes once all had their second chance");
  for (const [backend, keys] of [[b, 9], [all, 5]] as const) {
    for (let i = 0; i < keys; i++) {
      backend.setCurrentKey(i, kgOf(i));
      assert.notEqual(backend.getState(count).value(), undefined, `key ${i} kept its value through eviction`);
    }
  }
  b.dispose();
  all.dispose();
});

test("disk backend: a snapshot leaves out keys removed before it whose deletion is not flushed yet, and keeps keys removed after it", () => {
  const b = make(1_000);
  for (let i = 0; i < 20; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(count).update(i);
  }
  // Flushed to the store (numKeys writes the cache back), then removed in the cache only.
  assert.equal(b.numKeys("count"), 20);
  for (let i = 0; i < 10; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(count).clear();
  }
  const snapshot = b.snapshot();
  // After the snapshot: more removals, flushed to the store.
  for (let i = 10; i < 15; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(count).clear();
  }
  assert.equal(b.numKeys("count"), 5);
  const restored = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0) });
  for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
    if (!snapshot.hasKeyGroup(kg)) continue;
    const out = new ByteWriter();
    snapshot.writeKeyGroup(kg, out);
    restored.restoreKeyGroup(kg, new ByteReader(out.finish()), snapshot.states);
  }
  snapshot.release();
  const got: number[] = [];
  for (let i = 0; i < 20; i++) {
    restored.setCurrentKey(i, kgOf(i));
    const v = restored.getState(count).value();
    if (v !== undefined) got.push(v);
  }
  assert.deepEqual(got, [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  b.dispose();
});

test("disk backend: a restore larger than the cache goes to the store; a codec migration reaches stored entries", () => {
  const v1 = new ValueStateDescriptor<number>("count", { codec: { id: "n", version: 1 } });
  const src = make(10_000);
  for (let i = 0; i < 300; i++) {
    src.setCurrentKey(i, kgOf(i));
    src.getState(v1).update(i);
  }
  const groups = writeAll(src);
  const states = src.snapshot().states;
  src.dispose();
  const b = make(16);
  for (const [kg, bytes] of groups) b.restoreKeyGroup(kg, new ByteReader(bytes), states);
  assert.ok(b.cachedKeys <= 16);
  const v2 = new ValueStateDescriptor<number>("count", { codec: { id: "n", version: 2, migrate: (v) => (v as number) + 1_000 } });
  for (let i = 0; i < 300; i++) {
    b.setCurrentKey(i, kgOf(i));
    assert.equal(b.getState(v2).value(), i + 1_000, `key ${i}`);
  }
  b.dispose();
});

test("disk backend: an entry of a damaged store is reported as STATE_STORE_CORRUPT", () => {
  const b = make(1);
  for (let i = 0; i < 4; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(count).update(i);
  }
  assert.equal(b.numKeys("count"), 4); // writes the pending batch to the store
  // Damage every stored record from outside (LMDB allows a second handle in this process).
  const env = openLmdb<Buffer, Buffer>({ path: b.storePath, keyEncoding: "binary", encoding: "binary", maxDbs: 8 });
  const db = env.openDB<Buffer, Buffer>({ name: "state", keyEncoding: "binary", encoding: "binary" });
  const keys = [...db.getKeys()];
  assert.ok(keys.length >= 3);
  db.transactionSync(() => {
    for (const key of keys) db.putSync(key, Buffer.from([0xff, 0xff, 0xff]));
  });
  // A write of this backend's renews its read transaction (which would not see the damage yet):
  // the cached key changed, so numKeys writes it back.
  b.setCurrentKey(3, kgOf(3));
  b.getState(count).update(33);
  assert.equal(b.numKeys("count"), 4);
  b.setCurrentKey(0, kgOf(0));
  assert.throws(() => b.getState(count).value(), (e: unknown) => e instanceof EddyError && e.code === "STATE_STORE_CORRUPT" && e.message.includes(b.storeDir));
  void env.close();
  b.dispose();
});

test("disk backend: a store write refused for room is STATE_STORE_FULL naming the directory (not LMDB's bare I/O error), and the process goes on", () => {
  // A real refusal: a child process under a file size limit (`ulimit -f`, 4,096 blocks), whose
  // store file cannot grow past it (LMDB then says only "Input/output error", as on a full disk).
  const dir = join(root, "full");
  const script = `
    const { DiskKeyedStateBackend } = await import(${JSON.stringify(new URL("./disk-keyed-state-backend.ts", import.meta.url).href)});
    const { ValueStateDescriptor } = await import(${JSON.stringify(new URL("./descriptors.ts", import.meta.url).href)});
    const { ManualClock } = await import(${JSON.stringify(new URL("../core/clock.ts", import.meta.url).href)});
    const b = new DiskKeyedStateBackend({ keyGroupRange: { start: 0, end: 127 }, clock: new ManualClock(0), storeDir: ${JSON.stringify(dir)}, cacheSize: 100 });
    const d = new ValueStateDescriptor("v");
    let out = "NO ERROR";
    try {
      for (let k = 0; k < 200000; k++) { b.setCurrentKey(k, k % 128); b.getState(d).update("x".repeat(200)); }
    } catch (e) { out = e.code + " " + e.message; }
    b.dispose();
    console.log(out);`;
  const child = spawnSync("sh", ["-c", `ulimit -f 4096 && exec "${process.execPath}" -C eddy-source --import tsx --input-type=module -e "$0"`, script], { encoding: "utf8", timeout: 120_000 });
  assert.equal(child.status, 0, `the child failed: ${child.stderr}`);
  const line = child.stdout.trim().split("\n").at(-1)!;
  assert.match(line, /^STATE_STORE_FULL no room to write the disk state store in \S*full \(LMDB: .*a test write there was refused with EFBIG; the device has [\d.]+ MiB free\)/, line);
  assert.ok(!existsSync(dir), "the backend removed its store when disposed");
});

test("disk backend: a store left behind (damaged or not) is never read: a new backend on the directory starts empty", () => {
  const dir = join(root, "left-behind");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "store.mdb"), Buffer.alloc(64 * 1024, 0xab));
  const b = make(10, dir);
  b.setCurrentKey(1, kgOf(1));
  assert.equal(b.getState(count).value(), undefined);
  b.getState(count).update(5);
  assert.equal(b.numKeys("count"), 1);
  b.dispose();
});

test("disk backend: a job directory in use by another live process is refused with STATE_DIR_LOCKED; a dead owner's lock is taken over", () => {
  const jobDir = join(root, "locked-job");
  lockJobDir(jobDir);
  // A second process on the same directory.
  const child = spawnSync(
    process.execPath,
    [
      "-C",
      "eddy-source",
      "--import",
      "tsx",
      "-e",
      `import("${new URL("./disk-keyed-state-backend.ts", import.meta.url).href}").then((m) => { try { m.lockJobDir(${JSON.stringify(jobDir)}); console.log("LOCKED-OK"); } catch (e) { console.log(e.code, e.message); } })`,
    ],
    { encoding: "utf8", timeout: 60_000 },
  );
  assert.match(child.stdout, /^STATE_DIR_LOCKED .*in use by process \d+/, `child said: ${child.stdout} ${child.stderr}`);
  // This process again (another thread or a restart of the job in it): allowed.
  lockJobDir(jobDir);
  // A lock whose owner is gone is taken over.
  const other = join(root, "stale-job");
  mkdirSync(other, { recursive: true });
  writeFileSync(join(other, "LOCK"), String(child.pid));
  lockJobDir(other);
  // Through the factory, as a job uses it.
  const factory = diskStateBackend({ dir: root, cacheSize: 5 });
  const b = factory({ keyGroupRange: RANGE, clock: new ManualClock(0), scope: { job: "locked-job", operatorId: "op", subtaskIndex: 0 } });
  assert.ok((b as DiskKeyedStateBackend).storeDir.startsWith(jobDir));
  b.dispose?.();
});

test("disk backend: background TTL cleanup walks the store too, a bounded number of entries per call", () => {
  const clock = new ManualClock(0);
  const b = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock, storeDir: join(root, `b${n++}`), cacheSize: 4 });
  const ttl = new ValueStateDescriptor<number>("ttl", { ttl: { ttlMs: 100, cleanup: { incremental: false, background: true } } });
  for (let i = 0; i < 200; i++) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(ttl).update(i);
  }
  clock.advance(50);
  for (let i = 0; i < 100; i += 10) {
    b.setCurrentKey(i, kgOf(i));
    b.getState(ttl).update(i); // written again: expires 50 ms later than the others
  }
  clock.advance(60);
  assert.equal(b.numKeys("ttl"), 200, "expired entries are still stored");
  let removed = 0;
  for (let step = 0; step < 100 && removed < 190; step++) {
    const now = b.cleanupExpired(30);
    assert.ok(now <= 30 + 4, `one call examines at most 30 stored entries and the cached ones (${now})`);
    removed += now;
  }
  assert.equal(removed, 190);
  assert.equal(b.numKeys("ttl"), 10);
  b.dispose();
});

test("disk backend: bad options are refused by name", () => {
  assert.throws(() => diskStateBackend({ dir: root, cacheSize: 0 }), /state\.backend\.disk\.cache-size must be a positive integer/);
  assert.throws(() => diskStateBackend({ dir: "" }), /needs a directory \(state\.backend\.disk\.dir\)/);
});

test("disk backend: a restore straight into the store writes every key's cells as given: cells of a key that do not come together, keys out of store order, string keys holding a NUL", () => {
  const counts = metaOf(count);
  const lists = metaOf(items);
  const cell = (value: unknown): Cell => new Cell(value, Number.POSITIVE_INFINITY, undefined);
  // Key group 1 of RANGE; keys the store orders differently from how they come.
  const given: [KeyedStateMeta, Key, Namespace, unknown][] = [
    [counts, 9, VOID_NAMESPACE, 90],
    [counts, 7, 200, 72],
    [counts, 3, VOID_NAMESPACE, 30],
    [lists, "a\0b", VOID_NAMESPACE, ["x"]],
    [counts, 7, 100, 71], // key 7's cells apart
    [counts, "a\0", VOID_NAMESPACE, 1],
    [counts, "a", VOID_NAMESPACE, 2],
    [lists, "a", VOID_NAMESPACE, ["y", "z"]],
    [counts, 7, VOID_NAMESPACE, 70],
    [counts, "a\0b", VOID_NAMESPACE, 3],
    [counts, "a", 5, 25], // "a" again, after other keys
    [lists, "a\0b", 8, ["w"]], // and "a\0b" of the list state
    // Tagged with its record's index, "a"'s name would sort between the two records of "a" (6, 10).
    [counts, "a\0\0\0\x08", VOID_NAMESPACE, 4],
  ];
  for (const reversed of [false, true]) {
    const b = make(1_000);
    const cells = reversed ? [...given].reverse() : given;
    b.restoreKeyGroupCells(1, (onCell) => { for (const [meta, key, namespace, value] of cells) onCell(meta, { key, namespace, cell: cell(value) }); }, [counts, lists]);
    const read = (name: string): string[] => [...b.entries(name, 1)].map((e) => `${JSON.stringify(e.key)}/${String(e.namespace)}=${JSON.stringify(e.value)}`).sort();
    const expected = (meta: KeyedStateMeta): string[] => given.filter(([m]) => m === meta).map(([, key, ns, value]) => `${JSON.stringify(key)}/${String(ns)}=${JSON.stringify(value)}`).sort();
    assert.deepEqual(read("count"), expected(counts), reversed ? "cells given in reverse" : "cells as given");
    assert.deepEqual(read("items"), expected(lists));
    // And through the handles: a key's namespaces are one record in the store.
    b.setCurrentKey(7, 1);
    const state = b.getState(count) as unknown as InternalValueState<number>;
    assert.equal(state.value(), 70);
    state.setCurrentNamespace(100);
    assert.equal(state.value(), 71);
    b.dispose();
  }
});

test("disk backend: a restore straight into the store holds exactly what the heap backend's restore of the same cells holds, whatever the keys and the order of their cells (property)", () => {
  const counts = metaOf(count);
  const lists = metaOf(items);
  const keyArb: fc.Arbitrary<Key> = fc.oneof(
    fc.integer({ min: -1_000, max: 1_000 }),
    fc.double({ noNaN: true }),
    fc.constantFrom("", "a", "a\0", "a\0b", "b", "é", "\0", "ab"),
    fc.string({ maxLength: 4 }),
    fc.bigInt({ min: -100n, max: 100n }),
    fc.tuple(fc.constantFrom("x", "y"), fc.nat({ max: 3 })),
  );
  const cellArb = fc.record({
    list: fc.boolean(),
    key: keyArb,
    namespace: fc.oneof(fc.constant(VOID_NAMESPACE), fc.integer({ min: 0, max: 5 }).map((n) => n * 1_000)),
    value: fc.integer({ min: 0, max: 99 }),
  });
  fc.assert(
    fc.property(fc.array(cellArb, { maxLength: 40 }), fc.boolean(), (raw, split) => {
      // One cell per (state, key, namespace), as a snapshot has; grouped by key unless `split`.
      const seen = new Set<string>();
      const cells = raw.filter((c) => {
        const id = `${c.list}|${String(mapKeyOf(c.key))}|${String(c.namespace)}`;
        return seen.has(id) ? false : (seen.add(id), true);
      });
      if (!split) cells.sort((a, b) => (String(mapKeyOf(a.key)) < String(mapKeyOf(b.key)) ? -1 : String(mapKeyOf(a.key)) > String(mapKeyOf(b.key)) ? 1 : 0));
      const given: KeyGroupCells = (onCell) => {
        for (const c of cells) onCell(c.list ? lists : counts, { key: c.key, namespace: c.namespace, cell: new Cell(c.list ? [c.value] : c.value, Number.POSITIVE_INFINITY, undefined) });
      };
      const disk = make(1_000);
      const heap = new HeapKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0) });
      try {
        disk.restoreKeyGroupCells(2, given, [counts, lists]);
        heap.restoreKeyGroupCells(2, given, [counts, lists]);
        for (const name of ["count", "items"]) {
          // A state without cells in the group is not created by either backend's restore.
          const read = (b: HeapKeyedStateBackend): string[] =>
            b.stateNames().includes(name)
              ? [...b.entries(name, 2)].map((e) => `${typeof e.key === "bigint" ? `${e.key}n` : JSON.stringify(e.key)}/${String(e.namespace)}=${JSON.stringify(e.value)}`).sort()
              : ["(no state)"];
          assert.deepEqual(read(disk), read(heap), name);
        }
      } finally {
        disk.dispose();
      }
    }),
    { numRuns: 150 },
  );
});
