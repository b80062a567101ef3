/**
 * KafkaSink: records to Kafka topics with one of three guarantees (Flink's DeliveryGuarantee):
 *
 * - "none": records are sent in batches and never waited for at a barrier (lost on a failure if
 *   not yet acknowledged); the end of input waits for every acknowledgement;
 * - "at-least-once": as "none", and a checkpoint completes only once every record written before
 *   its barrier is acknowledged (the writer's snapshot waits for them): after a restore, records
 *   since the checkpoint are written again (duplicates, never loss);
 * - "exactly-once", exactlyOnceMode "write-ahead" (the default with `bootstrapServers`): the records
 *   of a checkpoint interval are the committable, kept in the checkpoint, and written in one
 *   transaction with a marker once the checkpoint completes (write-ahead.ts);
 * - "exactly-once", exactlyOnceMode "two-phase" (the default with `client`): one transaction per
 *   subtask and checkpoint interval, with a transactional
 *   producer whose id comes from transactional-ids.ts. At the barrier the writer pre-commits:
 *   every record of the transaction is acknowledged, the transaction stays open, and its handle
 *   (transactional id, producer id, epoch) is the committable; the committer commits it when the
 *   checkpoint completes — again after a restore, where the broker recognises a repeated commit.
 *   A restored writer aborts every transaction the checkpoint does not hold and fences their
 *   producers (zombies) before it writes. Readers see the records only with read_committed.
 *
 * Partitions: a record's partition is chosen here, not by the client: Kafka's default
 * partitioner (murmur2 of the key) for keyed records, round robin per writer for records without a
 * key, or the `partitioner` option; so the choice does not depend on the client library.
 *
 * All client work of a writer runs one step at a time on a promise chain (a transaction's steps
 * must not interleave with the next one's); the acknowledgements of sends are awaited beside it,
 * at most `maxInFlightBatches` at once. A step that fails ends the writer; every later call
 * rejects with its error.
 */
import { EddyError, type Committer, type Sink, type SinkContext, type SinkWriter } from "eddy";
import { KafkaClientError, kafkaErrorCode, type KafkaClient, type KafkaClientFactory, type KafkaHeader, type KafkaProducer, type ProducerRecord, type TransactionHandle } from "./client.ts";
import { clientFactoryOf, type KafkaConnectionFields } from "./confluent-client.ts";
import { failsTask, toBytes, valueSerializer, type KafkaValueSerializer } from "./serde.ts";
import { SchemaRegistrySerde } from "./schema-registry.ts";
import { choosePartition, committableOwner, whenSerialized, WriteAheadCommitter, WriteAheadWriter, type SerializedRecord, type WriteAheadConfig } from "./write-ahead.ts";
import { abortPlan, PREFIX_PATTERN, readCommittable, readWriterState, transactionalId, type KafkaCommittable, type KafkaWriterState } from "./transactional-ids.ts";

export type DeliveryGuarantee = "none" | "at-least-once" | "exactly-once";

