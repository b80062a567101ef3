/**
 * An in-memory Kafka broker behind Eddy's client interface (client.ts), for testing the
 * exactly-once logic: no Kafka broker can run on the machines Eddy is built on, and librdkafka's
 * mock cluster does not implement transactions faithfully. This is a fake, not Kafka: it is
 * faithful on what the source and the sink depend on, and on nothing else (docs/connectors/kafka.md):
 *
 * - per-partition logs; every record and every transaction marker takes one offset;
 * - transactions per transactional id: `initTransactions` bumps the id's epoch, aborts the
 *   transaction the id had open (abort markers in its partitions) and fences every producer with
 *   an older epoch (its sends, commits and aborts fail with PRODUCER_FENCED);
 * - read_committed reads stop at the last stable offset (the first offset of the oldest open
 *   transaction of the partition) and leave out records of aborted transactions;
 * - a transaction open longer than its timeout is aborted by the broker (checked on every call);
 * - a transaction left open can be committed by its (transactional id, producer id, epoch) from
 *   any client (Flink's resumeTransaction), and a repeated commit of the last one is recognised;
 * - consumer group offsets (committed and read, no group membership: Eddy assigns partitions itself);
 *   offsets sent in a transaction (`sendOffsetsToTransaction`, KIP-98's TxnOffsetCommit) become the
 *   group's committed offsets when the transaction commits, never if it aborts (until then reads
 *   return the offsets committed before; Kafka does not check an offset against the log there);
 * - listOffsets for earliest, latest (the LSO under read_committed) and by timestamp.
 *
 * Not modelled: replication, leaders and their failures, retention and compaction, quotas,
 * consumer group rebalances, idempotent-producer sequence numbers (a resend after a lost
 * acknowledgement would append twice here; the sinks never resend within a transaction).
 */
import { KafkaClientError, type CommittedOffset, type ConsumerRecord, type FetchOptions, type FetchRequest, type FetchResult, type Isolation, type KafkaClient, type KafkaHeader, type KafkaProducer, type OffsetCommit, type OffsetSpec, type ProducerOptions, type ProducerRecord, type TopicPartition, type TransactionHandle } from "./client.ts";

type TxnState = "open" | "committed" | "aborted";

/** One transaction of one transactional id, at one epoch. */
interface Txn {
  readonly producerId: number;
  readonly epoch: number;
  state: TxnState;
  /** The partitions it wrote to, with the offset of its first record there. */
  readonly partitions: Map<Partition, number>;
  readonly startedAt: number;
  readonly timeoutMs: number;
  /** Group offsets sent in it (`sendOffsetsToTransaction`): group → `topic\0partition` → offset. */
  readonly offsets: Map<string, Map<string, CommittedOffset>>;
}

type Entry =
  | { readonly kind: "data"; readonly record: ConsumerRecord; readonly txn: Txn | null }
  | { readonly kind: "marker"; readonly commit: boolean };

class Partition {
  readonly log: Entry[] = [];
  /** Open transactions with records here (their first offset holds the LSO back). */
  readonly open = new Set<Txn>();

  constructor(
    readonly topic: string,
    readonly index: number,
  ) {}

  get highWatermark(): number {
    return this.log.length;
  }

  get lastStableOffset(): number {
    let lso = this.log.length;
    for (const txn of this.open) lso = Math.min(lso, txn.partitions.get(this)!);
    return lso;
  }
}

/** A transactional id's registration on the broker. */
interface TransactionalIdState {
  readonly producerId: number;
  epoch: number;
  /** The transaction open now, if any. */
  current: Txn | undefined;
  /** The last transaction that ended (for recognising a repeated commit). */
  last: Txn | undefined;
}

export interface FakeKafkaBrokerOptions {
  /** The clock (default Date.now): transaction timeouts and record timestamps. */
  readonly now?: () => number;
  /** The default transaction timeout (Kafka's transaction.timeout.ms, default 60 s). */
  readonly transactionTimeoutMs?: number;
}

export class FakeKafkaBroker {
  readonly #topics = new Map<string, Partition[]>();
  readonly #transactionalIds = new Map<string, TransactionalIdState>();
  readonly #groups = new Map<string, Map<string, CommittedOffset>>();
  readonly #now: () => number;
  readonly #defaultTimeoutMs: number;
  #nextProducerId = 1000;
  /** Woken on every append or transaction end (long-polling fetches). */
  #waiters: (() => void)[] = [];

