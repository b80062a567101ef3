/**
 * The file sink's writer, one per sink subtask (Flink's FileWriter and its FileWriterBuckets):
 * records go to the in-progress part file of their bucket; at every barrier each part is either
 * rolled (closed, synced: pending, a committable) or kept open with its durable length in the
 * writer state; the committer renames pending parts into place once the checkpoint completes.
 *
 * Part names `<prefix>-<subtask>-<counter><suffix>` never repeat in a bucket directory:
 * - the counter of every subtask index is in the writer state and carried forward by whichever
 *   subtask holds it (the state is divided round-robin when the parallelism changes, so a counter
 *   can land at another subtask; it is kept, not dropped);
 * - the first time a writer uses a bucket it lists the directory once and moves its counter past
 *   every name of its subtask there, hidden or not (a fresh job writing into an old directory, or
 *   a rescale that handed this subtask's counter to another). When the restored state held this
 *   subtask's own counter, hidden in-progress files at or past it were started by the crashed
 *   attempt after the checkpoint's barrier: the listing deletes them.
 *
 * Durability at a barrier: a part's bytes are written and fsynced before its length is recorded
 * or it becomes pending, and the directories that gained a file (or were created) since the
 * previous barrier are fsynced too, so the checkpoint never names a file a power loss could undo.
 */
import { open, readdir, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Clock } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import type { SinkContext, SinkWriter } from "../sink.ts";
import { validateBucketId, type AssignBucket } from "./bucket-assigner.ts";
import { FileChannel, ioError, type IoBudget } from "./file-channel.ts";
import { readWriterStateEntry, type InProgressPart, type PartCounters, type PendingPart, type WriterStateEntry } from "./file-sink-state.ts";
import type { PartFile, PartPlacement } from "./part-file.ts";
import { recoverAction } from "./part-lifecycle.ts";
import { shouldRollOnCheckpoint, shouldRollOnEvent, shouldRollOnTime, type RollingPolicy } from "./rolling-policy.ts";

/** Everything a writer needs, fixed when the sink is built. */
export interface FileSinkConfig<T> {
  /** Absolute. */
  readonly dir: string;
  readonly partPrefix: string;
  readonly partSuffix: string;
  readonly policy: RollingPolicy;
  readonly clock: Clock;
  readonly assignBucket: (clock: Clock) => AssignBucket<T>;
  readonly createPart: (placement: PartPlacement, channel: FileChannel) => PartFile<T>;
  /** Bytes queued to the disk beyond which `write` makes the task wait. */
  readonly maxQueuedBytes: number;
}

interface Bucket<T> {
  /** Relative directory, validated and normalised. */
  readonly dir: string;
  part: PartFile<T> | undefined;
}

/** Writes between two time checks of the rolling policy (and no more often than every second). */
const TIME_CHECK_EVERY_WRITES = 4096;
const TIME_CHECK_EVERY_MS = 1_000;

const noop = (): void => {};
/** Keeps a promise from being reported unhandled while it waits in a list; awaiting it later still rejects. */
const held = <P extends Promise<unknown>>(p: P): P => {
  p.catch(noop);
  return p;
};

export class FileSinkWriter<T> implements SinkWriter<T> {
  readonly #config: FileSinkConfig<T>;
  readonly #subtask: number;
  readonly #assign: AssignBucket<T>;
  readonly #budget: IoBudget = { queuedBytes: 0, failure: undefined };
  /** Buckets with a part open or opened since the last barrier, by the id the assigner returned. */
  readonly #buckets = new Map<unknown, Bucket<T>>();
  /** The last bucket written to, by raw id: consecutive records of one bucket skip the map. */
  #lastId: unknown = undefined;
  #lastBucket: Bucket<T> | undefined;
  /** Bucket directories this writer has listed (counter moved past their names). */
  readonly #listed = new Set<string>();
  /** Next counter of every subtask index known (own and inherited); only grows. */
  readonly #counters = new Map<number, number>();
  /** The own counter the restored checkpoint held: hidden own parts at or past it are the crashed attempt's. */
  readonly #restoredOwnNext: number | undefined;
  /** Parts rolled since the last barrier (size or time), closing; committables at the next barrier. */
  #closing: Promise<PendingPart>[] = [];
  /** Restored in-progress parts, being cut back to their recorded length: committables at the next barrier. */
  #recovered: Promise<PendingPart>[] = [];
  /** Directories (absolute) that gained an entry since the last barrier: fsynced before it completes. */
  #unsyncedDirs = new Set<string>();
  /** What the last prepareCommit prepared, for the snapshotState call that follows it. */
  #barrier: Promise<{ readonly pending: PendingPart[]; readonly state: WriterStateEntry[] }> | undefined;
  #endOfInput = false;
  #writesSinceTimeCheck = 0;
  #lastTimeCheckMs: number;