export interface KafkaSinkOptions<T> extends KafkaConnectionFields {
  /** Makes the client (called once per writer and per committer); see client.ts. Or `bootstrapServers` (and `tls`, `sasl`, `clientConfig`): the Confluent client. */
  readonly client?: KafkaClientFactory;
  /** The topic of every record; or `topicSelector`, the topic per record. */
  readonly topic?: string;
  readonly topicSelector?: (value: T) => string;
  /** The record's value as bytes: "json", "string", "bytes", a schema registry serde (`schemaRegistry.avro({ url, schema })`) or a function (may return a promise). */
  readonly serializer: KafkaValueSerializer<T>;
  /** The record's key (null or absent: no key); may return a promise (a registry serde's `serialize(topic, key)`). */
  readonly key?: (value: T) => Uint8Array | string | null | Promise<Uint8Array | string | null>;
  /** The record's headers. */
  readonly headers?: (value: T) => Readonly<Record<string, string | Uint8Array>> | readonly KafkaHeader[];
  /** The partition of a record (default: Kafka's, murmur2 of the key; round robin without a key). */
  readonly partitioner?: (key: Uint8Array | null, partitions: number, topic: string) => number;
  /** Default "at-least-once". */
  readonly delivery?: DeliveryGuarantee;
  /** exactly-once: the prefix of the transactional ids; unique per job and sink among everything writing to the cluster. */
  readonly transactionalIdPrefix?: string;
  /**
   * exactly-once: "write-ahead" (the records of a checkpoint interval are kept in the checkpoint and
   * written in a transaction once it completes; any client) or "two-phase" (a transaction per
   * interval, committed when the checkpoint completes; needs a client that can commit a
   * transaction another producer opened, which the Confluent client cannot). Default:
   * "write-ahead" with `bootstrapServers`, "two-phase" with `client`.
   */
  readonly exactlyOnceMode?: "write-ahead" | "two-phase";
  /** write-ahead: the topic whose partition 0 carries the marker offsets (default `topic`; required with `topicSelector`). */
  readonly markerTopic?: string;
  /** write-ahead: serialized bytes a subtask may hold between two barriers (default 64 MiB); over it the writer fails. */
  readonly maxBufferedBytes?: number;
  /** exactly-once: how long the broker keeps a transaction open (default 15 min, the broker's default maximum); above checkpoint interval plus downtime. */
  readonly transactionTimeoutMs?: number;
  /** Records per send (default 500). */
  readonly maxBatchSize?: number;
  /**
   * Sends awaiting acknowledgement at once (default 20: 10,000 records of the default batch); then
   * `write` makes the task wait. The bound keeps what a retry needs in memory bounded; too small a
   * bound makes the writer wait for round trips (5 gave ~50-60 % of the bare producer against
   * librdkafka's mock on a loaded machine, where acknowledgements take longer).
   */
  readonly maxInFlightBatches?: number;
  /** How long a partial batch waits for more records before it is sent (default 5 ms). */
  readonly lingerMs?: number;
  /** none / at-least-once: sends of a batch that fails with a retryable error, in all (default 5; backoff from 100 ms, doubling). */
  readonly maxSendAttempts?: number;
}

interface SinkConfig<T> {
  readonly client: KafkaClientFactory;
  readonly topicOf: (value: T) => string;
  readonly value: (value: T, topic: string) => Uint8Array | null | Promise<Uint8Array | null>;
  readonly key: KafkaSinkOptions<T>["key"];
  readonly headers: KafkaSinkOptions<T>["headers"];
  readonly partitioner: KafkaSinkOptions<T>["partitioner"];
  readonly delivery: DeliveryGuarantee;
  readonly prefix: string;
  readonly writeAhead: boolean;
  readonly markerTopic: string;
  readonly maxBufferedBytes: number;
  readonly transactionTimeoutMs: number;
  readonly maxBatchSize: number;
  readonly maxInFlightBatches: number;
  readonly lingerMs: number;
  readonly maxSendAttempts: number;
}

const invalid = (message: string): EddyError => new EddyError("INVALID_KAFKA_OPTIONS", `KafkaSink: ${message}`);