  constructor(options: FakeKafkaBrokerOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#defaultTimeoutMs = options.transactionTimeoutMs ?? 60_000;
  }

  /** Creates `topic` with `partitions` partitions, or adds partitions to it up to that number. */
  createTopic(topic: string, partitions: number): void {
    if (!/^[a-zA-Z0-9._-]{1,249}$/.test(topic)) throw new KafkaClientError("UNKNOWN_TOPIC", `invalid topic name '${topic}'`);
    if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
    const existing = this.#topics.get(topic) ?? [];
    if (partitions < existing.length) throw new RangeError(`topic '${topic}' has ${existing.length} partitions; Kafka cannot remove partitions`);
    for (let i = existing.length; i < partitions; i++) existing.push(new Partition(topic, i));
    this.#topics.set(topic, existing);
  }

  /** A client of this broker (in the same thread; see fake-remote.ts for other threads). */
  client(): KafkaClient {
    return new FakeClient(this);
  }

  /** Transactional ids with a transaction open now (tests: nothing may be left open). */
  openTransactions(): string[] {
    this.#expire();
    return [...this.#transactionalIds].filter(([, s]) => s.current !== undefined).map(([id]) => id);
  }

  /** Every transactional id the broker knows, with its epoch (tests). */
  transactionalIds(): Map<string, number> {
    return new Map([...this.#transactionalIds].map(([id, s]) => [id, s.epoch]));
  }

  // ---- the operations of the client interface (FakeClient and FakeProducer call these) ----

  partitionCount(topic: string): number {
    return this.#topic(topic).length;
  }

  listTopics(): string[] {
    return [...this.#topics.keys()];
  }

  listOffsets(partitions: readonly TopicPartition[], spec: OffsetSpec, isolation: Isolation): number[] {
    this.#expire();
    return partitions.map((tp) => {
      const p = this.#partition(tp);
      if (spec === "earliest") return 0;
      if (spec === "latest") return isolation === "read_committed" ? p.lastStableOffset : p.highWatermark;
      const end = isolation === "read_committed" ? p.lastStableOffset : p.highWatermark;
      for (let o = 0; o < end; o++) {
        const e = p.log[o]!;
        if (e.kind === "data" && e.record.timestamp >= spec.timestamp) return o;
      }
      return end;
    });
  }

  async fetch(requests: readonly FetchRequest[], options: FetchOptions): Promise<FetchResult[]> {
    const deadline = this.#now() + options.maxWaitMs;
    for (;;) {
      const results = this.#fetchNow(requests, options);
      const remaining = deadline - this.#now();
      if (results.some((r) => r.records.length > 0) || remaining <= 0) return results;
      await this.#appended(remaining);
    }
  }

  committedOffsets(groupId: string, partitions: readonly TopicPartition[]): (CommittedOffset | undefined)[] {
    const group = this.#groups.get(groupId);
    return partitions.map((tp) => {
      this.#partition(tp);
      return group?.get(`${tp.topic}\0${tp.partition}`);
    });
  }

  commitOffsets(groupId: string, offsets: readonly OffsetCommit[]): void {
    const group = this.#groups.get(groupId) ?? new Map<string, CommittedOffset>();
    for (const o of offsets) {
      const p = this.#partition(o);
      if (!Number.isSafeInteger(o.offset) || o.offset < 0 || o.offset > p.highWatermark) throw new KafkaClientError("OFFSET_OUT_OF_RANGE", `offset ${o.offset} is out of range for ${o.topic}-${o.partition} (0..${p.highWatermark})`);
      group.set(`${o.topic}\0${o.partition}`, { offset: o.offset, metadata: o.metadata ?? "" });
    }
    this.#groups.set(groupId, group);
  }

  initTransactions(transactionalId: string): TransactionHandle {
    this.#expire();
    const state = this.#transactionalIds.get(transactionalId);
    if (state === undefined) {
      const fresh: TransactionalIdState = { producerId: this.#nextProducerId++, epoch: 0, current: undefined, last: undefined };
      this.#transactionalIds.set(transactionalId, fresh);
      return { transactionalId, producerId: fresh.producerId, epoch: 0 };
    }
    if (state.current !== undefined) this.#end(state, state.current, false);
    state.epoch++;
    return { transactionalId, producerId: state.producerId, epoch: state.epoch };
  }

  /** Appends `records` in the transaction of `handle` (opened by the first send), or plainly without a handle. */
  send(handle: TransactionHandle | undefined, timeoutMs: number | undefined, records: readonly ProducerRecord[]): number[] {
    this.#expire();
    const partitions = records.map((r) => this.#partition(r));
    let txn: Txn | null = null;
    if (handle !== undefined) {
      const state = this.#current(handle);
      if (state.current === undefined) {
        state.current = this.#newTxn(handle, timeoutMs);
      }
      txn = state.current;
    }
    const offsets = records.map((r, i) => {
      const p = partitions[i]!;
      const offset = p.log.length;
      if (txn !== null && !txn.partitions.has(p)) {
        txn.partitions.set(p, offset);
        p.open.add(txn);
      }
      const headers: KafkaHeader[] = (r.headers ?? []).map(([k, v]) => [k, copy(v)!]);
      const record: ConsumerRecord = { topic: r.topic, partition: r.partition, offset, key: copy(r.key), value: copy(r.value), headers, timestamp: r.timestamp ?? this.#now() };
      p.log.push({ kind: "data", record, txn });
      return offset;
    });
    if (records.length > 0) this.#wake();
    return offsets;
  }

  /** Adds group offsets to the transaction of `handle` (opened by this call if none is); committed with it. */
  sendOffsets(handle: TransactionHandle, timeoutMs: number | undefined, groupId: string, offsets: readonly OffsetCommit[]): void {
    this.#expire();
    if (typeof groupId !== "string" || groupId === "") throw new KafkaClientError("INVALID_TXN_STATE", "sendOffsetsToTransaction needs a group id");
    for (const o of offsets) {
      this.#partition(o);
      if (!Number.isSafeInteger(o.offset) || o.offset < 0) throw new KafkaClientError("OFFSET_OUT_OF_RANGE", `offset ${o.offset} is not a valid offset`);
    }
    const state = this.#current(handle);
    state.current ??= this.#newTxn(handle, timeoutMs);
    const group = state.current.offsets.get(groupId) ?? new Map<string, CommittedOffset>();
    for (const o of offsets) group.set(`${o.topic}\0${o.partition}`, { offset: o.offset, metadata: o.metadata ?? "" });
    state.current.offsets.set(groupId, group);
  }

  #newTxn(handle: TransactionHandle, timeoutMs: number | undefined): Txn {
    return { producerId: handle.producerId, epoch: handle.epoch, state: "open", partitions: new Map(), startedAt: this.#now(), timeoutMs: timeoutMs ?? this.#defaultTimeoutMs, offsets: new Map() };
  }

  /** Ends the transaction open under `handle` (a commit or an abort by the producer itself). */
  endTransaction(handle: TransactionHandle, commit: boolean): void {
    this.#expire();
    const state = this.#current(handle);
    if (state.current !== undefined) this.#end(state, state.current, commit);
  }

  /** Commits the transaction of `handle` from any client (resumed: the producer may be gone). */
  commitResumed(handle: TransactionHandle): "committed" | "already-committed" {
    this.#expire();
    const state = this.#transactionalIds.get(handle.transactionalId);
    const what = `transaction of '${handle.transactionalId}' (producer ${handle.producerId}, epoch ${handle.epoch})`;
    if (state === undefined || state.producerId !== handle.producerId) throw new KafkaClientError("INVALID_TXN_STATE", `the ${what} is unknown to the broker`);
    const open = state.current;
    if (open !== undefined && open.epoch === handle.epoch) {
      this.#end(state, open, true);
      return "committed";
    }
    const last = state.last;
    if (last !== undefined && last.epoch === handle.epoch) {
      if (last.state === "committed") return "already-committed";
      throw new KafkaClientError("INVALID_TXN_STATE", `the ${what} was aborted${last.timeoutMs > 0 && this.#now() - last.startedAt >= last.timeoutMs ? " (it timed out)" : ""}`);
    }
    if (state.epoch > handle.epoch) throw new KafkaClientError("PRODUCER_FENCED", `the ${what} was fenced: the id is at epoch ${state.epoch}`);
    throw new KafkaClientError("INVALID_TXN_STATE", `the ${what} has nothing open to commit`);
  }

  // ---- internals ----

  #topic(topic: string): Partition[] {
    const t = this.#topics.get(topic);
    if (t === undefined) throw new KafkaClientError("UNKNOWN_TOPIC", `topic '${topic}' does not exist`);
    return t;
  }

  #partition(tp: TopicPartition): Partition {
    const p = this.#topic(tp.topic)[tp.partition];
    if (p === undefined) throw new KafkaClientError("UNKNOWN_PARTITION", `topic '${tp.topic}' has no partition ${tp.partition}`);
    return p;
  }

  /** The id's state, if `handle` is its current producer; PRODUCER_FENCED for an older epoch. */
  #current(handle: TransactionHandle): TransactionalIdState {
    const state = this.#transactionalIds.get(handle.transactionalId);
    if (state === undefined || state.producerId !== handle.producerId) throw new KafkaClientError("INVALID_TXN_STATE", `transactional id '${handle.transactionalId}' was not initialized for producer ${handle.producerId}`);
    if (state.epoch !== handle.epoch) {
      throw new KafkaClientError("PRODUCER_FENCED", `producer ${handle.producerId} of '${handle.transactionalId}' at epoch ${handle.epoch} was fenced by a newer one at epoch ${state.epoch}`);
    }
    return state;
  }

  #end(state: TransactionalIdState, txn: Txn, commit: boolean): void {
    for (const p of txn.partitions.keys()) {
      p.log.push({ kind: "marker", commit });
      p.open.delete(txn);
    }
    if (commit) {
      for (const [groupId, offsets] of txn.offsets) {
        const group = this.#groups.get(groupId) ?? new Map<string, CommittedOffset>();
        for (const [k, o] of offsets) group.set(k, o);
        this.#groups.set(groupId, group);
      }
    }
    txn.state = commit ? "committed" : "aborted";
    state.current = undefined;
    state.last = txn;
    this.#wake();
  }

  /** Aborts transactions open longer than their timeout (the broker's transaction coordinator does this). */
  #expire(): void {
    const now = this.#now();
    for (const state of this.#transactionalIds.values()) {
      const txn = state.current;
      if (txn !== undefined && now - txn.startedAt >= txn.timeoutMs) {
        this.#end(state, txn, false);
        // Kafka bumps the epoch when it aborts a timed-out transaction: the producer is fenced.
        state.epoch++;
      }
    }
  }

  #fetchNow(requests: readonly FetchRequest[], options: FetchOptions): FetchResult[] {
    this.#expire();
    return requests.map((rq) => {
      const p = this.#partition(rq);
      const hw = p.highWatermark;
      const lso = p.lastStableOffset;
      if (!Number.isSafeInteger(rq.offset) || rq.offset < 0 || rq.offset > hw) {
        throw new KafkaClientError("OFFSET_OUT_OF_RANGE", `offset ${rq.offset} is out of range for ${rq.topic}-${rq.partition} (0..${hw})`);
      }
      const end = options.isolation === "read_committed" ? lso : hw;
      const records: ConsumerRecord[] = [];
      let o = rq.offset;
      for (; o < end && records.length < options.maxRecords; o++) {
        const e = p.log[o]!;
        if (e.kind === "marker") continue;
        if (options.isolation === "read_committed" && e.txn !== null && e.txn.state === "aborted") continue;
        records.push(e.record);
      }
      return { topic: rq.topic, partition: rq.partition, records, nextOffset: o, highWatermark: hw, lastStableOffset: lso };
    });
  }

  #appended(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(1, Math.min(timeoutMs, 1000)));
      const waiter = (): void => done();
      this.#waiters.push(waiter);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
    });
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  newProducer(options: ProducerOptions): KafkaProducer {
    return new FakeProducer(this, options);
  }
}

