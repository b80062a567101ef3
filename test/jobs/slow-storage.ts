/**
 * A CheckpointStorage whose task files take EDDY_SLOW_STORAGE_MS to write, logging "start <id>
 * <file>" and "end <id> <file>" lines to EDDY_SLOW_STORAGE_LOG around each write: a test can see
 * whether a write a worker had started was allowed to finish before the worker was terminated
 * (test/worker-shutdown.test.ts). Loaded by module reference, so worker threads use it too.
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { LocalCheckpointStorage, type CheckpointLocation, type CheckpointStorage, type FileRef } from "eddy";

export default function slowStorage(location: CheckpointLocation): CheckpointStorage {
  const storage = new LocalCheckpointStorage(location);
  const log = process.env.EDDY_SLOW_STORAGE_LOG!;
  const delayMs = Number(process.env.EDDY_SLOW_STORAGE_MS ?? 300);
  const write = storage.writeFile.bind(storage);
  // Everything else is the local storage's own.
  storage.writeFile = async (checkpointId: number, fileName: string, chunks: readonly Uint8Array[]): Promise<FileRef> => {
    appendFileSync(log, `start ${checkpointId} ${fileName}\n`);
    await sleep(delayMs);
    const ref = await write(checkpointId, fileName, chunks);
    appendFileSync(log, `end ${checkpointId} ${fileName}\n`);
    return ref;
  };
  return storage;
}