  constructor(config: FileSinkConfig<T>, context: SinkContext) {
    this.#config = config;
    this.#subtask = context.subtaskIndex;
    this.#assign = config.assignBucket(config.clock);
    this.#lastTimeCheckMs = config.clock.now();
    for (const raw of context.restoredState ?? []) {
      const entry = readWriterStateEntry(raw);
      if (entry.kind === "counters") {
        for (const [subtask, next] of entry.next) this.#counters.set(subtask, Math.max(next, this.#counters.get(subtask) ?? 0));
      } else {
        this.#recovered.push(held(this.#recover(entry)));
      }
    }
    this.#restoredOwnNext = this.#counters.get(this.#subtask);
  }

  // hot path
  write(value: T, timestamp: number | undefined): void | Promise<void> {
    if (this.#budget.failure !== undefined) throw this.#budget.failure;
    const id = this.#assign(value, timestamp);
    const bucket = id === this.#lastId ? this.#lastBucket : this.#buckets.get(id);
    if (bucket === undefined) return this.#firstOfBucket(id, value);
    this.#lastId = id;
    this.#lastBucket = bucket;
    this.#append(bucket, value);
    if (++this.#writesSinceTimeCheck >= TIME_CHECK_EVERY_WRITES) this.#checkTime();
    if (this.#budget.queuedBytes > this.#config.maxQueuedBytes) return this.#drained();
  }

  #append(bucket: Bucket<T>, value: T): void {
    const part = bucket.part ?? (bucket.part = this.#newPart(bucket));
    part.append(value);
    if (shouldRollOnEvent(this.#config.policy, part)) this.#roll(bucket);
  }

  /** A bucket not in the map: validated, listed once, then written to. The task waits for the listing. */
  #firstOfBucket(id: unknown, value: T): void | Promise<void> {
    const dir = validateBucketId(id);
    const start = (): void => {
      const bucket: Bucket<T> = { dir, part: undefined };
      this.#buckets.set(id, bucket);
      this.#lastId = id;
      this.#lastBucket = bucket;
      this.#append(bucket, value);
    };
    if (this.#listed.has(dir)) return start();
    return this.#list(dir).then(start);
  }

  /** Moves this subtask's counter past its part names in `dir`, deleting the crashed attempt's leftovers. */
  async #list(dir: string): Promise<void> {
    const path = join(this.#config.dir, dir);
    let names: string[];
    try {
      names = await readdir(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw ioError("list", path, e);
      names = [];
      // Created by the part's open: it and the directories above it up to the sink's need a sync.
      for (let d = path; d.length > this.#config.dir.length; d = dirname(d)) this.#unsyncedDirs.add(dirname(d));
    }
    const own = new RegExp(`^(\\.?)${escapeRegExp(this.#config.partPrefix)}-${this.#subtask}-(\\d+)`);
    let next = this.#counters.get(this.#subtask) ?? 0;
    for (const name of names) {
      const m = own.exec(name);
      if (m === null) continue;
      const counter = Number(m[2]);
      if (m[1] === "." && name.endsWith(".inprogress") && this.#restoredOwnNext !== undefined && counter >= this.#restoredOwnNext) {
        await unlink(join(path, name)).catch((e: unknown) => {
          throw ioError("delete the leftover in-progress file", join(path, name), e);
        });
        continue;
      }
      next = Math.max(next, counter + 1);
    }
    this.#counters.set(this.#subtask, next);
    this.#listed.add(dir);
  }

  #newPart(bucket: Bucket<T>): PartFile<T> {
    const counter = this.#counters.get(this.#subtask) ?? 0;
    this.#counters.set(this.#subtask, counter + 1);
    const name = `${this.#config.partPrefix}-${this.#subtask}-${counter}${this.#config.partSuffix}`;
    const tmp = `.${name}.inprogress`;
    const dirPath = join(this.#config.dir, bucket.dir);
    this.#unsyncedDirs.add(dirPath);
    const channel = new FileChannel(join(dirPath, tmp), this.#budget);
    return this.#config.createPart({ bucket: bucket.dir, tmp, name, openedAtMs: this.#config.clock.now() }, channel);
  }

  #roll(bucket: Bucket<T>): void {
    const part = bucket.part!;
    bucket.part = undefined;
    this.#closing.push(held(part.closeForCommit()));
  }

  /** Stamps the activity since the last check and rolls parts whose time is up. */
  #checkTime(): void {
    this.#writesSinceTimeCheck = 0;
    const now = this.#config.clock.now();
    if (now - this.#lastTimeCheckMs < TIME_CHECK_EVERY_MS) return;
    this.#lastTimeCheckMs = now;
    for (const bucket of this.#buckets.values()) {
      const part = bucket.part;
      if (part === undefined) continue;
      stamp(part, now);
      if (shouldRollOnTime(this.#config.policy, part, now)) this.#roll(bucket);
    }
  }

  /** Resolves once every byte queued so far is written: the task reads no input until then. */
  #drained(): Promise<void> {
    const waits: Promise<unknown>[] = [...this.#closing];
    for (const b of this.#buckets.values()) if (b.part !== undefined) waits.push(b.part.flush());
    return Promise.all(waits).then(noop);
  }

  prepareCommit(): Promise<readonly PendingPart[]> {
    if (this.#budget.failure !== undefined) throw this.#budget.failure;
    const now = this.#config.clock.now();
    const pending = this.#recovered.concat(this.#closing);
    this.#recovered = [];
    this.#closing = [];
    const kept: Promise<InProgressPart>[] = [];
    for (const [id, bucket] of this.#buckets) {
      const part = bucket.part;
      if (part === undefined) {
        // Idle since the last barrier: forgotten (its directory stays listed).
        this.#buckets.delete(id);
        continue;
      }
      stamp(part, now);
      if (this.#endOfInput || part.persist === undefined || shouldRollOnCheckpoint(this.#config.policy, part, now)) {
        bucket.part = undefined;
        pending.push(part.closeForCommit());
      } else {
        kept.push(part.persist().then((length) => ({ v: 1, kind: "in-progress", bucket: part.bucket, tmp: part.tmp, name: part.name, length })));
      }
    }
    this.#lastId = undefined;
    this.#lastBucket = undefined;
    // Read now: every counter given out before the barrier is below these.
    const counters: PartCounters = { v: 1, kind: "counters", next: [...this.#counters] };
    const dirs = [...this.#unsyncedDirs];
    this.#unsyncedDirs = new Set();
    const barrier = (async () => {
      const [parts, inProgress] = await Promise.all([Promise.all(pending), Promise.all(kept)]);
      for (const d of dirs) await syncDirectory(d);
      return { pending: parts, state: [counters, ...inProgress] };
    })();
    this.#barrier = held(barrier);
    return barrier.then((b) => b.pending);
  }

  snapshotState(): Promise<readonly WriterStateEntry[]> {
    const barrier = this.#barrier;
    this.#barrier = undefined;
    if (barrier === undefined) throw new EddyError("SINK_CLOSED", "file sink: snapshotState without prepareCommit at the barrier");
    return barrier.then((b) => b.state);
  }

  flush(endOfInput: boolean): Promise<void> {
    if (endOfInput) this.#endOfInput = true;
    return this.#drained();
  }

  close(): void {
    for (const b of this.#buckets.values()) b.part?.abandon();
    this.#buckets.clear();
  }

  /** A restored in-progress part: cut back to its durable length and synced, it is pending. */
  async #recover(entry: InProgressPart): Promise<PendingPart> {
    const tmp = join(this.#config.dir, entry.bucket, entry.tmp);
    const target = join(this.#config.dir, entry.bucket, entry.name);
    const action = recoverAction(entry.length, { tmpSize: await sizeOf(tmp), targetExists: (await sizeOf(target)) !== undefined });
    if (action.kind === "fail") throw new EddyError("FILE_SINK_RECOVERY_FAILED", `file sink could not recover '${tmp}': ${action.reason}`);
    try {
      const handle = await open(tmp, "r+");
      try {
        await handle.truncate(action.length);
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch (e) {
      throw ioError("truncate the in-progress file", tmp, e);
    }
    return { v: 1, bucket: entry.bucket, tmp: entry.tmp, name: entry.name, length: action.length };
  }
}

/** Records written since the last stamp count as activity now. */
function stamp<T>(part: PartFile<T>, now: number): void {
  if (!part.touched) return;
  part.touched = false;
  part.lastWriteAtMs = now;
}

/** The file's size, or undefined when it does not exist. */
export async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw ioError("read the status of", path, e);
  }
}

/** Makes a directory's entries (a created file, a rename) durable. */
export async function syncDirectory(path: string): Promise<void> {
  try {
    const handle = await open(path, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (e) {
    throw ioError("sync the directory", path, e);
  }
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
