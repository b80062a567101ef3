/**
 * The disk state backend at scale (issue 29: 50 M keys, about 10 GB of state, with the process's
 * V8 heap under 2 GB; an incremental checkpoint with 1 % of the keys changed under 5 % of a full
 * one's bytes and time; a restore of 10 GB from local disk in under 60 s).
 *
 * One keyed operator subtask (128 key groups) driven as a keyed operator drives its backend: per
 * record `setCurrentKey` and a value state read and update (a record `{ id, count, pad }`, `pad` a
 * string of `--value-bytes`), a cache of `--cache` keys. Phases, each timed:
 *
 *   1. load: every key written once (records/s);
 *   2. the first incremental snapshot, a base: every key group, serialized and written as one
 *      shared file with fsync (LocalCheckpointStorage) — the full checkpoint;
 *   3. `--changed` of the keys (uniform, default 1 %) read and updated (records/s), then an
 *      incremental snapshot, a delta on the chain, written the same way;
 *   4. with `--local-recovery`: the backend keeps undo sets for local recovery
 *      (`state.backend.disk.local-recovery`) from the start; after the incremental checkpoint
 *      another `--changed` of the keys are updated (work the restore has to undo), then the
 *      process "dies" (the backend is dropped, nothing flushed) and a new backend on the same
 *      directory rolls the store back to the incremental checkpoint (restoreLocally), as a job
 *      restarted on this machine does; a key changed after the checkpoint is checked to read as
 *      it was;
 *   5. (unless `--no-rebuild`) restore: both files opened by their index, every key group's cells decoded from the chain
 *      and restored into a fresh disk backend (its LMDB store rebuilt), as a job's restore does
 *      without local recovery.
 *
 * Reported: bytes and time of each checkpoint and their ratio, the synchronous parts, restore
 * time, the process's peak V8 heap (used, sampled every 10,000 records and between phases) and
 * peak RSS (getrusage), LMDB store size. Nothing is compared against the heap backend: 50 M keys do
 * not fit there (the ratio asked is delta / full, both measured in this run).
 *
 *   node -C eddy-source --import tsx bench/disk-state-scale.ts [--keys 50000000] [--value-bytes 180]
 *     [--cache 1000000] [--cache-bytes N] [--changed 0.01] [--dir /tmp] [--local-recovery] [--no-rebuild]
 *
 * (--cache-bytes: the cache's bound in estimated bytes, `state.backend.disk.cache-bytes`; the
 * backend's default when absent, 256 MiB. Runs recorded before that bound existed had the key
 * bound only: give a large --cache-bytes to compare with them.)
 *
 * Disk needed: about 3× the state (the store, the restored store, the base file).
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { getHeapStatistics } from "node:v8";
import { ByteWriter } from "../packages/eddy/src/core/codec/bytes.ts";
import { ManualClock } from "../packages/eddy/src/core/clock.ts";
import { encodeSnapshotFileStream } from "../packages/eddy/src/checkpoint/format/container.ts";
import { chainKeyGroupCells, SHARED_BASE_KIND, SHARED_DELTA_KIND, SHARED_KEYED_SECTION } from "../packages/eddy/src/checkpoint/format/keyed-chain.ts";
import { LocalCheckpointStorage } from "../packages/eddy/src/checkpoint/storage.ts";
import type { StreamedSnapshotFile } from "../packages/eddy/src/checkpoint/untrusted-file.ts";
import { ValueStateDescriptor } from "../packages/eddy/src/state/descriptors.ts";
import { defaultDiskCacheBytes, DiskKeyedStateBackend } from "../packages/eddy/src/state/disk-keyed-state-backend.ts";
import type { SharedFileRef } from "../packages/eddy/src/state/incremental-snapshot.ts";

const { values } = parseArgs({
  options: {
    keys: { type: "string", default: "50000000" },
    "value-bytes": { type: "string", default: "180" },
    cache: { type: "string", default: "1000000" },
    "cache-bytes": { type: "string" },
    changed: { type: "string", default: "0.01" },
    dir: { type: "string", default: tmpdir() },
    "local-recovery": { type: "boolean", default: false },
    "no-rebuild": { type: "boolean", default: false },
  },
});
const LOCAL = values["local-recovery"];
const KEYS = Number(values.keys);
const VALUE_BYTES = Number(values["value-bytes"]);
const CACHE = Number(values.cache);
const CACHE_BYTES = values["cache-bytes"] === undefined ? defaultDiskCacheBytes() : Number(values["cache-bytes"]);
const CHANGED = Number(values.changed);
const RANGE = { start: 0, end: 127 };
const kgOf = (k: number): number => k % 128;
interface Row {
  id: number;
  count: number;
  pad: string;
}
const STATE = new ValueStateDescriptor<Row>("state", { copy: "none" });

let peakHeap = 0;
let phasePeak = 0;
const sample = (): void => {
  const used = getHeapStatistics().used_heap_size;
  if (used > peakHeap) peakHeap = used;
  if (used > phasePeak) phasePeak = used;
};
/** The V8 heap's peak since the last call (then reset), and the process's peak RSS so far. */
const phase = (): string => {
  sample();
  const out = `heap peak ${gb(phasePeak)}, RSS peak so far ${gb(peakRss())}`;
  phasePeak = 0;
  return out;
};
const peakRss = (): number => process.resourceUsage().maxRSS * 1024;
const gb = (n: number): string => `${(n / 2 ** 30).toFixed(2)} GiB`;
const mb = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;
const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const rate = (n: number, ms: number): string => `${Math.round((n * 1000) / ms).toLocaleString("en")}/s`;
const dirBytes = (dir: string): number => readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
const log = (line: string): void => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

