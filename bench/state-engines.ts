/**
 * Which embedded store a disk keyed state backend should sit on: `lmdb`, `classic-level`
 * (LevelDB) and `@nxtedition/rocksdb`, measured on what the backend does with them:
 *
 * - batched sorted puts (a write-behind cache flushing dirty entries in sorted batches),
 * - random point gets (a cache miss on the task thread: must be synchronous, since state reads
 *   are synchronous in Eddy's API),
 * - range scans of one key-group prefix (snapshots and restores write/read one key group at a time),
 * - a read snapshot taken, scanned after further writes, and released (the synchronous part of a
 *   checkpoint; the scan must not see what was written after it).
 *
 *   node -C eddy-source --import tsx bench/state-engines.ts [keys=200000] [rounds=3]
 *
 * Keys are 2-byte big-endian key group + 4-byte state id + 12-byte key; values 48 bytes. Reports
 * the median M ops/s per engine and each engine's ratio to lmdb (the baseline) measured in the
 * same run. Each engine opens a fresh directory under the OS temp dir, removed at the end.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open as openLmdb } from "lmdb";
import { ClassicLevel } from "classic-level";
import { RocksLevel } from "@nxtedition/rocksdb";
import { median } from "./stats.ts";

const N = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const GROUPS = 128;
const BATCH = 10_000;

function keyOf(i: number): Buffer {
  const k = Buffer.alloc(18);
  k.writeUInt16BE(i % GROUPS, 0);
  k.writeUInt32BE(7, 2);
  k.write(`k${String(i).padStart(11, "0")}`, 6, "latin1");
  return k;
}
const keys = Array.from({ length: N }, (_, i) => keyOf(i));
const sorted = [...keys].sort(Buffer.compare);
const value = Buffer.alloc(48, 0x61);
const probes = Array.from({ length: N }, (_, i) => keys[(i * 7919 + 13) % N]!);

interface Engine {
  putSorted(): Promise<void>;
  getRandom(): number;
  scanGroups(): Promise<number>;
  /** Takes a read snapshot, writes N/10 new keys, scans group 0 in the snapshot; returns entries seen. */
  snapshotScan(): Promise<number>;
  close(): Promise<void>;
}

function groupBounds(g: number): [Buffer, Buffer] {
  const start = Buffer.alloc(2);
  start.writeUInt16BE(g, 0);
  const end = Buffer.alloc(2);
  end.writeUInt16BE(g + 1, 0);
  return [start, end];
}

function newKeys(round: number): Buffer[] {
  return Array.from({ length: N / 10 }, (_, i) => {
    const k = Buffer.alloc(18);
    k.writeUInt16BE(0, 0);
    k.writeUInt32BE(8 + round, 2);
    k.write(`n${String(i).padStart(11, "0")}`, 6, "latin1");
    return k;
  });
}

async function lmdbEngine(dir: string): Promise<Engine> {
  const db = openLmdb({ path: dir, keyEncoding: "binary", encoding: "binary", noSync: true });
  let round = 0;
  return {
    async putSorted() {
      for (let b = 0; b < N; b += BATCH) {
        db.transactionSync(() => {
          for (let i = b; i < Math.min(N, b + BATCH); i++) db.putSync(sorted[i]!, value);
        });
      }
    },
    getRandom() {
      let n = 0;
      for (const k of probes) n += db.getBinary(k)!.length;
      return n;
    },
    async scanGroups() {
      let n = 0;
      for (let g = 0; g < GROUPS; g++) {
        const [start, end] = groupBounds(g);
        for (const _ of db.getRange({ start, end })) n++;
      }
      return n;
    },
    async snapshotScan() {
      const txn = db.useReadTransaction();
      const extra = newKeys(round++);
      db.transactionSync(() => {
        for (const k of extra) db.putSync(k, value);
      });
      const [start, end] = groupBounds(0);
      let n = 0;
      for (const _ of db.getRange({ start, end, transaction: txn })) n++;
      txn.done();
      return n;
    },
    async close() {
      await db.close();
    },
  };
}

/** classic-level and @nxtedition/rocksdb share the abstract-level API. */
/** What the bench uses of an abstract-level store (both packages' typings differ in versions). */
interface LevelLike {
  open(): Promise<void>;
  close(): Promise<void>;
  batch(): { put(key: Buffer, value: Buffer, options: object): void; write(): Promise<void> };
  iterator(options: object): { nextv(n: number): Promise<unknown[]>; close(): Promise<void> };
}