/** A copy of bytes (what a broker stores is not the caller's buffer). */
function copy(b: Uint8Array | null): Uint8Array | null {
  return b === null ? null : Uint8Array.prototype.slice.call(b);
}

class FakeClient implements KafkaClient {
  readonly #broker: FakeKafkaBroker;
  #closed = false;

  constructor(broker: FakeKafkaBroker) {
    this.#broker = broker;
  }

  async partitionCount(topic: string): Promise<number> {
    this.#open();
    return this.#broker.partitionCount(topic);
  }
  async listTopics(): Promise<readonly string[]> {
    this.#open();
    return this.#broker.listTopics();
  }
  async listOffsets(partitions: readonly TopicPartition[], spec: OffsetSpec, isolation: Isolation): Promise<readonly number[]> {
    this.#open();
    return this.#broker.listOffsets(partitions, spec, isolation);
  }
  fetch(requests: readonly FetchRequest[], options: FetchOptions): Promise<readonly FetchResult[]> {
    this.#open();
    return this.#broker.fetch(requests, options);
  }
  async committedOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<readonly (CommittedOffset | undefined)[]> {
    this.#open();
    return this.#broker.committedOffsets(groupId, partitions);
  }
  async commitOffsets(groupId: string, offsets: readonly OffsetCommit[]): Promise<void> {
    this.#open();
    this.#broker.commitOffsets(groupId, offsets);
  }
  producer(options: ProducerOptions): KafkaProducer {
    this.#open();
    return this.#broker.newProducer(options);
  }
  async commitTransaction(handle: TransactionHandle): Promise<"committed" | "already-committed"> {
    this.#open();
    return this.#broker.commitResumed(handle);
  }
  async close(): Promise<void> {
    this.#closed = true;
  }
  #open(): void {
    if (this.#closed) throw new KafkaClientError("CLOSED", "the client is closed");
  }
}

