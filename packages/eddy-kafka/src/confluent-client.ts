/**
 * The KafkaClient adapter over `@confluentinc/kafka-javascript` (Confluent's client over
 * librdkafka; chosen by measuring, docs/connectors/kafka.md), in its callback API (node-rdkafka's):
 *
 * - metadata, offsets and group offsets through one KafkaConsumer per isolation level and group
 *   (never subscribed: it only asks the brokers; librdkafka needs a group.id for committed/commit);
 * - `fetch` from explicit offsets through one fetch consumer per isolation level: it keeps its
 *   assignment while the requests continue where the last fetch ended, and assigns again (at the
 *   requested offsets) when the set of partitions or an offset differs (start, restore, discovery);
 *   `auto.offset.reset` is "error", so an offset out of range fails instead of silently moving;
 * - producers with delivery reports (acks=all, idempotent), transactions in-process
 *   (initTransactions / begin / commit / abort through the producer that opened them) and
 *   sendOffsetsToTransaction (the group's metadata from that group's never-subscribed consumer);
 * - group offsets read and committed through a read_committed consumer (stable offsets, KIP-447).
 *
 * What it cannot do: commit a transaction that another producer (another process) opened —
 * librdkafka has no API for it — so `commitTransaction(handle)` rejects and
 * `transactionsSurviveRestart` is false; the sink's two-phase mode is refused with this client and
 * exactly-once goes by write-ahead (docs/connectors/kafka.md, "Exactly-once with the real client").
 *
 * On worker threads the calls go to the main thread (confluent-thread-host.ts): the binding can be
 * loaded only there.
 *
 * The library is loaded when the first client is made, so that `eddy-kafka` imports without it
 * (tests against the fake broker); a missing or unbuilt library fails with
 * KAFKA_CLIENT_UNAVAILABLE saying how to build it.
 */
import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import { isMainThread } from "node:worker_threads";
import { EddyError } from "eddy";
import { ensureConfluentHost, threadProxyClient } from "./confluent-thread-host.ts";
import { KafkaClientError, type CommittedOffset, type ConsumerRecord, type FetchOptions, type FetchRequest, type FetchResult, type Isolation, type KafkaClient, type KafkaErrorCode, type KafkaHeader, type KafkaProducer, type OffsetCommit, type OffsetSpec, type ProducerOptions, type ProducerRecord, type TopicPartition, type TransactionHandle } from "./client.ts";

/** TLS to the brokers (librdkafka's ssl.* settings). PEM strings, not paths. */
export interface KafkaTls {
  /** The CA certificate(s) that signed the brokers' certificates (default: the system's). */
  readonly ca?: string;
  /** Client certificate and key (mutual TLS). */
  readonly cert?: string;
  readonly key?: string;
  readonly keyPassword?: string;
  /** Default true: the brokers' certificates are verified (and their host names). */
  readonly verify?: boolean;
}

/** SASL authentication (librdkafka's sasl.* settings). */
export interface KafkaSasl {
  readonly mechanism: "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512";
  readonly username: string;
  readonly password: string;
}