function configOf<T>(o: KafkaSinkOptions<T>): SinkConfig<T> {
  if (o === null || typeof o !== "object") throw invalid("options are required");
  const client = clientFactoryOf(o, "KafkaSink");
  if ((o.topic === undefined) === (o.topicSelector === undefined)) throw invalid("give exactly one of `topic` and `topicSelector`");
  if (o.topic !== undefined && (typeof o.topic !== "string" || !/^[a-zA-Z0-9._-]{1,249}$/.test(o.topic))) throw invalid(`\`topic\` is not a valid topic name: ${JSON.stringify(o.topic)}`);
  const delivery = o.delivery ?? "at-least-once";
  if (!["none", "at-least-once", "exactly-once"].includes(delivery)) throw invalid(`\`delivery\` must be "none", "at-least-once" or "exactly-once", got ${JSON.stringify(delivery)}`);
  const prefix = o.transactionalIdPrefix ?? "";
  if (delivery === "exactly-once" && !PREFIX_PATTERN.test(prefix)) throw invalid(`exactly-once needs a \`transactionalIdPrefix\` of 1 to 200 characters [a-zA-Z0-9._-], got ${JSON.stringify(o.transactionalIdPrefix)}`);
  const mode = o.exactlyOnceMode ?? (o.bootstrapServers !== undefined ? "write-ahead" : "two-phase");
  if (mode !== "write-ahead" && mode !== "two-phase") throw invalid(`\`exactlyOnceMode\` must be "write-ahead" or "two-phase", got ${JSON.stringify(mode)}`);
  const writeAhead = delivery === "exactly-once" && mode === "write-ahead";
  if (delivery === "exactly-once" && mode === "two-phase" && o.bootstrapServers !== undefined) {
    throw invalid("exactlyOnceMode \"two-phase\" is not available with the Confluent client (`bootstrapServers`): librdkafka cannot commit, after a restart, a transaction the failed run opened, so a committed checkpoint's records could be lost. Use exactlyOnceMode \"write-ahead\" (the default; docs/connectors/kafka.md, \"Exactly-once with the real client\")");
  }
  const markerTopic = o.markerTopic ?? o.topic ?? "";
  if (writeAhead && !/^[a-zA-Z0-9._-]{1,249}$/.test(markerTopic)) throw invalid(`exactly-once (write-ahead) needs a \`markerTopic\` (default: \`topic\`; required with \`topicSelector\`), a topic whose partition 0 carries the markers, got ${JSON.stringify(o.markerTopic)}`);
  if (o.serializer === undefined) throw invalid("`serializer` is required (\"json\", \"string\", \"bytes\", a schema registry serde or a function)");
  if (o.serializer instanceof SchemaRegistrySerde) o.serializer.checkSerializer();
  const num = (name: keyof KafkaSinkOptions<T>, fallback: number, min: number): number => {
    const v = (o[name] as number | undefined) ?? fallback;
    if (!Number.isSafeInteger(v) || v < min) throw invalid(`\`${String(name)}\` must be an integer of at least ${min}, got ${String(v)}`);
    return v;
  };
  const topic = o.topic;
  return {
    client,
    topicOf: topic !== undefined ? () => topic : o.topicSelector!,
    value: valueSerializer(o.serializer),
    key: o.key,
    headers: o.headers,
    partitioner: o.partitioner,
    delivery,
    prefix,
    writeAhead,
    markerTopic,
    maxBufferedBytes: num("maxBufferedBytes", 64 * 1024 * 1024, 1),
    transactionTimeoutMs: num("transactionTimeoutMs", 900_000, 1),
    maxBatchSize: num("maxBatchSize", 500, 1),
    maxInFlightBatches: num("maxInFlightBatches", 20, 1),
    lingerMs: num("lingerMs", 5, 0),
    maxSendAttempts: num("maxSendAttempts", 5, 1),
  };
}

export const KafkaSink = {
  create<T>(options: KafkaSinkOptions<T>): Sink<T> {
    const config = configOf(options);
    if (config.writeAhead) {
      return {
        createWriter: (context) => new WriteAheadWriter<T>(config, context, (value, timestamp) => serializeRecord(config, value, timestamp)),
        createCommitter: (context) => new WriteAheadCommitter(config, context),
        committableOwner,
      };
    }
    const sink: Sink<T> = { createWriter: (context) => new KafkaSinkWriter(config, context) };
    if (config.delivery !== "exactly-once") return sink;
    return { ...sink, createCommitter: (context) => new KafkaCommitter(config, context) };
  },
};

/** A record serialized, its partition not yet chosen (the topic's partition count may be unknown still). */
type Pending = SerializedRecord;

/** The record of `value`; a promise of it when the key or value serializer returned one. */
function serializeRecord<T>(c: SinkConfig<T>, value: T, timestamp: number | undefined): Pending | Promise<Pending> {
  const topic = c.topicOf(value);
  if (typeof topic !== "string" || topic === "") throw new TypeError(`the topic selector returned ${JSON.stringify(topic)}`);
  const rawHeaders = c.headers?.(value);
  const headers: KafkaHeader[] = rawHeaders === undefined ? [] : Array.isArray(rawHeaders) ? (rawHeaders as KafkaHeader[]) : Object.entries(rawHeaders).map(([k, v]) => [k, toBytes(v as string | Uint8Array)!]);
  const key = c.key === undefined ? null : c.key(value);
  const bytes = c.value(value, topic);
  if (key instanceof Promise || bytes instanceof Promise) {
    return Promise.all([key, bytes]).then(([k, v]) => ({ topic, key: toBytes(k), value: v, headers, timestamp }));
  }
  return { topic, key: toBytes(key), value: bytes, headers, timestamp };
}


/** The transaction of one checkpoint interval (exactly-once). */
interface Txn {
  readonly seq: number;
  producer: KafkaProducer | undefined;
  handle: TransactionHandle | undefined;
  /** Records sent in it. */
  sent: number;
}

function failureOf(e: unknown, context: SinkContext, what: string): EddyError {
  if (e instanceof EddyError) return e;
  const code = kafkaErrorCode(e);
  const fenced = code === "PRODUCER_FENCED" ? " (fenced: a newer producer took over its transactional id; is another job or attempt using the same transactionalIdPrefix?)" : "";
  return new EddyError("KAFKA_SINK_FAILED", `KafkaSink '${context.operatorName}' (subtask ${context.subtaskIndex}) could not ${what}${fenced}: ${e instanceof Error ? e.message : String(e)}`, {
    operator: context.operatorName,
    subtask: context.subtaskIndex,
    cause: e,
  });
}