async function levelEngine(store: ClassicLevel<Buffer, Buffer> | RocksLevel, sync: boolean): Promise<Engine> {
  const db = store as unknown as LevelLike;
  await db.open();
  let round = 0;
  const scan = (start: Buffer, end: Buffer, options: object = {}): Promise<number> =>
    drain(db.iterator({ gte: start, lt: end, keyEncoding: "buffer", valueEncoding: "buffer", ...options }));
  const drain = async (it: { nextv(n: number): Promise<unknown[]>; close(): Promise<void> }): Promise<number> => {
    let n = 0;
    for (;;) {
      const rows = await it.nextv(1000);
      if (rows.length === 0) break;
      n += rows.length;
    }
    await it.close();
    return n;
  };
  return {
    async putSorted() {
      for (let b = 0; b < N; b += BATCH) {
        const batch = db.batch();
        for (let i = b; i < Math.min(N, b + BATCH); i++) batch.put(sorted[i]!, value, { keyEncoding: "buffer", valueEncoding: "buffer" });
        await batch.write();
      }
    },
    getRandom() {
      if (!sync) throw new Error("no synchronous get");
      let n = 0;
      const opts = { keyEncoding: "buffer", valueEncoding: "buffer" } as const;
      if (store instanceof ClassicLevel) {
        for (const k of probes) n += (store.getSync as (key: Buffer, o: object) => Buffer | undefined)(k, opts)!.length;
      } else {
        // The binding has no getSync; its one synchronous read is getMany.
        const rocks = store as unknown as { _getManySync(keys: Buffer[], options: object): (Buffer | undefined)[] };
        for (const k of probes) n += rocks._getManySync([k], {})[0]!.length;
      }
      return n;
    },
    async scanGroups() {
      let n = 0;
      for (let g = 0; g < GROUPS; g++) n += await scan(...groupBounds(g));
      return n;
    },
    async snapshotScan() {
      const extra = newKeys(round++);
      const write = async (): Promise<void> => {
        const batch = db.batch();
        for (const k of extra) batch.put(k, value, { keyEncoding: "buffer", valueEncoding: "buffer" });
        await batch.write();
      };
      if (store instanceof ClassicLevel) {
        const snapshot = store.snapshot();
        await write();
        const n = await scan(...groupBounds(0), { snapshot });
        await snapshot.close();
        return n;
      }
      // No explicit snapshots in this binding: an iterator reads the store as of its creation.
      const [gte, lt] = groupBounds(0);
      const it = db.iterator({ gte, lt, keyEncoding: "buffer", valueEncoding: "buffer" });
      await write();
      return drain(it);
    },
    async close() {
      await db.close();
    },
  };
}

const ENGINES: [string, (dir: string) => Promise<Engine>][] = [
  ["lmdb 3.5.6", lmdbEngine],
  ["classic-level 3.0.0", (dir) => levelEngine(new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: "buffer", valueEncoding: "buffer" }), true)],
  ["@nxtedition/rocksdb 12.2.12", (dir) => levelEngine(new RocksLevel(dir, {}) as never, true)],
];

type Op = "sorted put (batches of 10k)" | "random get (sync)" | "key-group range scan" | "snapshot: scan group 0 after writes";
const results = new Map<string, Map<Op, number[]>>();
const expectedInSnapshot = keys.filter((k) => k.readUInt16BE(0) === 0).length;

for (let round = 0; round < ROUNDS; round++) {
  for (const [name, make] of ENGINES) {
    const dir = mkdtempSync(join(tmpdir(), "eddy-engines-"));
    try {
      const engine = await make(dir);
      const byOp = results.get(name) ?? new Map<Op, number[]>();
      results.set(name, byOp);
      const time = async (op: Op, ops: number, run: () => Promise<unknown> | unknown): Promise<unknown> => {
        const start = process.hrtime.bigint();
        const out = await run();
        const s = Number(process.hrtime.bigint() - start) / 1e9;
        (byOp.get(op) ?? byOp.set(op, []).get(op)!).push(ops / s / 1e6);
        return out;
      };
      await time("sorted put (batches of 10k)", N, () => engine.putSorted());
      let got: unknown;
      try {
        got = await time("random get (sync)", N, () => engine.getRandom());
      } catch (e) {
        byOp.delete("random get (sync)");
        got = String(e);
      }
      if (got !== N * value.length) console.error(`${name}: random get: ${String(got)}`);
      const scanned = await time("key-group range scan", N, () => engine.scanGroups());
      if (scanned !== N) throw new Error(`${name} scanned ${String(scanned)} of ${N}`);
      const inSnapshot = await time("snapshot: scan group 0 after writes", N / 10 + expectedInSnapshot, () => engine.snapshotScan());
      if (inSnapshot !== expectedInSnapshot) throw new Error(`${name}: the snapshot saw ${String(inSnapshot)} entries, expected ${expectedInSnapshot} (writes after it leaked in)`);
      await engine.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

const base = results.get(ENGINES[0]![0])!;
console.log(`${N} keys, ${ROUNDS} rounds, median M ops/s (ratio to lmdb)`);
for (const [name, byOp] of results) {
  const cells = [...base.keys()].map((op) => {
    const xs = byOp.get(op);
    if (xs === undefined) return `${op}: n/a`;
    const m = median(xs);
    return `${op}: ${m.toFixed(3)} (${(m / median(base.get(op)!)).toFixed(2)}x)`;
  });
  console.log(`${name.padEnd(28)} ${cells.join(" | ")}`);
}
