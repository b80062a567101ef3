/**
 * Exactly-once by write-ahead (docs/connectors/kafka.md, "Exactly-once with the real client"): for
 * clients that cannot commit a transaction another producer opened (librdkafka), and for any
 * client with `exactlyOnceMode: "write-ahead"`. The pattern is Flink's GenericWriteAheadSink with
 * its CheckpointCommitter, made atomic by Kafka's transactions:
 *
 * 1. between barriers the writer buffers the serialized records (at most `maxBufferedBytes`; over
 *    it the writer fails with KAFKA_SINK_FAILED: waiting would hold back the barrier that empties
 *    the buffer); at the barrier of checkpoint c they become one committable,
 *    `{ owner: subtask, checkpointId: c, records }`, stored in the checkpoint (the sink operator's
 *    pending committables), not in Kafka;
 * 2. when c completes the committer writes it in one transaction of the transactional id
 *    `<prefix>-<owner>` (stable: its `initTransactions` fences every older producer of the id and
 *    aborts what it left open) together with the marker: offset c of partition 0 of the marker topic,
 *    sent with `sendOffsetsToTransaction` to the group `<prefix>-marker-<owner>`; records and
 *    marker become visible together or not at all;
 * 3. the first time a committer uses an owner's id (after a start, a restore, a failed commit) it
 *    initializes it (fencing) and then reads the marker; a committable the marker says was written
 *    is skipped, any other is written (step 2). One owner's committables are written in checkpoint
 *    order by one committer (Sink.committableOwner: after a rescale all of an old subtask's
 *    committables go to the committer of subtask `owner % parallelism`).
 *
 * What "the marker says was written" means. Checkpoint ids alone cannot say it: they go back when a
 * job restores an older checkpoint into a new checkpoint directory (or after the newer ones were
 * deleted), and a fresh job may reuse an old prefix; comparing ids would then skip new committables
 * whose ids the old run had already passed (data loss). So every writer is a *life* (a random id,
 * from its creation to its task's end) whose checkpoint ids only grow, and knows its *ancestry*:
 * the life it was restored from and the checkpoint id it continues after, that life's ancestry, and
 * so on (kept in the writer's state; nearest first, at most MAX_ANCESTRY). Committables and the
 * marker carry their life and ancestry (the marker in its offset's metadata string). The outputs of
 * a job form a tree: a restore branches off at the restored checkpoint. A committable was written
 * exactly when it lies on the path from the root to the marker: it is of the marker's life at or
 * below the marker's checkpoint id, or of an ancestor life at or below the checkpoint the path left
 * that life at. Anything else (a new committable after a restore, a fresh start with an old
 * prefix) is written. `alreadyWritten` decides it.
 */
import { randomBytes } from "node:crypto";
import { EddyError, type Committer, type SinkContext, type SinkWriter } from "eddy";
import { KafkaClientError, kafkaErrorCode, type CommittedOffset, type KafkaClient, type KafkaClientFactory, type KafkaHeader, type KafkaProducer, type ProducerRecord, type TopicPartition } from "./client.ts";
import { partitionForKey } from "./murmur2.ts";
import { failsTask } from "./serde.ts";

/** A record serialized, its partition not yet chosen (the committer chooses it when it writes). */
export interface SerializedRecord {
  readonly topic: string;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly KafkaHeader[];
  readonly timestamp: number | undefined;
}

/** The lives a writer continues, nearest first: `[life, the last checkpoint id of it that is on this writer's history]`. */
export type Ancestry = readonly (readonly [life: string, upTo: number])[];

/** How many ancestors a writer remembers (the marker's metadata stays under ~600 bytes; Kafka's bound is 4,096). */
export const MAX_ANCESTRY = 16;

/** The committable of one subtask and checkpoint: the records themselves. */
export interface WriteAheadCommittable {
  readonly v: 2;
  readonly kind: "write-ahead";
  /** The writer subtask that made it: its records go through `<prefix>-<owner>`. */
  readonly owner: number;
  /** null: the end of input of a job without checkpointing (written without a marker: there is no restore). */
  readonly checkpointId: number | null;
  /** The writer's life and ancestry (see the top of this file). */
  readonly life: string;
  readonly ancestry: Ancestry;
  readonly records: readonly SerializedRecord[];
}

/** What a writer keeps in the checkpoint: who it is, for the writer restored from it. */
interface WriterLineage {
  readonly v: 1;
  readonly kind: "write-ahead-lineage";
  readonly owner: number;
  readonly life: string;
  readonly ancestry: Ancestry;
}