export class KafkaSinkWriter<T> implements SinkWriter<T> {
  readonly #c: SinkConfig<T>;
  readonly #context: SinkContext;
  readonly #client: KafkaClient;
  readonly #partitionCounts = new Map<string, number | Promise<number>>();
  #roundRobin: number;
  /** Written, not yet handed to a send step. */
  #buffer: Pending[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Settles when every step queued so far has run; never rejects (a failure goes to #failure). */
  #chain: Promise<void> = Promise.resolve();
  /** Acknowledgements awaited (sends issued, not settled). */
  readonly #unacked = new Set<Promise<unknown>>();
  /** Send steps queued on the chain, not yet issued. */
  #queued = 0;
  #failure: EddyError | undefined;
  #closed: Promise<void> | undefined;
  /** none / at-least-once: the one idempotent producer. */
  #producer: KafkaProducer | undefined;
  // exactly-once
  readonly #generation: number;
  #nextSeq = 0;
  /** The transaction records written since the last barrier go into (taken at the first of them). */
  #current: Txn | undefined;

  constructor(config: SinkConfig<T>, context: SinkContext) {
    this.#c = config;
    this.#context = context;
    this.#client = config.client();
    this.#roundRobin = context.subtaskIndex;
    this.#generation = context.restoredCheckpointId ?? 0;
    if (config.delivery === "exactly-once") {
      if (this.#client.transactionsSurviveRestart === false) {
        throw new EddyError("KAFKA_SINK_FAILED", "KafkaSink: exactlyOnceMode \"two-phase\" needs a client that can commit, after a restart, a transaction the failed run opened (`transactionsSurviveRestart`); this client cannot (librdkafka). Use exactlyOnceMode \"write-ahead\" (docs/connectors/kafka.md, \"Exactly-once with the real client\")", { subtask: context.subtaskIndex });
      }
      const restored = (context.restoredState ?? []).map(readWriterState);
      // A failure here ends the writer (#failure): its next write, flush or barrier rejects with it.
      this.#enqueue("abort the transactions the restored checkpoint does not hold", () => this.#abortLingering(restored));
    } else {
      this.#producer = this.#client.producer({});
    }
  }

