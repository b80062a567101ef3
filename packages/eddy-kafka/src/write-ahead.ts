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
 *    initializes it (fencing) and then reads the marker: a committable whose checkpoint id is at or
 *    below it was written, one above it is written (step 2). One owner's committables are written
 *    in checkpoint order by one committer (Sink.committableOwner: after a rescale all of an old
 *    subtask's committables go to the committer of subtask `owner % parallelism`), so "at or below
 *    the marker" means "written".
 *
 * The marker needs checkpoint ids that never go back for the job's `transactionalIdPrefix`: a new
 * job (a fresh start, checkpoint 1 again) with the prefix of an old one would take the old job's
 * markers for its own and skip restored committables. Use a new prefix for a fresh start.
 */
import { EddyError, type Committer, type SinkContext, type SinkWriter } from "eddy";
import { KafkaClientError, kafkaErrorCode, type KafkaClient, type KafkaClientFactory, type KafkaHeader, type KafkaProducer, type ProducerRecord, type TopicPartition } from "./client.ts";
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

/** The committable of one subtask and checkpoint: the records themselves. */
export interface WriteAheadCommittable {
  readonly v: 1;
  readonly kind: "write-ahead";
  /** The writer subtask that made it: its records go through `<prefix>-<owner>`. */
  readonly owner: number;
  /** null: the end of input of a job without checkpointing (written without a marker: there is no restore). */
  readonly checkpointId: number | null;
  readonly records: readonly SerializedRecord[];
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
  if (w === null || typeof w !== "object" || w.v !== 1 || w.kind !== "write-ahead" || !Number.isSafeInteger(w.owner) || w.owner < 0 || !(w.checkpointId === null || Number.isSafeInteger(w.checkpointId)) || !Array.isArray(w.records)) {
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
  #buffer: SerializedRecord[] = [];
  #bytes = 0;

  constructor(config: WriteAheadConfig, context: SinkContext, serialize: (value: T, timestamp: number | undefined) => SerializedRecord | Promise<SerializedRecord>) {
    this.#c = config;
    this.#context = context;
    this.#serialize = serialize;
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
    return [{ v: 1, kind: "write-ahead", owner: this.#context.subtaskIndex, checkpointId: checkpointId ?? null, records }];
  }

  close(): void {
    this.#buffer = [];
  }
}

/** One owner's transactional id, initialized by this committer, and its marker as read then. */
interface Lane {
  readonly producer: KafkaProducer;
  /** The checkpoint id of the last committable written through it (-1: none). */
  marker: number;
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
    if (c.checkpointId !== null && c.checkpointId <= lane.marker) {
      this.counts.skipped++;
      return;
    }
    const records = await this.#partitioned(c.records);
    lane.producer.beginTransaction();
    const acks: Promise<readonly number[]>[] = [];
    for (let i = 0; i < records.length; i += this.#c.maxBatchSize) acks.push(lane.producer.send(records.slice(i, i + this.#c.maxBatchSize)));
    await Promise.all(acks);
    if (c.checkpointId !== null) await lane.producer.sendOffsetsToTransaction([{ ...this.#markerPartition(), offset: c.checkpointId }], markerGroup(this.#c.prefix, c.owner));
    await lane.producer.commitTransaction();
    if (c.checkpointId !== null) lane.marker = c.checkpointId;
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
      const lane: Lane = { producer, marker: marker ?? -1 };
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