/** The last committable written through an owner's id, as its marker says. `life` undefined: a marker without Eddy's metadata (ids compared). */
export interface Marker {
  readonly checkpointId: number;
  readonly life: string | undefined;
  readonly ancestry: Ancestry;
}

const MARKER_METADATA = "eddy-wa/1";

export function markerMetadata(life: string, ancestry: Ancestry): string {
  return [MARKER_METADATA, life, ...ancestry.map(([l, upTo]) => `${l}:${upTo}`)].join(" ");
}

export function readMarker(committed: CommittedOffset | undefined): Marker | undefined {
  if (committed === undefined) return undefined;
  const foreign: Marker = { checkpointId: committed.offset, life: undefined, ancestry: [] };
  const [tag, life, ...rest] = committed.metadata.split(" ");
  if (tag !== MARKER_METADATA || life === undefined || life === "") return foreign;
  const ancestry: [string, number][] = [];
  for (const a of rest) {
    const i = a.lastIndexOf(":");
    const upTo = Number(a.slice(i + 1));
    if (i <= 0 || !Number.isSafeInteger(upTo)) return foreign;
    ancestry.push([a.slice(0, i), upTo]);
  }
  return { checkpointId: committed.offset, life, ancestry };
}

/**
 * Whether the committable of `life` and `checkpointId` lies on the history the marker ends (see the
 * top of this file). A marker without Eddy's metadata (written by something else into the group)
 * falls back to comparing checkpoint ids.
 */
export function alreadyWritten(life: string, checkpointId: number, marker: Marker | undefined): boolean {
  if (marker === undefined) return false;
  if (marker.life === undefined || marker.life === life) return checkpointId <= marker.checkpointId;
  for (const [l, upTo] of marker.ancestry) if (l === life) return checkpointId <= upTo;
  return false;
}

/** A new writer life's ancestry: the restored writer of the same subtask (if the restore handed its state here), then its ancestry. */
function ancestryOf(context: SinkContext): Ancestry {
  const restoredId = context.restoredCheckpointId;
  if (restoredId === undefined) return [];
  for (const s of context.restoredState ?? []) {
    const w = s as WriterLineage;
    if (w === null || typeof w !== "object" || w.kind !== "write-ahead-lineage") continue;
    if (w.v !== 1 || typeof w.life !== "string" || !Array.isArray(w.ancestry)) throw new EddyError("CHECKPOINT_CORRUPT", `KafkaSink: a restored write-ahead writer state is not readable: ${JSON.stringify(s)?.slice(0, 200)}`);
    if (w.owner === context.subtaskIndex) return [[w.life, restoredId] as const, ...w.ancestry].slice(0, MAX_ANCESTRY);
  }
  return [];
}

export interface WriteAheadConfig {
  readonly client: KafkaClientFactory;
  readonly prefix: string;
  readonly markerTopic: string;
  readonly transactionTimeoutMs: number;
  readonly maxBatchSize: number;
  readonly maxBufferedBytes: number;
  readonly partitioner: ((key: Uint8Array | null, partitions: number, topic: string) => number) | undefined;
}

export const laneTransactionalId = (prefix: string, owner: number): string => `${prefix}-${owner}`;
export const markerGroup = (prefix: string, owner: number): string => `${prefix}-marker-${owner}`;

/** The owner of a committable (Sink.committableOwner). */
export function committableOwner(c: unknown): number {
  return readWriteAheadCommittable(c).owner;
}

export function readWriteAheadCommittable(c: unknown): WriteAheadCommittable {
  const w = c as WriteAheadCommittable;
  if (w === null || typeof w !== "object" || w.v !== 2 || w.kind !== "write-ahead" || !Number.isSafeInteger(w.owner) || w.owner < 0 || !(w.checkpointId === null || Number.isSafeInteger(w.checkpointId)) || typeof w.life !== "string" || !Array.isArray(w.ancestry) || !Array.isArray(w.records)) {
    throw new EddyError("CHECKPOINT_CORRUPT", `KafkaSink: a restored committable is not a write-ahead committable: ${JSON.stringify(c)?.slice(0, 200)} (was the checkpoint taken with exactlyOnceMode "two-phase"?)`);
  }
  return w;
}

/**
 * Takes a record serialized asynchronously: `take` once it is, in write order (the task writes
 * nothing more until the promise `write` returned settles, and barriers wait for it). A serializer
 * error of the record goes to `reportBadRecord`; an EddyError (the registry) fails the writer.
 */
export function whenSerialized(record: Promise<SerializedRecord>, value: unknown, context: SinkContext, take: (record: SerializedRecord) => void | Promise<void>): Promise<void> {
  return record.then(take, (e: unknown) => {
    if (failsTask(e)) throw e;
    context.reportBadRecord(value, e);
  });
}