  // hot path
  write(value: T, timestamp: number | undefined): void | Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    let record: Pending | Promise<Pending>;
    try {
      record = serializeRecord(this.#c, value, timestamp);
    } catch (e) {
      if (failsTask(e)) throw e;
      // Under the default policy this throws and fails the task; otherwise the record is skipped.
      this.#context.reportBadRecord(value, e);
      return;
    }
    if (record instanceof Promise) return whenSerialized(record, value, this.#context, (r) => this.#take(r));
    return this.#take(record);
  }

  #take(record: Pending): void | Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#c.delivery === "exactly-once" && this.#current === undefined) this.#current = { seq: this.#nextSeq++, producer: undefined, handle: undefined, sent: 0 };
    this.#buffer.push(record);
    if (this.#buffer.length >= this.#c.maxBatchSize) this.#sendBuffer();
    else if (this.#timer === undefined) this.#timer = setTimeout(() => this.#sendBuffer(), this.#c.lingerMs);
    if (this.#queued + this.#unacked.size > this.#c.maxInFlightBatches) return this.#until(() => this.#queued + this.#unacked.size <= this.#c.maxInFlightBatches);
  }

  /** Sends everything written and resolves once the broker acknowledged it (in the open transaction for exactly-once). */
  flush(): Promise<void> {
    this.#sendBuffer();
    return this.#acknowledged();
  }

  /** exactly-once: the transaction of the interval that ends at this barrier, once all its records are acknowledged. */
  prepareCommit(): Promise<readonly KafkaCommittable[]> | readonly KafkaCommittable[] {
    if (this.#c.delivery !== "exactly-once") return [];
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    this.#sendBuffer();
    const txn = this.#current;
    this.#current = undefined;
    if (txn === undefined) return [];
    return this.#enqueue(`pre-commit transaction ${this.#idOf(txn.seq)}`, async () => {
      await this.#allAcknowledged();
      const { handle, producer } = txn;
      txn.producer = undefined;
      // The transaction stays open on the broker; the committer commits it by its handle.
      await producer?.close();
      return handle === undefined || txn.sent === 0 ? [] : [{ v: 1, transactionalId: handle.transactionalId, producerId: handle.producerId, epoch: handle.epoch }];
    });
  }

  /** at-least-once: the checkpoint completes only once every record written before the barrier is acknowledged. */
  snapshotState(): readonly KafkaWriterState[] | Promise<readonly KafkaWriterState[]> {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#c.delivery === "exactly-once") return [{ v: 1, subtask: this.#context.subtaskIndex, generation: this.#generation, nextSeq: this.#nextSeq }];
    if (this.#c.delivery === "none") return [];
    this.#sendBuffer();
    return this.#acknowledged().then(() => []);
  }

  close(): Promise<void> {
    if (this.#closed !== undefined) return this.#closed;
    this.#stopTimer();
    const txn = this.#current;
    this.#fail(new EddyError("SINK_CLOSED", `sink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex}) is closed`));
    this.#closed = this.#chain.then(async () => {
      // The open transaction (not pre-committed) is aborted; the restored writer would abort it anyway.
      if (txn?.producer !== undefined) await txn.producer.abortTransaction().catch(() => {});
      await txn?.producer?.close().catch(() => {});
      await this.#producer?.close().catch(() => {});
      await this.#client.close();
    });
    return this.#closed;
  }

  #idOf(seq: number): string {
    return transactionalId(this.#c.prefix, this.#context.subtaskIndex, this.#generation, seq);
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Hands the buffer to a send step. */
  #sendBuffer(): void {
    this.#stopTimer();
    if (this.#buffer.length === 0 || this.#failure !== undefined) return;
    const batch = this.#buffer;
    this.#buffer = [];
    const txn = this.#current;
    this.#queued++;
    this.#enqueue(`send ${batch.length} records`, async () => {
      this.#queued--;
      const records = await this.#partitioned(batch);
      const producer = txn === undefined ? this.#producer! : await this.#open(txn);
      if (txn !== undefined) txn.sent += records.length;
      // Issued in order on the chain; acknowledged beside it.
      const ack = txn === undefined ? this.#sendWithRetries(producer, records) : producer.send(records);
      this.#unacked.add(ack);
      ack.then(
        () => {
          this.#unacked.delete(ack);
          this.#notify();
        },
        (e: unknown) => {
          this.#unacked.delete(ack);
          this.#fail(failureOf(e, this.#context, `send ${records.length} records to ${describeTopics(records)}`));
        },
      );
    }).catch(() => {});
  }

  /**
   * none / at-least-once: a send that fails with a retryable error (KafkaClientError.retryable: the
   * brokers did not answer) is sent again after a backoff, up to `maxSendAttempts` in all; any
   * other error fails at once. A resent batch may be written twice (its first send may have
   * arrived) and after later batches: at-least-once allows both. Exactly-once never resends within
   * a transaction: the writer fails and the restore aborts the transaction.
   */
  async #sendWithRetries(producer: KafkaProducer, records: readonly ProducerRecord[]): Promise<readonly number[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await producer.send(records);
      } catch (e) {
        if (!(e instanceof KafkaClientError && e.retryable) || attempt >= this.#c.maxSendAttempts || this.#failure !== undefined) {
          throw attempt > 1 ? failureOf(e, this.#context, `send ${records.length} records to ${describeTopics(records)} in ${attempt} attempts`) : e;
        }
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** (attempt - 1), 5_000)));
      }
    }
  }

  /** The producer of `txn`, its transaction begun (initTransactions aborts what the id had open and fences older producers). */
  async #open(txn: Txn): Promise<KafkaProducer> {
    if (txn.producer !== undefined) return txn.producer;
    const producer = this.#client.producer({ transactionalId: this.#idOf(txn.seq), transactionTimeoutMs: this.#c.transactionTimeoutMs });
    txn.handle = await producer.initTransactions();
    producer.beginTransaction();
    txn.producer = producer;
    return producer;
  }

  async #partitioned(batch: readonly Pending[]): Promise<ProducerRecord[]> {
    const out: ProducerRecord[] = [];
    for (const r of batch) {
      const partitions = await this.#partitionCount(r.topic);
      const partition = choosePartition(this.#c.partitioner, r.key, partitions, r.topic, () => this.#roundRobin++);
      out.push({ topic: r.topic, partition, key: r.key, value: r.value, headers: r.headers, ...(r.timestamp === undefined ? {} : { timestamp: r.timestamp }) });
    }
    return out;
  }

  #partitionCount(topic: string): number | Promise<number> {
    const known = this.#partitionCounts.get(topic);
    if (known !== undefined) return known;
    const asked = this.#client.partitionCount(topic).then((n) => {
      this.#partitionCounts.set(topic, n);
      return n;
    });
    this.#partitionCounts.set(topic, asked);
    asked.catch(() => this.#partitionCounts.delete(topic));
    return asked;
  }

  /** Aborts the transactions of `restored` subtasks the checkpoint does not hold, and those of this generation (transactional-ids.ts). */
  async #abortLingering(restored: readonly KafkaWriterState[]): Promise<void> {
    const { subtaskIndex: subtask, parallelism } = this.#context;
    for (const run of abortPlan(restored, subtask, this.#generation)) await this.#abortRun(run.subtask, run.generation, run.fromSeq);
    // Higher subtasks of this generation: an earlier attempt after the same restore at a higher parallelism.
    for (let s = subtask + parallelism; await this.#abortRun(s, this.#generation, 0); s += parallelism);
  }

  /** Aborts `<prefix>-<subtask>-<generation>-<seq>` from `fromSeq` until an id the broker had never seen; whether any had been. */
  async #abortRun(subtask: number, generation: number, fromSeq: number): Promise<boolean> {
    for (let seq = fromSeq; ; seq++) {
      const producer = this.#client.producer({ transactionalId: transactionalId(this.#c.prefix, subtask, generation, seq), transactionTimeoutMs: this.#c.transactionTimeoutMs });
      const { epoch } = await producer.initTransactions();
      await producer.close();
      if (epoch === 0) return seq > fromSeq;
    }
  }

  /** Runs `step` after every step queued before it; its failure ends the writer. */
  #enqueue<R>(what: string, step: () => Promise<R>): Promise<R> {
    const run = this.#chain.then(async () => {
      if (this.#failure !== undefined) throw this.#failure;
      try {
        return await step();
      } catch (e) {
        throw failureOf(e, this.#context, what);
      }
    });
    this.#chain = run.then(
      () => {},
      (e: unknown) => this.#fail(e as EddyError),
    );
    return run;
  }

  /** Resolves once every step queued so far ran and every send issued is acknowledged. */
  async #acknowledged(): Promise<void> {
    await this.#chain;
    await this.#allAcknowledged();
  }

  async #allAcknowledged(): Promise<void> {
    while (this.#unacked.size > 0) await Promise.allSettled([...this.#unacked]);
    if (this.#failure !== undefined) throw this.#failure;
  }

  #waiters: (() => void)[] = [];

  #until(ready: () => boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (this.#failure !== undefined) reject(this.#failure);
        else if (ready()) resolve();
        else this.#waiters.push(check);
      };
      check();
    });
  }

  #notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  #fail(e: EddyError): void {
    this.#failure ??= e;
    this.#notify();
  }
}