/** How to reach a Kafka cluster: what `bootstrapServers` options of KafkaSource/KafkaSink take. */
export interface KafkaConnectionOptions {
  /** "host:port,host:port" or a list. */
  readonly bootstrapServers: string | readonly string[];
  /** Kafka's client.id (default "eddy"). */
  readonly clientId?: string;
  /** TLS: true for TLS with the system's CAs, or the settings. */
  readonly tls?: boolean | KafkaTls;
  readonly sasl?: KafkaSasl;
  /** librdkafka settings, applied last (they override Eddy's): e.g. { "fetch.max.bytes": 10485760 }. */
  readonly clientConfig?: Readonly<Record<string, string | number | boolean>>;
  /** How long a metadata, offsets or commit request may take (default 30 s). */
  readonly requestTimeoutMs?: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
type Any = any;
type Config = Record<string, string | number | boolean>;

let library: Any;
function confluent(): Any {
  if (library !== undefined) return library;
  try {
    library = createRequire(import.meta.url)("@confluentinc/kafka-javascript");
  } catch (e) {
    throw new EddyError(
      "KAFKA_CLIENT_UNAVAILABLE",
      `eddy-kafka could not load @confluentinc/kafka-javascript (${e instanceof Error ? e.message.split("\n")[0] : String(e)}). It builds librdkafka natively at install time: ` +
        "run `CKJS_LINKING=dynamic npm rebuild @confluentinc/kafka-javascript` (needs gcc, make, python3 and libssl-dev; see README, Kafka).",
      { cause: e },
    );
  }
  return library;
}

/** librdkafka settings for a connection (security, client id, overrides). */
export function librdkafkaConfig(o: KafkaConnectionOptions): Config {
  const servers = typeof o.bootstrapServers === "string" ? o.bootstrapServers : o.bootstrapServers.join(",");
  if (servers.trim() === "") throw new EddyError("INVALID_KAFKA_OPTIONS", "`bootstrapServers` must name at least one host:port");
  const c: Config = { "bootstrap.servers": servers, "client.id": o.clientId ?? "eddy" };
  const tls = o.tls === true ? {} : o.tls === false || o.tls === undefined ? undefined : o.tls;
  if (o.sasl !== undefined) {
    if (!["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"].includes(o.sasl.mechanism)) throw new EddyError("INVALID_KAFKA_OPTIONS", `sasl.mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got ${JSON.stringify(o.sasl.mechanism)}`);
    c["security.protocol"] = tls !== undefined ? "sasl_ssl" : "sasl_plaintext";
    c["sasl.mechanisms"] = o.sasl.mechanism;
    c["sasl.username"] = o.sasl.username;
    c["sasl.password"] = o.sasl.password;
  } else if (tls !== undefined) c["security.protocol"] = "ssl";
  if (tls !== undefined) {
    if (tls.ca !== undefined) c["ssl.ca.pem"] = tls.ca;
    if (tls.cert !== undefined) c["ssl.certificate.pem"] = tls.cert;
    if (tls.key !== undefined) c["ssl.key.pem"] = tls.key;
    if (tls.keyPassword !== undefined) c["ssl.key.password"] = tls.keyPassword;
    if (tls.verify === false) {
      c["enable.ssl.certificate.verification"] = false;
      c["ssl.endpoint.identification.algorithm"] = "none";
    }
  }
  return { ...c, ...(o.clientConfig ?? {}) };
}

/** librdkafka's error → the interface's code (undefined: not one of them; the message says what). */
function codeOf(e: Any): KafkaErrorCode {
  const E = confluent().CODES.ERRORS;
  switch (e?.code) {
    case E.ERR_UNKNOWN_TOPIC_OR_PART:
    case E.ERR__UNKNOWN_TOPIC:
      return "UNKNOWN_TOPIC";
    case E.ERR__UNKNOWN_PARTITION:
      return "UNKNOWN_PARTITION";
    case E.ERR_OFFSET_OUT_OF_RANGE:
    case E.ERR__AUTO_OFFSET_RESET:
      return "OFFSET_OUT_OF_RANGE";
    case E.ERR_PRODUCER_FENCED:
    case E.ERR__FENCED:
      return "PRODUCER_FENCED";
    case E.ERR_INVALID_TXN_STATE:
    case E.ERR__STATE:
      return "INVALID_TXN_STATE";
    case E.ERR_INVALID_PRODUCER_EPOCH:
      return "INVALID_PRODUCER_EPOCH";
    case E.ERR__DESTROY:
      return "CLOSED";
    default:
      // Transport, timeouts, brokers down, queue full, and librdkafka's retriable errors.
      return e?.isRetriable === true || [E.ERR__TRANSPORT, E.ERR__ALL_BROKERS_DOWN, E.ERR__TIMED_OUT, E.ERR__MSG_TIMED_OUT, E.ERR_REQUEST_TIMED_OUT, E.ERR_NOT_LEADER_FOR_PARTITION, E.ERR_LEADER_NOT_AVAILABLE, E.ERR__RESOLVE].includes(e?.code) ? "NETWORK" : "INVALID_TXN_STATE";
  }
}

function clientError(e: unknown, what: string): KafkaClientError {
  if (e instanceof KafkaClientError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new KafkaClientError(codeOf(e), `${what}: ${message}`);
}

const call = <T>(what: string, fn: (done: (e: unknown, v: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((e, v) => (e ? reject(clientError(e, what)) : resolve(v))));

const asBuffer = (b: Uint8Array | null): Buffer | null => (b === null ? null : Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));
const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;
const NO_HEADERS: readonly KafkaHeader[] = Object.freeze([]);
/** librdkafka's headers (a list of one-entry objects) as Eddy's. */
const headersOf = (list: readonly Record<string, string | Buffer>[]): readonly KafkaHeader[] => {
  if (list.length === 0) return NO_HEADERS;
  const headers: KafkaHeader[] = [];
  for (const h of list) for (const [hk, hv] of Object.entries(h)) headers.push([hk, typeof hv === "string" ? Buffer.from(hv) : hv]);
  return headers;
};
const partitionOfKey = (k: string): TopicPartition => {
  const i = k.lastIndexOf("\u0000");
  return { topic: k.slice(0, i), partition: Number(k.slice(i + 1)) };
};

/** A consumer connected on first use; one connection attempt shared by concurrent callers. */
class LazyConsumer {
  readonly #config: Config;
  #consumer: Any;
  #connecting: Promise<Any> | undefined;
  constructor(config: Config) {
    this.#config = config;
  }
  get(): Promise<Any> {
    this.#connecting ??= (async () => {
      const c = new (confluent().KafkaConsumer)(this.#config, {});
      await call("connect", (d) => c.connect({ timeout: Number(this.#config["socket.connection.setup.timeout.ms"] ?? 30_000) }, d));
      this.#consumer = c;
      return c;
    })();
    return this.#connecting;
  }
  async close(): Promise<void> {
    const c = this.#connecting === undefined ? undefined : await this.#connecting.catch(() => undefined);
    if (c !== undefined && c.isConnected()) await new Promise<void>((r) => c.disconnect(() => r()));
  }
}

/** The client (one per source reader, sink writer, committer, enumerator: as KafkaClientFactory calls it). */
export function confluentKafkaClient(options: KafkaConnectionOptions): KafkaClient {
  if (!isMainThread) return threadProxyClient(options, options.requestTimeoutMs ?? 30_000);
  confluent();
  ensureConfluentHost((o) => new ConfluentKafkaClient(o as KafkaConnectionOptions));
  return new ConfluentKafkaClient(options);
}

class ConfluentKafkaClient implements KafkaClient {
  readonly transactionsSurviveRestart = false;
  readonly #base: Config;
  readonly #timeout: number;
  /** Metadata/offset consumers by `${isolation}|${group}`. */
  readonly #admins = new Map<string, LazyConsumer>();
  readonly #fetchers = new Map<Isolation, Fetcher>();
  readonly #producers = new Set<ConfluentProducer>();
  #closed = false;

  constructor(o: KafkaConnectionOptions) {
    this.#base = librdkafkaConfig(o);
    this.#timeout = o.requestTimeoutMs ?? 30_000;
  }

  #admin(isolation: Isolation, group = `eddy-metadata-${randomUUID()}`): Promise<Any> {
    this.#check();
    const k = `${isolation}|${group}`;
    let c = this.#admins.get(k);
    if (c === undefined) {
      c = new LazyConsumer({ ...this.#consumerDefaults(isolation), "group.id": group, ...this.#base });
      // One metadata consumer per isolation level, whatever group name it was made with.
      this.#admins.set(k, c);
    }
    return c.get();
  }

  /**
   * A metadata consumer of `isolation`; of any isolation when undefined (metadata does not depend
   * on it: one connection fewer at a source's start), else a new read_committed one.
   */
  #metadataAdmin(isolation?: Isolation): Promise<Any> {
    const existing = [...this.#admins.keys()].find((k) => k.startsWith(`${isolation ?? ""}`) && k.includes("|eddy-metadata-"));
    return existing !== undefined ? this.#admins.get(existing)!.get() : this.#admin(isolation ?? "read_committed");
  }

  #consumerDefaults(isolation: Isolation): Config {
    return { "enable.auto.commit": false, "enable.auto.offset.store": false, "auto.offset.reset": "error", "isolation.level": isolation, "allow.auto.create.topics": false, "enable.partition.eof": false };
  }

  #check(): void {
    if (this.#closed) throw new KafkaClientError("CLOSED", "the Kafka client is closed");
  }

  async #metadata(topic: string | undefined): Promise<Any> {
    const c = await this.#metadataAdmin();
    return call("metadata", (d) => c.getMetadata(topic === undefined ? { allTopics: true, timeout: this.#timeout } : { topic, allTopics: false, timeout: this.#timeout }, d));
  }

  async partitionCount(topic: string): Promise<number> {
    const md = await this.#metadata(topic);
    const t = (md.topics as Any[]).find((x) => x.name === topic);
    if (t === undefined || t.partitions.length === 0) throw new KafkaClientError("UNKNOWN_TOPIC", `topic ${topic} does not exist`);
    return t.partitions.length;
  }

  async listTopics(): Promise<readonly string[]> {
    const md = await this.#metadata(undefined);
    return (md.topics as Any[]).map((t) => String(t.name)).filter((n) => !n.startsWith("__"));
  }

  async listOffsets(partitions: readonly TopicPartition[], spec: OffsetSpec, isolation: Isolation): Promise<readonly number[]> {
    const c = await this.#metadataAdmin(isolation);
    const marks = await Promise.all(partitions.map((tp) => call<Any>(`offsets of ${tp.topic}-${tp.partition}`, (d) => c.queryWatermarkOffsets(tp.topic, tp.partition, this.#timeout, d))));
    if (spec === "earliest") return marks.map((m) => Number(m.lowOffset));
    if (spec === "latest") return marks.map((m) => Number(m.highOffset));
    const found: Any[] = await call("offsets for times", (d) => c.offsetsForTimes(partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition, offset: spec.timestamp })), this.#timeout, d));
    // No record at or after the time: the end.
    return partitions.map((tp, i) => {
      const o = found.find((f) => f.topic === tp.topic && f.partition === tp.partition)?.offset;
      return typeof o === "number" && o >= 0 ? o : Number(marks[i].highOffset);
    });
  }

  async fetch(requests: readonly FetchRequest[], options: FetchOptions): Promise<readonly FetchResult[]> {
    this.#check();
    let f = this.#fetchers.get(options.isolation);
    if (f === undefined) {
      f = new Fetcher(new LazyConsumer({ ...this.#consumerDefaults(options.isolation), "group.id": `eddy-fetch-${randomUUID()}`, ...this.#base }));
      this.#fetchers.set(options.isolation, f);
    }
    return f.fetch(requests, options);
  }

  async committedOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<readonly (CommittedOffset | undefined)[]> {
    // A read_committed consumer asks for stable offsets (KIP-447's require_stable): offsets a
    // transaction still holds are waited for, not answered with the ones before it.
    const c = await this.#admin("read_committed", groupId);
    const got: Any[] = await call("committed offsets", (d) => c.committed(partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition })), this.#timeout, d));
    return partitions.map((tp) => {
      const g = got.find((g) => g.topic === tp.topic && g.partition === tp.partition);
      const o = g?.offset;
      return typeof o === "number" && o >= 0 ? { offset: o, metadata: typeof g.metadata === "string" ? g.metadata : "" } : undefined;
    });
  }

  async commitOffsets(groupId: string, offsets: readonly OffsetCommit[]): Promise<void> {
    const c = await this.#admin("read_committed", groupId);
    // commitSync: the callback form (commitCb) reported success against librdkafka's mock without
    // the offsets being committed. It blocks this thread for one round trip (once per checkpoint).
    try {
      c.commitSync(offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset, ...(o.metadata === undefined ? {} : { metadata: o.metadata }) })));
    } catch (e) {
      throw clientError(e, `commit offsets of group ${groupId}`);
    }
  }

  producer(options: ProducerOptions): KafkaProducer {
    this.#check();
    const config: Config = { "acks": "all", "enable.idempotence": true, "linger.ms": 5, "dr_cb": true, "queue.buffering.max.messages": 1_000_000, ...this.#base };
    if (options.transactionalId !== undefined) {
      config["transactional.id"] = options.transactionalId;
      if (options.transactionTimeoutMs !== undefined) config["transaction.timeout.ms"] = options.transactionTimeoutMs;
    }
    const p = new ConfluentProducer(config, options.transactionalId, this.#timeout, () => this.#producers.delete(p), (group) => this.#admin("read_committed", group));
    this.#producers.add(p);
    return p;
  }

  commitTransaction(handle: TransactionHandle): Promise<"committed" | "already-committed"> {
    return Promise.reject(
      new KafkaClientError("INVALID_TXN_STATE", `cannot commit transaction ${handle.transactionalId} from another producer: librdkafka (@confluentinc/kafka-javascript) has no API to resume a transaction another producer opened (docs/connectors/kafka.md, "Exactly-once with the real client")`),
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...[...this.#admins.values()].map((c) => c.close()), ...[...this.#fetchers.values()].map((f) => f.close()), ...[...this.#producers].map((p) => p.close())]);
  }
}

/** Fetches from explicit offsets with one assigned consumer (see the top of the file). */
class Fetcher {
  readonly #consumer: LazyConsumer;
  /** Where the consumer's fetch position is per assigned partition (the next offset it will return). */
  #positions = new Map<string, number>();
  #waitMs = -1;

  constructor(consumer: LazyConsumer) {
    this.#consumer = consumer;
  }

  async fetch(requests: readonly FetchRequest[], options: FetchOptions): Promise<readonly FetchResult[]> {
    const c = await this.#consumer.get();
    this.#assign(c, requests);
    if (this.#waitMs !== options.maxWaitMs) {
      c.setDefaultConsumeTimeout(options.maxWaitMs);
      c.setDefaultIsTimeoutOnlyForFirstMessage(true);
      this.#waitMs = options.maxWaitMs;
    }
    const where = () => requests.map((r) => `${r.topic}-${r.partition}@${this.#positions.get(key(r.topic, r.partition))}`).join(", ");
    let messages: Any[];
    try {
      messages = await call("fetch", (d) => c.consume(Math.min(100_000, options.maxRecords * requests.length), d));
    } catch (e) {
      // The assignment may be in an unknown state: assign again on the next fetch.
      this.#positions = new Map();
      throw clientError(e, `fetch from ${where()}`);
    }
    const byPartition = new Map<string, ConsumerRecord[]>();
    // hot path: messages come in runs of one partition, in offset order.
    let list: ConsumerRecord[] = [];
    let topic: string | undefined;
    let partition = -1;
    for (const m of messages) {
      if (m.partition !== partition || m.topic !== topic) {
        topic = m.topic as string;
        partition = m.partition as number;
        const k = key(topic, partition);
        const known = byPartition.get(k);
        if (known === undefined) byPartition.set(k, (list = []));
        else list = known;
      }
      list.push({ topic: m.topic, partition: m.partition, offset: m.offset, key: m.key ?? null, value: m.value ?? null, headers: m.headers === undefined ? NO_HEADERS : headersOf(m.headers), timestamp: m.timestamp ?? Date.now() });
    }
    for (const [k, records] of byPartition) this.#positions.set(k, records[records.length - 1]!.offset + 1);
    return requests.map((r): FetchResult => {
      const k = key(r.topic, r.partition);
      const records = byPartition.get(k) ?? [];
      const nextOffset = this.#positions.get(k) ?? r.offset;
      let end = nextOffset;
      try {
        // The end the last fetch response reported (librdkafka's cache; the LSO under read_committed).
        end = Math.max(end, Number(c.getWatermarkOffsets(r.topic, r.partition).highOffset));
      } catch {
        // No fetch response for the partition yet.
      }
      return { topic: r.topic, partition: r.partition, records, nextOffset, highWatermark: end, lastStableOffset: end };
    });
  }

  /**
   * Makes the consumer's assignment the requested partitions at the requested offsets. A partition
   * that continues where the consumer is keeps its fetch state (what librdkafka prefetched):
   * partitions dropped (a bounded partition that finished) or added (one discovered) change the
   * assignment incrementally; only a partition asked for elsewhere than the consumer is (a restore,
   * a seek) makes a new assignment.
   */
  #assign(c: Any, requests: readonly FetchRequest[]): void {
    const positions = this.#positions;
    const continues = positions.size > 0 && requests.every((r) => {
      const at = positions.get(key(r.topic, r.partition));
      return at === undefined || at === r.offset;
    });
    if (continues) {
      const wanted = new Set(requests.map((r) => key(r.topic, r.partition)));
      const dropped = [...positions.keys()].filter((k) => !wanted.has(k));
      const added = requests.filter((r) => !positions.has(key(r.topic, r.partition)));
      if (dropped.length === 0 && added.length === 0) return;
      try {
        if (dropped.length > 0) c.incrementalUnassign(dropped.map(partitionOfKey));
        if (added.length > 0) c.incrementalAssign(added.map((r) => ({ topic: r.topic, partition: r.partition, offset: r.offset })));
        for (const k of dropped) positions.delete(k);
        for (const r of added) positions.set(key(r.topic, r.partition), r.offset);
        return;
      } catch {
        // Fall back to a new assignment.
      }
    }
    if (positions.size > 0) c.unassign();
    c.assign(requests.map((r) => ({ topic: r.topic, partition: r.partition, offset: r.offset })));
    this.#positions = new Map(requests.map((r) => [key(r.topic, r.partition), r.offset]));
  }

  close(): Promise<void> {
    return this.#consumer.close();
  }
}

interface Batch {
  readonly offsets: number[];
  left: number;
  failed: boolean;
  resolve(offsets: number[]): void;
  reject(e: unknown): void;
}

class ConfluentProducer implements KafkaProducer {
  readonly #config: Config;
  readonly #transactionalId: string | undefined;
  readonly #timeout: number;
  readonly #onClose: () => void;
  /** A consumer of the group (sendOffsetsToTransaction takes the group's metadata from one). */
  readonly #groupConsumer: (group: string) => Promise<Any>;
  #producer: Any;
  #connecting: Promise<Any> | undefined;
  #pending = 0;
  #closed = false;
  /** The last beginTransaction, answered or not. */
  #begun: Promise<void> = Promise.resolve();

  constructor(config: Config, transactionalId: string | undefined, timeout: number, onClose: () => void, groupConsumer: (group: string) => Promise<Any>) {
    this.#groupConsumer = groupConsumer;
    this.#config = config;
    this.#transactionalId = transactionalId;
    this.#timeout = timeout;
    this.#onClose = onClose;
  }

  #get(): Promise<Any> {
    if (this.#closed) return Promise.reject(new KafkaClientError("CLOSED", "the producer is closed"));
    this.#connecting ??= (async () => {
      const p = new (confluent().Producer)(this.#config, {});
      p.on("delivery-report", (e: unknown, report: Any) => {
        const batch = report.opaque?.batch as Batch | undefined;
        if (batch === undefined) return;
        this.#pending--;
        if (batch.failed) return;
        if (e) {
          batch.failed = true;
          batch.reject(clientError(e, `send to ${report.topic}-${report.partition}`));
          return;
        }
        batch.offsets[report.opaque.index] = Number(report.offset);
        if (--batch.left === 0) batch.resolve(batch.offsets);
      });
      await call("connect", (d) => p.connect({ timeout: this.#timeout }, d));
      p.setPollInterval(5);
      this.#producer = p;
      return p;
    })();
    return this.#connecting;
  }

  async initTransactions(): Promise<TransactionHandle> {
    if (this.#transactionalId === undefined) throw new KafkaClientError("INVALID_TXN_STATE", "initTransactions needs a producer made with a transactionalId");
    const p = await this.#get();
    await call("initTransactions", (d) => p.initTransactions(this.#timeout, (e: unknown) => d(e, undefined)));
    // librdkafka does not expose the producer id and epoch: -1 says "unknown" (no resume possible).
    return { transactionalId: this.#transactionalId, producerId: -1, epoch: -1 };
  }

  beginTransaction(): void {
    if (this.#producer === undefined) throw new KafkaClientError("INVALID_TXN_STATE", "beginTransaction before initTransactions");
    const p = this.#producer;
    // The binding answers by callback; the transaction's next call waits for it (and fails with its error).
    const begun: Promise<void> = call("beginTransaction", (d) => p.beginTransaction((e: unknown) => d(e, undefined)));
    begun.catch(() => {});
    this.#begun = begun;
  }

  async send(records: readonly ProducerRecord[]): Promise<readonly number[]> {
    if (records.length === 0) return [];
    const p = await this.#get();
    await this.#begun;
    return new Promise<number[]>((resolve, reject) => {
      const batch: Batch = { offsets: new Array<number>(records.length), left: records.length, failed: false, resolve, reject };
      const produceFrom = (i: number): void => {
        for (; i < records.length; i++) {
          const r = records[i]!;
          const headers = r.headers === undefined || r.headers.length === 0 ? undefined : r.headers.map(([k, v]) => ({ [k]: asBuffer(v)! }));
          try {
            p.produce(r.topic, r.partition, asBuffer(r.value), asBuffer(r.key), r.timestamp ?? null, { batch, index: i }, headers);
            this.#pending++;
          } catch (e) {
            if ((e as Any)?.code === confluent().CODES.ERRORS.ERR__QUEUE_FULL) {
              // librdkafka's queue is full: serve delivery reports, then go on (backpressure).
              p.poll();
              setTimeout(() => produceFrom(i), 1);
              return;
            }
            batch.failed = true;
            reject(clientError(e, `send to ${r.topic}-${r.partition}`));
            return;
          }
        }
      };
      produceFrom(0);
    });
  }

  async sendOffsetsToTransaction(offsets: readonly OffsetCommit[], groupId: string): Promise<void> {
    const p = await this.#get();
    await this.#begun;
    const consumer = await this.#groupConsumer(groupId);
    const list = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset, ...(o.metadata === undefined ? {} : { metadata: o.metadata }) }));
    await call("sendOffsetsToTransaction", (d) => p.sendOffsetsToTransaction(list, consumer, this.#timeout, (e: unknown) => d(e, undefined)));
  }

  async commitTransaction(): Promise<void> {
    const p = await this.#get();
    await this.#begun;
    await call("commitTransaction", (d) => p.commitTransaction(this.#timeout, (e: unknown) => d(e, undefined)));
  }

  async abortTransaction(): Promise<void> {
    const p = await this.#get();
    await this.#begun.catch(() => {});
    await call("abortTransaction", (d) => p.abortTransaction(this.#timeout, (e: unknown) => d(e, undefined)));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#onClose();
    const p = this.#connecting === undefined ? undefined : await this.#connecting.catch(() => undefined);
    if (p === undefined) return;
    p.setPollInterval(0);
    if (this.#pending > 0) await new Promise<void>((r) => p.flush(this.#timeout, () => r()));
    await new Promise<void>((r) => p.disconnect(() => r()));
  }
}

/** The connection options KafkaSource and KafkaSink take besides `client`. */
export type KafkaConnectionFields = Partial<KafkaConnectionOptions>;

/** The client factory of a source's or sink's options: `client`, or a Confluent client from `bootstrapServers` (exactly one). */
export function clientFactoryOf(o: KafkaConnectionFields & { readonly client?: () => KafkaClient }, who: string): () => KafkaClient {
  const invalid = (m: string): EddyError => new EddyError("INVALID_KAFKA_OPTIONS", `${who}: ${m}`);
  if (o.client !== undefined && o.bootstrapServers !== undefined) throw invalid("give `bootstrapServers` (the Confluent client) or `client` (a KafkaClient factory), not both");
  if (o.client !== undefined) {
    if (typeof o.client !== "function") throw invalid("`client` must be a function that makes a KafkaClient (see docs/connectors/kafka.md)");
    return o.client;
  }
  if (o.bootstrapServers === undefined) throw invalid("`bootstrapServers` (\"host:port,…\") is required (or `client`, a KafkaClient factory; see docs/connectors/kafka.md)");
  // Only the connection's fields (they travel to the main thread's host from worker threads).
  const connection: KafkaConnectionOptions = { bootstrapServers: o.bootstrapServers, clientId: o.clientId, tls: o.tls, sasl: o.sasl, clientConfig: o.clientConfig, requestTimeoutMs: o.requestTimeoutMs };
  librdkafkaConfig(connection); // checks the options now, not in a worker
  if (isMainThread) {
    // Loads the library now (a missing build fails the job's definition) and starts the host that
    // worker threads' clients use (confluent-thread-host.ts).
    confluent();
    ensureConfluentHost((c) => new ConfluentKafkaClient(c as KafkaConnectionOptions));
  }
  return () => confluentKafkaClient(connection);
}
