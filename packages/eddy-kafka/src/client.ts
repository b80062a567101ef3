/**
 * Eddy's own small Kafka client interface: everything the source and the sink need from a
 * client, and nothing more, so that the client library can be swapped (an adapter per library)
 * and the exactly-once logic can be tested against the in-memory fake broker (fake-broker.ts).
 *
 * The semantics are Kafka's (the fake implements them; an adapter must keep them):
 * - a partition is a log; every record, and every transaction marker, takes one offset;
 * - `fetch` with `isolation: "read_committed"` returns records below the partition's last stable
 *   offset (LSO: the first offset of the oldest open transaction, or the high watermark), without
 *   the records of aborted transactions; `nextOffset` is where the next fetch goes on (markers and
 *   aborted records are skipped, so offsets have gaps);
 * - a transactional producer's `initTransactions` bumps the epoch of its transactional id: any
 *   transaction the id had open is aborted and an older producer with the same id is fenced (its
 *   sends and commits fail with a KafkaClientError of code "PRODUCER_FENCED");
 * - `sendOffsetsToTransaction` adds a consumer group's offsets (each with an optional metadata
 *   string, as Kafka's OffsetCommit carries) to the open transaction: they become the group's
 *   committed offsets when it commits, and never if it aborts (write-ahead exactly-once marks what
 *   it wrote with them);
 * - `commitTransaction(handle)` on the client commits a transaction left open by a producer that
 *   is gone (Flink's FlinkKafkaInternalProducer.resumeTransaction: the producer id and epoch are
 *   in the checkpoint), so a committable survives a restart of the job.
 *
 * Offsets and timestamps are numbers (safe integers: 2^53 offsets is more than any partition holds).
 */

/** A header of a record: Kafka allows repeated keys, so a list. */
export type KafkaHeader = readonly [key: string, value: Uint8Array];

/** A record to produce. Without `partition` the client's default partitioner chooses (the sink always sets it). */
export interface ProducerRecord {
  readonly topic: string;
  readonly partition: number;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers?: readonly KafkaHeader[];
  /** Milliseconds since the epoch; the broker's time when absent (CreateTime semantics otherwise). */
  readonly timestamp?: number;
}

/** A record as fetched. */
export interface ConsumerRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly KafkaHeader[];
  readonly timestamp: number;
}

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

export type Isolation = "read_committed" | "read_uncommitted";

export interface FetchRequest extends TopicPartition {
  /** The offset of the next record wanted. */
  readonly offset: number;
}

/** An offset to commit for a group, with Kafka's free-form metadata string (at most 4,096 bytes by the broker's default offset.metadata.max.bytes). */
export interface OffsetCommit extends FetchRequest {
  readonly metadata?: string;
}

/** A group's committed offset of a partition ("" when it was committed without metadata). */
export interface CommittedOffset {
  readonly offset: number;
  readonly metadata: string;
}

export interface FetchResult extends TopicPartition {
  /** In offset order, at `offset` or after it. */
  readonly records: readonly ConsumerRecord[];
  /** Where the next fetch of this partition starts (past the last record returned, and past markers and aborted records skipped). */
  readonly nextOffset: number;
  /** The partition's high watermark (the offset the next record appended will get). */
  readonly highWatermark: number;
  /** The last stable offset (read_committed reads stop here); equals highWatermark without open transactions. */
  readonly lastStableOffset: number;
}

export interface FetchOptions {
  readonly isolation: Isolation;
  /** Records per partition at most in one answer. */
  readonly maxRecords: number;
  /** How long the broker may wait for records when none is available (0: answer at once). */
  readonly maxWaitMs: number;
}

/** Where a partition starts: the first offset, the end (LSO under read_committed), or the first record at or after a time. */
export type OffsetSpec = "earliest" | "latest" | { readonly timestamp: number };

/** What identifies a transaction left open by a producer: enough to commit it from another process. */
export interface TransactionHandle {
  readonly transactionalId: string;
  readonly producerId: number;
  readonly epoch: number;
}

export interface ProducerOptions {
  /** A transactional producer (exactly-once); without it an idempotent one. */
  readonly transactionalId?: string;
  /** How long the broker keeps a transaction open before it aborts it (Kafka's transaction.timeout.ms). */
  readonly transactionTimeoutMs?: number;
}

