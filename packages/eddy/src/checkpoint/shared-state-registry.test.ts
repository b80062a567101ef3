/**
 * Reference counts of shared files (SharedStateRetention) against a real checkpoint directory:
 * many checkpoints of one keyed subtask whose chains (a base, then deltas) overlap, an aborted
 * checkpoint's files (one a later chain lists, one nobody lists, one written after the next
 * checkpoint completed), retention of N, and a restart (a new registry rebuilt from storage) that
 * deletes the orphans of the earlier run but not files of a checkpoint in progress. After every
 * step the shared directory holds exactly the files the retained checkpoints list: none leaked,
 * none deleted while listed.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { encodeSnapshotFile } from "./format/container.ts";
import { MANIFEST_FORMAT, MANIFEST_VERSION, type CheckpointManifest } from "./format/manifest.ts";
import { CELL_FORMAT } from "../state/keyed-state-meta.ts";
import { manifestSharedFiles, SharedStateRetention, sharedFileCheckpointId } from "./shared-state-registry.ts";
import { LocalCheckpointStorage, type FileRef } from "./storage.ts";

const root = mkdtempSync(join(tmpdir(), "eddy-shared-registry-"));
after(() => rmSync(root, { recursive: true, force: true }));

function manifestOf(checkpointId: number, chain: readonly FileRef[]): CheckpointManifest {
  return {
    format: MANIFEST_FORMAT,
    version: MANIFEST_VERSION,
    jobId: "job",
    jobName: "job",
    checkpointId,
    generation: 0,
    isSavepoint: false,
    isFinal: false,
    triggeredAtMs: 1,
    completedAtMs: 2,
    operators: { count: { name: "Count", parallelism: 1, maxParallelism: 128 } },
    tasks: [
      {
        taskId: "0-0",
        chain: 0,
        subtask: 0,
        file: null,
        operators: [
          {
            operatorId: "count",
            operatorName: "Count",
            keyed: {
              keyGroupRange: { start: 0, end: 127 },
              states: [{ name: "count", kind: "value", ttl: undefined, copy: "deep", format: CELL_FORMAT }],
              watermark: null,
              ...(chain.length === 0 ? {} : { incremental: { chain } }),
            },
            operatorStates: [],
          },
        ],
      },
    ],
    enumerators: {},
  } as CheckpointManifest;
}

/** What the shared directory holds, and what the complete checkpoints list. */
async function state(storage: LocalCheckpointStorage, dir: string): Promise<{ present: string[]; listed: string[] }> {
  const listed = new Set<string>();
  for (const id of await storage.listCheckpoints()) {
    if (!(await storage.hasManifest(id))) continue;
    const manifest = (await storage.readManifest(id)) as CheckpointManifest;
    for (const ref of manifestSharedFiles(manifest)) listed.add(ref.name);
  }
  let present: string[] = [];
  try {
    present = readdirSync(join(dir, "shared")).sort();
  } catch {
    present = [];
  }
  return { present, listed: [...listed].sort() };
}

test("shared files under retention: exactly the retained checkpoints' files stay, over many checkpoints and a restart", async () => {
  const storage = new LocalCheckpointStorage({ rootDir: root, jobId: "job" });
  const jobDir = join(root, "job");
  const write = (id: number, kind: "base" | "delta", subtask = 0): Promise<FileRef> =>
    storage.writeSharedFile(`task-0-${subtask}-0-${kind}-${id}-${id.toString(16).padStart(4, "0")}.kgs`, [encodeSnapshotFile(`keyed-${kind}`, { id }, [])]);
  const RETAINED = 3;
  const MAX_CHAIN = 4;
  let retention = new SharedStateRetention(storage, {});
  let chain: FileRef[] = [];
  let sinceBase = 0;
  for (let id = 1; id <= 20; id++) {
    // A checkpoint that fails after writing its delta (never complete): a later one chains on it.
    const aborted = id === 7;
    const base = chain.length === 0 || sinceBase >= MAX_CHAIN;
    const ref = await write(id, base ? "base" : "delta");
    chain = base ? [ref] : [...chain, ref];
    sinceBase = base ? 0 : sinceBase + 1;
    if (aborted) {
      // Another subtask's file of the aborted checkpoint, which no chain will list: it goes at
      // the next retention (a checkpoint older than a complete one is dead).
      await write(id, "base", 1);
      continue;
    }
    // A checkpoint with nothing changed lists the previous chain as it is (no new file).
    const manifest = manifestOf(id, chain);
    await storage.commitManifest(id, manifest);
    await retention.retain(id, manifest, RETAINED);
    const { present, listed } = await state(storage, jobDir);
    assert.deepEqual(present, listed, `after checkpoint ${id}: the shared directory holds exactly what the retained checkpoints list`);
    for (const name of listed) assert.ok(retention.registry.references(name) >= 1, `${name} is referenced`);
    // A write of the aborted checkpoint that lands after the next one completed (a straggler).
    if (id === 8) await write(7, "delta", 2);
  }
  assert.equal((await storage.listCheckpoints()).length, RETAINED);
  // The aborted checkpoint's delta was kept while later chains listed it, and went with them.
  assert.ok(!(await state(storage, jobDir)).present.some((n) => sharedFileCheckpointId(n) === 7));

  // A restart: a new registry rebuilt from storage. An orphan of the earlier run (written by a
  // checkpoint that never completed) goes; a file this run wrote and no manifest lists yet stays.
  const orphan = await write(21, "delta");
  retention = new SharedStateRetention(storage, {});
  const inFlight = await write(23, "base"); // checkpoint 23 of the new run, still in progress
  const base22 = await write(22, "base");
  const manifest22 = manifestOf(22, [base22]);
  await storage.commitManifest(22, manifest22);
  await retention.retain(22, manifest22, RETAINED);
  const after = (await state(storage, jobDir)).present;
  assert.ok(!after.includes(orphan.name), "the earlier run's orphan was deleted");
  assert.ok(after.includes(inFlight.name), "a file of this run's checkpoint in progress was kept");
  // Listed by the checkpoints the new run retained (from the earlier run): kept.
  for (const id of await storage.listCheckpoints()) {
    for (const ref of manifestSharedFiles((await storage.readManifest(id)) as CheckpointManifest)) assert.ok(after.includes(ref.name), `${ref.name} of checkpoint ${id} kept`);
  }
  // Retention goes on from the rebuilt counts: after RETAINED more, only the new chain is left.
  let newChain = [base22];
  for (let id = 24; id < 24 + RETAINED; id++) {
    newChain = [...newChain, await write(id, "delta")];
    const manifest = manifestOf(id, newChain);
    await storage.commitManifest(id, manifest);
    await retention.retain(id, manifest, RETAINED);
  }
  const final = await state(storage, jobDir);
  assert.deepEqual(final.present, final.listed, "checkpoint 23 never completed and 24 did: its file went");
  assert.deepEqual(final.listed, newChain.map((r) => r.name).sort());
});
