/**
 * Incremental checkpoints of the disk state backend (issue 29): bytes and time of a checkpoint
 * after 1 % of the keys changed, against a full checkpoint of the same state measured in the same
 * run. One operator subtask (128 key groups) with a value state (a small record) per key, a cache
 * of 10 % of the keys; the state is loaded, then `rounds` times: 1 % of the keys (uniform) are
 * updated, and two snapshots are taken at that point — the full one (canonical key groups, what
 * a checkpoint without incremental mode and every savepoint writes) and the incremental one (a
 * delta on the chain) — each serialized and written as a file to local disk with fsync
 * (LocalCheckpointStorage). Also the synchronous part of each snapshot, and the time to read the
 * state back from the last chain (base and deltas) into the canonical format.
 *
 *   node -C eddy-source --import tsx bench/incremental-checkpoint.ts [--keys 1000000] [--rounds 3]
 *
 * Reports medians and the ratio delta / full of bytes and time.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ByteWriter } from "../packages/eddy/src/core/codec/bytes.ts";
import { ManualClock } from "../packages/eddy/src/core/clock.ts";
import { encodeSnapshotFileChunks, type SectionSource } from "../packages/eddy/src/checkpoint/format/container.ts";
import { materializeKeyGroup, SHARED_BASE_KIND, SHARED_DELTA_KIND, SHARED_KEYED_SECTION } from "../packages/eddy/src/checkpoint/format/keyed-chain.ts";
import { LocalCheckpointStorage } from "../packages/eddy/src/checkpoint/storage.ts";
import { ValueStateDescriptor } from "../packages/eddy/src/state/descriptors.ts";
import { DiskKeyedStateBackend } from "../packages/eddy/src/state/disk-keyed-state-backend.ts";
import type { HeapKeyedStateSnapshot } from "../packages/eddy/src/state/heap-snapshot.ts";
import type { SharedFileRef } from "../packages/eddy/src/state/incremental-snapshot.ts";
import type { KeyedStateMeta } from "../packages/eddy/src/state/keyed-state-meta.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({ options: { keys: { type: "string", default: "1000000" }, rounds: { type: "string", default: "3" } } });
const KEYS = Number(values.keys);
const ROUNDS = Number(values.rounds);
const RANGE = { start: 0, end: 127 };
const kgOf = (k: number): number => k % 128;
const STATE = new ValueStateDescriptor<{ id: number; count: number; name: string }>("state", { copy: "none" });

const home = mkdtempSync(join(tmpdir(), "eddy-bench-inc-"));
const storage = new LocalCheckpointStorage({ rootDir: home, jobId: "bench" });
let files = 0;

/** Serializes `sections` of every key group (by `write`) and writes them as one file with fsync; bytes and ms. */
async function persist(kind: string, write: (kg: number, out: ByteWriter) => boolean): Promise<{ bytes: number; ms: number; ref: SharedFileRef; sections: { name: string; keyGroup: number; bytes: Uint8Array }[] }> {
  const start = performance.now();
  const out = new ByteWriter(4 * 1024 * 1024);
  const sections: { name: string; keyGroup: number; bytes: Uint8Array }[] = [];
  for (let kg = RANGE.start; kg <= RANGE.end; kg++) if (write(kg, out)) sections.push({ name: SHARED_KEYED_SECTION, keyGroup: kg, bytes: out.take() });
  const ref = await storage.writeSharedFile(`bench-${kind}-${files++}-0.kgs`, encodeSnapshotFileChunks(kind, {}, sections));
  return { bytes: ref.size, ms: performance.now() - start, ref, sections };
}

const loadStart = performance.now();
const b = new DiskKeyedStateBackend({ keyGroupRange: RANGE, clock: new ManualClock(0), storeDir: join(home, "store"), cacheSize: Math.max(1, KEYS / 10), incremental: true, maxChainLength: 1_000 });
for (let k = 0; k < KEYS; k++) {
  b.setCurrentKey(k, kgOf(k));
  b.getState(STATE).update({ id: k, count: 0, name: `key-${k}` });
}
const loadMs = performance.now() - loadStart;

// The first incremental snapshot is the chain's base.
let chain: SharedFileRef[] = [];
let chainFiles: SectionSource[] = [];
let states: readonly KeyedStateMeta[] = [];
{
  const base = b.snapshot({ incremental: true });
  states = base.states;
  const written = await persist(SHARED_BASE_KIND, (kg, out) => base.shared!.writeKeyGroup(kg, out));
  chain = [written.ref];
  base.shared!.settle(chain);
  base.release();
}

const full = { bytes: [] as number[], ms: [] as number[], syncMs: [] as number[] };
const delta = { bytes: [] as number[], ms: [] as number[], syncMs: [] as number[] };
let random = 12_345;
const next = (): number => (random = (Math.imul(random, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < KEYS / 100; i++) {
    const k = Math.floor(next() * KEYS);
    b.setCurrentKey(k, kgOf(k));
    const v = b.getState(STATE).value()!;
    b.getState(STATE).update({ ...v, count: v.count + 1 });
  }
  let t = performance.now();
  const inc: HeapKeyedStateSnapshot = b.snapshot({ incremental: true });
  delta.syncMs.push(performance.now() - t);
  t = performance.now();
  const whole = b.snapshot();
  full.syncMs.push(performance.now() - t);
  const d = await persist(SHARED_DELTA_KIND, (kg, out) => inc.shared!.writeKeyGroup(kg, out));
  chain = [...chain, d.ref];
  inc.shared!.settle(chain);
  inc.release();
  delta.bytes.push(d.bytes);
  delta.ms.push(d.ms);
  chainFiles = [];
  const f = await persist(SHARED_BASE_KIND, (kg, out) => {
    if (!whole.hasKeyGroup(kg)) return false;
    whole.writeKeyGroup(kg, out);
    return true;
  });
  whole.release();
  full.bytes.push(f.bytes);
  full.ms.push(f.ms);
}
// Restore from the chain: read and verify every file, then each key group in the canonical format.
const restoreStart = performance.now();
for (const ref of chain) chainFiles.push(await storage.openSharedFile(ref));
const meta = new Map(states.map((m) => [m.name, m]));
const out = new ByteWriter(1 << 20);
for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
  materializeKeyGroup(chainFiles, kg, (name) => meta.get(name), out);
  out.reset();
}
const restoreMs = performance.now() - restoreStart;
b.dispose();
rmSync(home, { recursive: true, force: true });

const mb = (n: number): string => (n / 1024 / 1024).toFixed(1);
console.log(`${KEYS.toLocaleString("en")} keys (loaded in ${(loadMs / 1000).toFixed(1)} s), 1 % changed per round, ${ROUNDS} rounds; medians`);
console.log(`full checkpoint         ${mb(median(full.bytes))} MiB  ${median(full.ms).toFixed(0)} ms  (sync part ${median(full.syncMs).toFixed(1)} ms)`);
console.log(`incremental (delta)     ${mb(median(delta.bytes))} MiB  ${median(delta.ms).toFixed(0)} ms  (sync part ${median(delta.syncMs).toFixed(1)} ms)`);
console.log(`delta / full            bytes ${(median(delta.bytes) / median(full.bytes)).toFixed(3)}  time ${(median(delta.ms) / median(full.ms)).toFixed(3)}`);
console.log(`restore of the chain (base + ${chain.length - 1} deltas) into canonical key groups: ${(restoreMs / 1000).toFixed(1)} s`);