export interface KafkaProducer {
  /**
   * Transactional producers: registers the transactional id, aborting what it had open and
   * fencing older producers with it. Returns the producer id and the new epoch; epoch 0 means the
   * id was never used before (Flink's abort-on-restore stops probing there).
   */
  initTransactions(): Promise<TransactionHandle>;
  beginTransaction(): void;
  /** Appends records (in a transaction when one is open); resolves with their offsets once acknowledged. */
  send(records: readonly ProducerRecord[]): Promise<readonly number[]>;
  /**
   * Adds `offsets` of consumer group `groupId` to the open transaction (Kafka's
   * sendOffsetsToTransaction): committed with it (visible to `committedOffsets` once it commits),
   * discarded if it aborts. Kafka does not check the offsets against the partitions' logs.
   */
  sendOffsetsToTransaction(offsets: readonly OffsetCommit[], groupId: string): Promise<void>;
  /** Commits the open transaction (what was sent becomes visible to read_committed readers). */
  commitTransaction(): Promise<void>;
  abortTransaction(): Promise<void>;
  close(): Promise<void>;
}

export interface KafkaClient {
  /**
   * Whether `commitTransaction(handle)` works for a transaction another producer (another process)
   * opened, and `initTransactions` reports real epochs: what exactly-once across a restart needs.
   * Absent: true. The Confluent client's adapter: false (librdkafka cannot), and the sink refuses
   * exactly-once with it.
   */
  readonly transactionsSurviveRestart?: boolean;
  /** The number of partitions of `topic`; rejects with code "UNKNOWN_TOPIC" when it does not exist. */
  partitionCount(topic: string): Promise<number>;
  listTopics(): Promise<readonly string[]>;
  /** The offset `spec` resolves to per partition ("latest" is the LSO under read_committed, the high watermark otherwise). */
  listOffsets(partitions: readonly TopicPartition[], spec: OffsetSpec, isolation: Isolation): Promise<readonly number[]>;
  fetch(requests: readonly FetchRequest[], options: FetchOptions): Promise<readonly FetchResult[]>;
  /** The group's committed offsets, with their metadata (undefined: none committed for the partition). */
  committedOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<readonly (CommittedOffset | undefined)[]>;
  commitOffsets(groupId: string, offsets: readonly OffsetCommit[]): Promise<void>;
  producer(options: ProducerOptions): KafkaProducer;
  /**
   * Commits the transaction `handle` names, left open by a producer that may be gone. Resolves
   * "committed", or "already-committed" when that transaction was committed before (a commit
   * repeated after a restore). Rejects with "PRODUCER_FENCED" or "INVALID_TXN_STATE" when the
   * transaction cannot be committed (it was aborted, or the id moved on).
   */
  commitTransaction(handle: TransactionHandle): Promise<"committed" | "already-committed">;
  close(): Promise<void>;
}

/** Kafka's error codes as the interface reports them (the names of Kafka's protocol errors). */
export type KafkaErrorCode =
  | "UNKNOWN_TOPIC"
  | "UNKNOWN_PARTITION"
  | "OFFSET_OUT_OF_RANGE"
  | "PRODUCER_FENCED"
  | "INVALID_TXN_STATE"
  | "INVALID_PRODUCER_EPOCH"
  | "TRANSACTION_TIMED_OUT"
  | "NETWORK"
  | "CLOSED";

/** Retryable: the same request may succeed later (a broker that went away, a leader moving). */
const RETRYABLE: ReadonlySet<KafkaErrorCode> = new Set(["NETWORK"]);

export class KafkaClientError extends Error {
  readonly code: KafkaErrorCode;
  readonly retryable: boolean;

  constructor(code: KafkaErrorCode, message: string) {
    super(message);
    this.name = "KafkaClientError";
    this.code = code;
    this.retryable = RETRYABLE.has(code);
  }
}

/** The KafkaErrorCode of `e`, if it is a client error. */
export function kafkaErrorCode(e: unknown): KafkaErrorCode | undefined {
  return e instanceof KafkaClientError ? e.code : undefined;
}

/** How a source or sink gets its client: a function, called once per reader, writer or committer. */
export type KafkaClientFactory = () => KafkaClient;
