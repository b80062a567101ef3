/**
 * A CheckpointStorage for the exactly-once tests that fails once, the way a disk or an object
 * store would: `writeFile` (a task's asynchronous persist) or `commitManifest` (the coordinator,
 * after every task acknowledged and before anything is notified). Chosen by EDDY_CHK_STORAGE_FAULT
 * (JSON: { op, afterCalls, marker }); it fires once per marker file, on whichever thread gets there
 * first. Loaded by module reference (RunOptions.checkpointStorage), so worker threads use it too.
 *
 * With `wholeCheckpoint`, every later `writeFile` of the failed checkpoint (on this instance)
 * fails too, so no directory of it ever exists; with `discardDelayMs`, a discard happens that
 * much later than asked, as a slow disk or object store would. Any `writeFile` of a checkpoint id
 * after a discard of that id was asked for is reported in `<marker>.reused`: the id of an
 * aborted checkpoint was issued again while its discard was still pending.
 *
 * Independently of any fault, EDDY_CHK_MANIFEST_DELAY_MS delays the manifest of every periodic
 * (not final) checkpoint, as a slow store would: the final checkpoint then comes while one is
 * still being committed.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { LocalCheckpointStorage, type CheckpointLocation, type CheckpointStorage, type FileRef } from "eddy";

export interface StorageFault {
  readonly op: "writeFile" | "commitManifest";
  /** Calls of `op` (on this instance) that succeed before the fault. */
  readonly afterCalls: number;
  readonly marker: string;
  readonly wholeCheckpoint?: boolean;
  readonly discardDelayMs?: number;
}

export default function faultyStorage(location: CheckpointLocation): CheckpointStorage {
  const inner = new LocalCheckpointStorage(location);
  const raw = process.env.EDDY_CHK_STORAGE_FAULT;
  const fault = raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as StorageFault);
  const manifestDelayMs = Number(process.env.EDDY_CHK_MANIFEST_DELAY_MS ?? 0);
  let calls = 0;
  let failed: number | undefined;
  const discarded = new Set<number>();
  const maybeFail = (op: StorageFault["op"], checkpointId: number): void => {
    if (fault === undefined || fault.op !== op) return;
    if (fault.wholeCheckpoint === true && failed === checkpointId) throw new Error(`injected storage fault in ${op} (checkpoint ${checkpointId} again)`);
    if (++calls <= fault.afterCalls) return;
    try {
      writeFileSync(fault.marker, op, { flag: "wx" });
    } catch {
      return; // fired already
    }
    failed = checkpointId;
    throw new Error(`injected storage fault in ${op}`);
  };
  return {
    async writeFile(checkpointId: number, fileName: string, chunks: readonly Uint8Array[] | AsyncIterable<Uint8Array>, written?: (chunks: readonly Uint8Array[]) => void): Promise<FileRef> {
      if (fault !== undefined && discarded.has(checkpointId)) appendFileSync(`${fault.marker}.reused`, `${checkpointId}\n`);
      maybeFail("writeFile", checkpointId);
      return inner.writeFile(checkpointId, fileName, chunks, written);
    },
    async commitManifest(checkpointId: number, manifest: unknown): Promise<void> {
      maybeFail("commitManifest", checkpointId);
      if (manifestDelayMs > 0 && (manifest as { isFinal?: unknown }).isFinal !== true) await sleep(manifestDelayMs);
      return inner.commitManifest(checkpointId, manifest);
    },
    readManifest: (id) => inner.readManifest(id),
    writeSharedFile: (name, chunks, written) => inner.writeSharedFile(name, chunks, written),
    openSharedFile: (ref) => inner.openSharedFile(ref),
    deleteSharedFile: (name) => inner.deleteSharedFile(name),
    listSharedFiles: () => inner.listSharedFiles(),
    readFile: (id, ref) => inner.readFile(id, ref),
    listCheckpoints: () => inner.listCheckpoints(),
    hasManifest: (id) => inner.hasManifest(id),
    async discard(id: number): Promise<void> {
      discarded.add(id);
      if (fault?.discardDelayMs !== undefined) await sleep(fault.discardDelayMs);
      return inner.discard(id);
    },
    checkpointDir: (id) => inner.checkpointDir(id),
  };
}