const recordBytes = (r: SerializedRecord): number => (r.key?.byteLength ?? 0) + (r.value?.byteLength ?? 0) + r.headers.reduce((n, [k, v]) => n + k.length + v.byteLength, 0) + 64;

export class WriteAheadWriter<T> implements SinkWriter<T> {
  readonly #c: WriteAheadConfig;
  readonly #context: SinkContext;
  readonly #serialize: (value: T, timestamp: number | undefined) => SerializedRecord | Promise<SerializedRecord>;
  readonly #life = randomBytes(8).toString("hex");
  readonly #ancestry: Ancestry;
  #buffer: SerializedRecord[] = [];
  #bytes = 0;

  constructor(config: WriteAheadConfig, context: SinkContext, serialize: (value: T, timestamp: number | undefined) => SerializedRecord | Promise<SerializedRecord>) {
    this.#c = config;
    this.#context = context;
    this.#serialize = serialize;
    this.#ancestry = ancestryOf(context);
  }

  // hot path
  write(value: T, timestamp: number | undefined): void | Promise<void> {
    let record: SerializedRecord | Promise<SerializedRecord>;
    try {
      record = this.#serialize(value, timestamp);
    } catch (e) {
      if (failsTask(e)) throw e;
      this.#context.reportBadRecord(value, e);
      return;
    }
    // Asynchronous serializers: the task waits, and the barrier after it, so the record is in this interval's buffer.
    if (record instanceof Promise) return whenSerialized(record, value, this.#context, (r) => this.#take(r));
    this.#take(record);
  }

  #take(record: SerializedRecord): void {
    this.#bytes += recordBytes(record);
    if (this.#bytes > this.#c.maxBufferedBytes) {
      throw new EddyError(
        "KAFKA_SINK_FAILED",
        `KafkaSink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex}): exactly-once (write-ahead) holds the records of a checkpoint interval until the checkpoint completes, and this interval's exceed maxBufferedBytes (${this.#c.maxBufferedBytes}) after ${this.#buffer.length} records; checkpoint more often or raise maxBufferedBytes`,
        { operator: this.#context.operatorName, subtask: this.#context.subtaskIndex },
      );
    }
    this.#buffer.push(record);
  }

  /** The records since the last barrier, as the committable of checkpoint `checkpointId`. */
  prepareCommit(checkpointId?: number): readonly WriteAheadCommittable[] {
    if (this.#buffer.length === 0) return [];
    const records = this.#buffer;
    this.#buffer = [];
    this.#bytes = 0;
    return [{ v: 2, kind: "write-ahead", owner: this.#context.subtaskIndex, checkpointId: checkpointId ?? null, life: this.#life, ancestry: this.#ancestry, records }];
  }

  /** Who this writer is, for the writer restored from this checkpoint (its ancestry). */
  snapshotState(): readonly WriterLineage[] {
    return [{ v: 1, kind: "write-ahead-lineage", owner: this.#context.subtaskIndex, life: this.#life, ancestry: this.#ancestry }];
  }

  close(): void {
    this.#buffer = [];
  }
}

/** One owner's transactional id, initialized by this committer, and its marker as read then. */
interface Lane {
  readonly producer: KafkaProducer;
  /** The last committable written through it (undefined: none). */
  marker: Marker | undefined;
}

/** Written, and skipped as written before (tests and metrics). */
export interface WriteAheadCounts {
  written: number;
  skipped: number;
}

export class WriteAheadCommitter implements Committer<unknown> {
  readonly #c: WriteAheadConfig;
  readonly #context: SinkContext;
  readonly #client: KafkaClient;
  readonly #lanes = new Map<number, Lane>();
  readonly #partitionCounts = new Map<string, number>();
  #roundRobin: number;
  readonly counts: WriteAheadCounts = { written: 0, skipped: 0 };

  constructor(config: WriteAheadConfig, context: SinkContext) {
    this.#c = config;
    this.#context = context;
    this.#client = config.client();
    this.#roundRobin = context.subtaskIndex;
  }

  async commit(committables: readonly unknown[]): Promise<void> {
    // In checkpoint order (the sink operator's); one owner's stay in that order.
    for (const c of committables.map(readWriteAheadCommittable)) {
      try {
        await this.#write(c);
      } catch (e) {
        // The next attempt initializes the id again (fencing) and reads the marker again: a commit
        // whose answer was lost may have gone through.
        await this.#dropLane(c.owner);
        throw this.#failure(e, c);
      }
    }
  }

  async #write(c: WriteAheadCommittable): Promise<void> {
    const lane = await this.#lane(c.owner);
    if (c.checkpointId !== null && alreadyWritten(c.life, c.checkpointId, lane.marker)) {
      this.counts.skipped++;
      return;
    }
    const records = await this.#partitioned(c.records);
    lane.producer.beginTransaction();
    const acks: Promise<readonly number[]>[] = [];
    for (let i = 0; i < records.length; i += this.#c.maxBatchSize) acks.push(lane.producer.send(records.slice(i, i + this.#c.maxBatchSize)));
    await Promise.all(acks);
    if (c.checkpointId !== null) {
      await lane.producer.sendOffsetsToTransaction([{ ...this.#markerPartition(), offset: c.checkpointId, metadata: markerMetadata(c.life, c.ancestry) }], markerGroup(this.#c.prefix, c.owner));
    }
    await lane.producer.commitTransaction();
    if (c.checkpointId !== null) lane.marker = { checkpointId: c.checkpointId, life: c.life, ancestry: c.ancestry };
    this.counts.written++;
  }

  #markerPartition(): TopicPartition {
    return { topic: this.#c.markerTopic, partition: 0 };
  }

  /** The owner's id initialized (older producers fenced, what they left open aborted), then its marker read. */
  async #lane(owner: number): Promise<Lane> {
    const known = this.#lanes.get(owner);
    if (known !== undefined) return known;
    const producer = this.#client.producer({ transactionalId: laneTransactionalId(this.#c.prefix, owner), transactionTimeoutMs: this.#c.transactionTimeoutMs });
    try {
      await producer.initTransactions();
      const [marker] = await this.#client.committedOffsets(markerGroup(this.#c.prefix, owner), [this.#markerPartition()]);
      const lane: Lane = { producer, marker: readMarker(marker) };
      this.#lanes.set(owner, lane);
      return lane;
    } catch (e) {
      await producer.close().catch(() => {});
      throw e;
    }
  }

  /** Closes the owners' producers and the client (the sink operator calls it when the task closes). */
  async close(): Promise<void> {
    const owners = [...this.#lanes.keys()];
    await Promise.allSettled(owners.map((o) => this.#dropLane(o)));
    await this.#client.close();
  }

  async #dropLane(owner: number): Promise<void> {
    const lane = this.#lanes.get(owner);
    if (lane === undefined) return;
    this.#lanes.delete(owner);
    await lane.producer.abortTransaction().catch(() => {});
    await lane.producer.close().catch(() => {});
  }

  async #partitioned(batch: readonly SerializedRecord[]): Promise<ProducerRecord[]> {
    const out: ProducerRecord[] = [];
    for (const r of batch) {
      let partitions = this.#partitionCounts.get(r.topic);
      if (partitions === undefined) {
        partitions = await this.#client.partitionCount(r.topic);
        this.#partitionCounts.set(r.topic, partitions);
      }
      const partition = choosePartition(this.#c.partitioner, r.key, partitions, r.topic, () => this.#roundRobin++);
      out.push({ topic: r.topic, partition, key: r.key, value: r.value, headers: r.headers, ...(r.timestamp === undefined ? {} : { timestamp: r.timestamp }) });
    }
    return out;
  }

  #failure(e: unknown, c: WriteAheadCommittable): EddyError {
    if (e instanceof EddyError) return e;
    const id = laneTransactionalId(this.#c.prefix, c.owner);
    const fenced = kafkaErrorCode(e) === "PRODUCER_FENCED" ? " (fenced: another producer initialized the id; is another job or attempt using the same transactionalIdPrefix?)" : "";
    return new EddyError("KAFKA_SINK_FAILED", `KafkaSink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex}) could not write checkpoint ${c.checkpointId ?? "(end of input)"}'s ${c.records.length} records of subtask ${c.owner} through ${id}${fenced}: ${e instanceof Error ? e.message : String(e)}`, {
      operator: this.#context.operatorName,
      subtask: this.#context.subtaskIndex,
      cause: e,
    });
  }
}

/** Kafka's default partitioner (murmur2 of the key; round robin without a key), or the sink's `partitioner`. */
export function choosePartition(partitioner: WriteAheadConfig["partitioner"], key: Uint8Array | null, partitions: number, topic: string, nextRoundRobin: () => number): number {
  if (partitioner === undefined) return key === null ? nextRoundRobin() % partitions : partitionForKey(key, partitions);
  const partition = partitioner(key, partitions, topic);
  if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) {
    throw new KafkaClientError("UNKNOWN_PARTITION", `the partitioner chose partition ${partition} of topic '${topic}', which has ${partitions}`);
  }
  return partition;
}
