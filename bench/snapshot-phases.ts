/**
 * Where one task's checkpoint of a large heap keyed state spends its time, phase by phase, on
 * one thread (no job, no workers): the keyed counter of bench/jobs/checkpoints.ts with `keys`
 * keys in 64 of 128 key groups (one of two subtasks at the default max parallelism).
 *
 *   node -C eddy-source --import tsx bench/snapshot-phases.ts [keys=500000] [rounds=5]
 *
 * Phases: the synchronous snapshot; serializing the key groups; building the file (sections,
 * CRCs); the file's SHA-256; writing it durably. Then the cost copy-on-write adds to processing:
 * the same number of updates right after a snapshot, against the same without one (medians).
 * Last, what a task does: serializing while processing goes on between the serializer's slices
 * (steps of STEP updates); its extra cost is its time minus, right after, serializing another
 * snapshot alone and then doing the same number of updates in the same steps.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SystemClock } from "../packages/eddy/src/core/clock.ts";
import { assignToKeyGroup } from "../packages/eddy/src/core/key-group.ts";
import { HeapKeyedStateBackend } from "../packages/eddy/src/state/heap-keyed-state-backend.ts";
import { ValueStateDescriptor } from "../packages/eddy/src/state/descriptors.ts";
import { releaseSectionBuffers, serializeTaskSnapshot } from "../packages/eddy/src/runtime/checkpointing.ts";
import { encodeSnapshotFileChunks } from "../packages/eddy/src/checkpoint/format/container.ts";
import { LocalCheckpointStorage, fileChecksum } from "../packages/eddy/src/checkpoint/storage.ts";
import { median } from "./stats.ts";

const KEYS = Number(process.argv[2] ?? 500_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const MAX_PARALLELISM = 128;
const PADDING = "-".repeat(56);
const STEP = 10_000;

interface Counter {
  count: number;
  last: number;
  label: string;
}

// The keys of subtask 0 of 2: key groups [0, 63].
const keys: number[] = [];
const groups: number[] = [];
for (let k = 0; keys.length < KEYS; k++) {
  const kg = assignToKeyGroup(k, MAX_PARALLELISM);
  if (kg < 64) {
    keys.push(k);
    groups.push(kg);
  }
}

const backend = new HeapKeyedStateBackend({ keyGroupRange: { start: 0, end: 63 }, clock: new SystemClock() });
const descriptor = new ValueStateDescriptor<Counter>("counter");
const state = backend.getState(descriptor);

/** `n` updates, walking the keys in a fixed pseudo-random order (every key once per KEYS updates). */
function updateKeys(n: number, from: number): void {
  for (let i = 0; i < n; i++) {
    const at = ((from + i) * 7919) % KEYS;
    backend.setCurrentKey(keys[at]!, groups[at]!);
    const c = state.value();
    state.update(c === undefined ? { count: 1, last: i, label: `key-${keys[at]}${PADDING}` } : { count: c.count + 1, last: i, label: c.label });
  }
}

updateKeys(KEYS, 0);
const dir = mkdtempSync(join(tmpdir(), "eddy-snapshot-phases-"));
const storage = new LocalCheckpointStorage({ rootDir: dir, jobId: "bench" });
const phases = new Map<string, number[]>();
const record = (name: string, ms: number): void => void (phases.get(name) ?? phases.set(name, []).get(name)!).push(ms);
let size = 0;
let offset = KEYS;
try {
  for (let round = 0; round < ROUNDS; round++) {
    // Processing without a snapshot in flight (every key once), as the baseline.
    let t = performance.now();
    updateKeys(KEYS, offset);
    offset += KEYS;
    record("process (no snapshot)", performance.now() - t);

    t = performance.now();
    const keyed = backend.snapshot();
    record("sync snapshot", performance.now() - t);

    // Copy-on-write: the same work while the snapshot holds every group.
    t = performance.now();
    updateKeys(KEYS, offset);
    offset += KEYS;
    record("process (after snapshot)", performance.now() - t);

    t = performance.now();
    const { sections, operators } = await serializeTaskSnapshot([
      { operatorId: "counting", operatorName: "counting", keyed: Object.assign(keyed, { watermark: 0 }), operatorStates: [] },
    ]);
    record("serialize key groups", performance.now() - t);

    t = performance.now();
    const chunks = encodeSnapshotFileChunks("task", { operators }, sections);
    record("build file", performance.now() - t);
    size = chunks.reduce((n, c) => n + c.length, 0);

    t = performance.now();
    fileChecksum(...chunks);
    record("sha-256", performance.now() - t);

    t = performance.now();
    await storage.writeFile(round, `task-0-0.snap`, chunks);
    record("write file (incl. sha-256)", performance.now() - t);
    releaseSectionBuffers(sections);
    await storage.discard(round);

    // Serializing while processing goes on, as in a task.
    const interleaved = backend.snapshot();
    let serialized = false;
    let updates = 0;
    t = performance.now();
    const processing = (async () => {
      while (!serialized) {
        updateKeys(STEP, offset);
        offset += STEP;
        updates += STEP;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    })();
    const written = await serializeTaskSnapshot([
      { operatorId: "counting", operatorName: "counting", keyed: Object.assign(interleaved, { watermark: 0 }), operatorStates: [] },
    ]);
    serialized = true;
    await processing;
    const elapsed = performance.now() - t;
    releaseSectionBuffers(written.sections);
    // The control: the same serializing, then the same updates, one after the other.
    t = performance.now();
    const alone = backend.snapshot();
    const control = await serializeTaskSnapshot([
      { operatorId: "counting", operatorName: "counting", keyed: Object.assign(alone, { watermark: 0 }), operatorStates: [] },
    ]);
    releaseSectionBuffers(control.sections);
    for (let done = 0; done < updates; done += STEP) {
      updateKeys(STEP, offset);
      offset += STEP;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const apart = performance.now() - t;
    record("serialize while processing", elapsed);
    record("  updates meanwhile", updates);
    record("  the same, one after the other", apart);
    record("  extra cost", elapsed - apart);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

process.stdout.write(`${KEYS.toLocaleString("en")} keys in 64 key groups, file ${(size / 1e6).toFixed(1)} MB, median of ${ROUNDS}\n`);
for (const [name, values] of phases) process.stdout.write(`${name.padEnd(30)} ${median(values).toFixed(1).padStart(8)} ms\n`);
const cow = median(phases.get("process (after snapshot)")!) - median(phases.get("process (no snapshot)")!);
process.stdout.write(`${"copy-on-write (difference)".padEnd(30)} ${cow.toFixed(1).padStart(8)} ms\n`);
