/**
 * A CheckpointStorage for the exactly-once tests that fails once, the way a disk or an object
 * store would: `writeFile` (a task's asynchronous persist) or `commitManifest` (the coordinator,
 * after every task acknowledged and before anything is notified). Chosen by EDDY_CHK_STORAGE_FAULT
 * (JSON: { op, afterCalls, marker }); it fires once per marker file, on whichever thread gets there
 * first. Loaded by module reference (RunOptions.checkpointStorage), so worker threads use it too.
 */
import { writeFileSync } from "node:fs";
import { LocalCheckpointStorage, type CheckpointStorage, type FileRef } from "../../packages/eddy/src/checkpoint/storage.ts";
import type { CheckpointLocation } from "../../packages/eddy/src/cluster/thread-protocol.ts";

export interface StorageFault {
  readonly op: "writeFile" | "commitManifest";
  /** Calls of `op` (on this instance) that succeed before the fault. */
  readonly afterCalls: number;
  readonly marker: string;
}

export default function faultyStorage(location: CheckpointLocation): CheckpointStorage {
  const inner = new LocalCheckpointStorage(location);
  const raw = process.env.EDDY_CHK_STORAGE_FAULT;
  const fault = raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as StorageFault);
  let calls = 0;
  const maybeFail = (op: StorageFault["op"]): void => {
    if (fault === undefined || fault.op !== op || ++calls <= fault.afterCalls) return;
    try {
      writeFileSync(fault.marker, op, { flag: "wx" });
    } catch {
      return; // fired already
    }
    throw new Error(`injected storage fault in ${op}`);
  };
  return {
    async writeFile(checkpointId: number, fileName: string, chunks: readonly Uint8Array[]): Promise<FileRef> {
      maybeFail("writeFile");
      return inner.writeFile(checkpointId, fileName, chunks);
    },
    async commitManifest(checkpointId: number, manifest: unknown): Promise<void> {
      maybeFail("commitManifest");
      return inner.commitManifest(checkpointId, manifest);
    },
    readManifest: (id) => inner.readManifest(id),
    readFile: (id, ref) => inner.readFile(id, ref),
    listCheckpoints: () => inner.listCheckpoints(),
    hasManifest: (id) => inner.hasManifest(id),
    discard: (id) => inner.discard(id),
    checkpointDir: (id) => inner.checkpointDir(id),
  };
}