class FakeProducer implements KafkaProducer {
  readonly #broker: FakeKafkaBroker;
  readonly #options: ProducerOptions;
  #handle: TransactionHandle | undefined;
  #inTransaction = false;
  #closed = false;

  constructor(broker: FakeKafkaBroker, options: ProducerOptions) {
    this.#broker = broker;
    this.#options = options;
  }

  async initTransactions(): Promise<TransactionHandle> {
    this.#check();
    if (this.#options.transactionalId === undefined) throw new KafkaClientError("INVALID_TXN_STATE", "initTransactions needs a transactional producer (transactionalId)");
    this.#handle = this.#broker.initTransactions(this.#options.transactionalId);
    this.#inTransaction = false;
    return this.#handle;
  }

  beginTransaction(): void {
    this.#check();
    if (this.#handle === undefined) throw new KafkaClientError("INVALID_TXN_STATE", "beginTransaction before initTransactions");
    if (this.#inTransaction) throw new KafkaClientError("INVALID_TXN_STATE", "a transaction is already open");
    this.#inTransaction = true;
  }

  async send(records: readonly ProducerRecord[]): Promise<readonly number[]> {
    this.#check();
    if (this.#options.transactionalId !== undefined && !this.#inTransaction) throw new KafkaClientError("INVALID_TXN_STATE", "a transactional producer sends only inside a transaction");
    return this.#broker.send(this.#handle, this.#options.transactionTimeoutMs, records);
  }

  async sendOffsetsToTransaction(offsets: readonly OffsetCommit[], groupId: string): Promise<void> {
    this.#check();
    if (this.#handle === undefined || !this.#inTransaction) throw new KafkaClientError("INVALID_TXN_STATE", "sendOffsetsToTransaction without an open transaction");
    this.#broker.sendOffsets(this.#handle, this.#options.transactionTimeoutMs, groupId, offsets);
  }

  async commitTransaction(): Promise<void> {
    this.#endTxn(true);
  }

  async abortTransaction(): Promise<void> {
    this.#endTxn(false);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  #endTxn(commit: boolean): void {
    this.#check();
    if (this.#handle === undefined || !this.#inTransaction) throw new KafkaClientError("INVALID_TXN_STATE", `${commit ? "commit" : "abort"} without an open transaction`);
    this.#inTransaction = false;
    this.#broker.endTransaction(this.#handle, commit);
  }

  #check(): void {
    if (this.#closed) throw new KafkaClientError("CLOSED", "the producer is closed");
  }
}

/**
 * What a read_committed reader sees of `topic` on `broker`, per partition, each record as `show`
 * makes it: how a test compares a job's exactly-once output with the failure-free run's.
 */
export async function readCommitted<R>(broker: FakeKafkaBroker, topic: string, show: (r: ConsumerRecord) => R): Promise<R[][]> {
  const client = broker.client();
  const out: R[][] = [];
  for (let p = 0; p < (await client.partitionCount(topic)); p++) {
    const [r] = await client.fetch([{ topic, partition: p, offset: 0 }], { isolation: "read_committed", maxRecords: 1e9, maxWaitMs: 0 });
    out.push(r!.records.map(show));
  }
  return out;
}