const home = mkdtempSync(join(values.dir, "eddy-bench-scale-"));
const storage = new LocalCheckpointStorage({ rootDir: home, jobId: "scale" });
// Distinct pads (a few), so values are not one shared string everywhere.
const pads = Array.from({ length: 16 }, (_, i) => String.fromCharCode(97 + i).repeat(VALUE_BYTES));

/** Serializes every key group (by `write`) into one shared file with fsync; bytes and ms. */
async function persist(kind: string, name: string, write: (kg: number, out: ByteWriter) => boolean): Promise<{ bytes: number; ms: number; ref: SharedFileRef }> {
  const start = performance.now();
  const out = new ByteWriter(4 * 1024 * 1024);
  // Streamed as a checkpoint writes it (runtime/checkpointing.ts): key group by key group, never whole.
  function* sections(): Generator<{ name: string; keyGroup: number; bytes: Uint8Array }> {
    for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
      if (write(kg, out)) yield { name: SHARED_KEYED_SECTION, keyGroup: kg, bytes: out.take() };
      sample();
    }
  }
  const ref = await storage.writeSharedFile(name, encodeSnapshotFileStream(kind, () => ({}), sections()));
  sample();
  return { bytes: ref.size, ms: performance.now() - start, ref };
}

try {
  log(`${KEYS.toLocaleString("en")} keys, values ~${VALUE_BYTES} B, cache ${CACHE.toLocaleString("en")} keys and ${(CACHE_BYTES / 2 ** 20).toFixed(0)} MiB, ${CHANGED * 100} % changed; load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}; ${home}`);
  const backend = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0), storeDir: join(home, "store"), cacheSize: CACHE, cacheBytes: CACHE_BYTES, incremental: true, maxChainLength: 1_000, localRecovery: LOCAL });
  // 1. load
  let t = performance.now();
  for (let k = 0; k < KEYS; k++) {
    backend.setCurrentKey(k, kgOf(k));
    backend.getState(STATE).update({ id: k, count: 0, pad: pads[k & 15]! });
    if (k % 10_000 === 0) {
      sample();
      if (k % 5_000_000 === 0 && k > 0) log(`loaded ${k.toLocaleString("en")} (${rate(k, performance.now() - t)}), heap peak ${gb(peakHeap)}, RSS peak ${gb(peakRss())}`);
    }
  }
  const loadMs = performance.now() - t;
  log(`load ${s(loadMs)} (${rate(KEYS, loadMs)}); ${phase()}`);

  // 2. the full checkpoint (the chain's base)
  t = performance.now();
  const base = backend.snapshot({ incremental: true, checkpointId: 1 });
  const baseSyncMs = performance.now() - t;
  const full = await persist(SHARED_BASE_KIND, "scale-base-1-0.kgs", (kg, out) => base.shared!.writeKeyGroup(kg, out));
  base.shared!.settle([full.ref]);
  base.release();
  log(`full checkpoint ${gb(full.bytes)} in ${s(full.ms)} (sync part ${baseSyncMs.toFixed(1)} ms); store ${gb(dirBytes(join(home, "store")))}; ${phase()}`);

  // 3. 1 % of the keys changed, then the incremental checkpoint
  const updates = Math.round(KEYS * CHANGED);
  let random = 12_345;
  const next = (): number => (random = (Math.imul(random, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
  t = performance.now();
  for (let i = 0; i < updates; i++) {
    const k = Math.floor(next() * KEYS);
    backend.setCurrentKey(k, kgOf(k));
    const state = backend.getState(STATE);
    const v = state.value()!;
    state.update({ id: v.id, count: v.count + 1, pad: v.pad });
    if (i % 10_000 === 0) sample();
  }
  const updateMs = performance.now() - t;
  t = performance.now();
  const inc = backend.snapshot({ incremental: true, checkpointId: 2 });
  const deltaSyncMs = performance.now() - t;
  const delta = await persist(SHARED_DELTA_KIND, "scale-delta-2-0.kgs", (kg, out) => inc.shared!.writeKeyGroup(kg, out));
  const chain = [full.ref, delta.ref];
  inc.shared!.settle(chain);
  const states = inc.states;
  inc.release();
  log(`${updates.toLocaleString("en")} updates ${s(updateMs)} (${rate(updates, updateMs)}, random keys: mostly store reads); incremental checkpoint ${mb(delta.bytes)} in ${s(delta.ms)} (sync part ${deltaSyncMs.toFixed(1)} ms); ${phase()}`);

  // 4. local recovery: more changes after the checkpoint, a crash, the store rolled back
  let local: { ms: number; records: number; read: number; verifyMs: number } | undefined;
  if (LOCAL) {
    const after = 99_991;
    let first = -1;
    for (let i = 0; i < updates; i++) {
      const k = (Math.floor(next() * KEYS) + after) % KEYS;
      if (first < 0) first = k;
      backend.setCurrentKey(k, kgOf(k));
      backend.getState(STATE).update({ id: k, count: -1, pad: "changed after the checkpoint" });
      if (i % 10_000 === 0) sample();
    }
    // The process dies here: the backend is dropped unflushed (its cache and write batch are lost).
    // A job's restore opens the chain's files by their index first (executor/checkpoint-restore.ts:
    // the timers are in them), then the backend rolls its store back.
    t = performance.now();
    for (const ref of chain) await storage.openSharedFile(ref, "index");
    const verifyMs = performance.now() - t;
    t = performance.now();
    const back = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0), storeDir: join(home, "store"), cacheSize: CACHE, cacheBytes: CACHE_BYTES, incremental: true, localRecovery: true });
    const outcome = back.restoreLocally(2, chain, states)!;
    const ms = performance.now() - t;
    if (!outcome.used) throw new Error(`local recovery not used: ${outcome.reason}`);
    back.setCurrentKey(first, kgOf(first));
    const v = back.getState(STATE).value();
    if (v?.id !== first || v.count < 0) throw new Error(`key ${first} after the rollback: ${JSON.stringify(v)?.slice(0, 80)}`);
    local = { ms, records: outcome.records!, read: outcome.read!, verifyMs };
    log(`${updates.toLocaleString("en")} updates after the checkpoint, then the chain's files opened in ${s(verifyMs)} and local recovery in ${s(ms)} (${outcome.read!.toLocaleString("en")} records read, ${outcome.records!.toLocaleString("en")} written); store ${gb(dirBytes(join(home, "store")))}; ${phase()}`);
    back.dispose();
  } else backend.dispose();

  // 5. restore from the chain into a fresh disk backend
  let restoreMs: number | undefined;
  if (!values["no-rebuild"]) {
    t = performance.now();
    // As a job's restore opens them: by their index; sections read one at a time as key groups are restored, each checked by its CRC.
    const files: StreamedSnapshotFile[] = [];
    for (const ref of chain) files.push(await storage.openSharedFile(ref, "index"));
    const readMs = performance.now() - t;
    sample();
    const meta = new Map(states.map((m) => [m.name, m]));
    const restored = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0), storeDir: join(home, "restored"), cacheSize: CACHE, cacheBytes: CACHE_BYTES, incremental: true });
    for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
      // As a job's restore does (executor/checkpoint-restore.ts): the chain's cells, decoded once, straight to the backend.
      const cells = chainKeyGroupCells(files, kg, (name) => meta.get(name));
      if (cells !== undefined) restored.restoreKeyGroupCells(kg, cells, states);
      sample();
    }
    restoreMs = performance.now() - t;
    files.length = 0;
    // Spot check: a key changed in phase 3 reads back with its count.
    random = 12_345;
    const k = Math.floor(next() * KEYS);
    restored.setCurrentKey(k, kgOf(k));
    const back = restored.getState(STATE).value();
    if (back?.id !== k || back.count < 1) throw new Error(`restored key ${k}: ${JSON.stringify(back)?.slice(0, 80)}`);
    log(`restore ${s(restoreMs)} (files read in ${s(readMs)}); restored store ${gb(dirBytes(join(home, "restored")))}; ${phase()}`);
    restored.dispose();
  }

  console.log(`\n| keys | value | full checkpoint | incremental (${CHANGED * 100} % changed) | incremental ÷ full (bytes, time) | restore | load | peak V8 heap | peak RSS |`);
  console.log("|---|---|---|---|---|---|---|---|---|");
  console.log(
    `| ${KEYS.toLocaleString("en")} | ~${VALUE_BYTES} B | ${gb(full.bytes)}, ${s(full.ms)} | ${mb(delta.bytes)}, ${s(delta.ms)} | ${(delta.bytes / full.bytes).toFixed(4)}, ${(delta.ms / full.ms).toFixed(4)} | ${restoreMs === undefined ? "—" : s(restoreMs)} | ${rate(KEYS, loadMs)} | ${gb(peakHeap)} | ${gb(peakRss())} |`,
  );
  if (local !== undefined) {
    console.log(
      `\nlocal recovery: the chain's files opened in ${s(local.verifyMs)}, the store rolled back to the incremental checkpoint in ${s(local.ms)} (${local.read.toLocaleString("en")} records read, ${local.records.toLocaleString("en")} written): ${s(local.verifyMs + local.ms)} in all`,
    );
  }
  console.log(`\nsync parts: full ${baseSyncMs.toFixed(1)} ms, incremental ${deltaSyncMs.toFixed(1)} ms; updates ${rate(updates, updateMs)}; load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}`);
} finally {
  rmSync(home, { recursive: true, force: true });
}