function describeTopics(records: readonly ProducerRecord[]): string {
  const topics = [...new Set(records.map((r) => r.topic))];
  return topics.length === 1 ? `topic '${topics[0]}'` : `topics ${topics.map((t) => `'${t}'`).join(", ")}`;
}

/**
 * Commits the transactions of completed checkpoints by their handles (the producers that opened
 * them may be gone). A commit repeated after a restore is recognised by the broker; a transaction
 * that cannot be committed (aborted by its timeout, or its id taken over) is KAFKA_TRANSACTION_LOST.
 */
export class KafkaCommitter implements Committer<unknown> {
  readonly #client: KafkaClient;
  readonly #context: SinkContext;

  constructor(config: { readonly client: KafkaClientFactory }, context: SinkContext) {
    this.#client = config.client();
    this.#context = context;
  }

  close(): Promise<void> {
    return this.#client.close();
  }

  async commit(committables: readonly unknown[]): Promise<void> {
    for (const c of committables.map(readCommittable)) {
      try {
        await this.#client.commitTransaction(c);
      } catch (e) {
        const code = kafkaErrorCode(e);
        if (code === "INVALID_TXN_STATE" || code === "PRODUCER_FENCED") {
          throw new EddyError("KAFKA_TRANSACTION_LOST", `KafkaSink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex}) could not commit transaction ${c.transactionalId} (producer ${c.producerId}, epoch ${c.epoch}), which a completed checkpoint holds: ${e instanceof Error ? e.message : String(e)}`, {
            operator: this.#context.operatorName,
            subtask: this.#context.subtaskIndex,
            cause: e,
          });
        }
        throw failureOf(e, this.#context, `commit transaction ${c.transactionalId}`);
      }
    }
  }
}
