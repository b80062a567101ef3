/**
 * The NATS sink's writer: publishes every record at once (one connection per sink subtask, at most
 * `maxInFlight` publishes awaiting their PubAck), each with the message id
 * `<job>:<sink>:<subtask>:<epoch>:<n>`, where `n` counts the records this subtask has written since
 * the job's fresh start (it is in every checkpoint, and a restored writer counts on from there) and
 * `epoch` is random per fresh start (kept in the checkpoint too). At a barrier `snapshotState`
 * resolves once every message written before it is acknowledged, so a completed checkpoint covers
 * only stored messages. After a restore the replayed records get the ids they had before the
 * failure, provided the sink subtask receives them in the same order (docs/connectors/nats.md), and
 * JetStream's duplicate window drops the ones it stored already.
 *
 * Why a running count and not (checkpoint, index within it): a replay passes its barriers at other
 * records than the failed run did (barriers are injected by time), so the index within a
 * checkpoint would name different records in the two runs, and the window would drop the wrong
 * ones. The count since the restored checkpoint is the same in both.
 *
 * A publish that fails with a transient error (a timeout, a lost connection being re-established)
 * is sent again with the same id after a backoff, at most `maxAttempts` times; a refused message
 * (too large, an invalid subject) goes to the error policy; anything else fails the job.
 */
import { randomUUID } from "node:crypto";
import { describeCause, EddyError } from "../../core/errors.ts";
import { ConditionWaiters } from "../condition-waiters.ts";
import type { SinkContext, SinkWriter } from "../sink.ts";
import { backoffMs, connectNats, isClosedConnection, isRefusedMessage, isTransient, loadNats, natsFailure, type JetStreamClient, type NatsConnection, type NatsHeaders, type PubAck } from "./nats-client.ts";
import type { NatsSinkConfig } from "./nats-sink-options.ts";

/** What a writer records in each checkpoint (persisted: versioned). */
export interface NatsWriterState {
  readonly v: 1;
  readonly subtask: number;
  /** Records written before this checkpoint's barrier since the fresh start (the next record's n). */
  readonly written: number;
  readonly epoch: string;
}

function readWriterState(value: unknown): NatsWriterState {
  const s = value as Partial<NatsWriterState> | null;
  if (s === null || typeof s !== "object" || s.v !== 1 || !Number.isSafeInteger(s.subtask) || !Number.isSafeInteger(s.written) || typeof s.epoch !== "string") {
    throw new EddyError("CHECKPOINT_CORRUPT", `a NATS sink writer's state in the checkpoint is not one this version reads: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  return s as NatsWriterState;
}

export class NatsSinkWriter<T> implements SinkWriter<T> {
  readonly #config: NatsSinkConfig<T>;
  readonly #context: SinkContext;
  readonly #prefix: string;
  readonly #epoch: string;
  /** The n of the next record (see the file comment). */
  #written: number;
  /** Barriers passed by this writer: what the in-flight publishes are counted by (not persisted). */
  #barrier = 0;
  #nc: NatsConnection | undefined;
  #js: JetStreamClient | undefined;
  readonly #connecting: Promise<void>;
  /** Publishes not yet acknowledged (or waiting to be sent again), by barrier. */
  readonly #inFlight = new Map<number, number>();
  #inFlightTotal = 0;
  #failure: unknown;
  #closed = false;
  /** Notified whenever a publish settles or the writer fails. */
  readonly #waiters = new ConditionWaiters(() => this.#failure);
  /** Messages the stream reported as duplicates (dropped by its window): a replay after a restore. */
  duplicates = 0;

  constructor(config: NatsSinkConfig<T>, context: SinkContext) {
    this.#config = config;
    this.#context = context;
    this.#prefix = `${context.job.jobName}:${context.operatorName}:${context.subtaskIndex}`;
    const restored = (context.restoredState ?? []).map(readWriterState);
    const own = restored.find((s) => s.subtask === context.subtaskIndex) ?? restored[0];
    this.#epoch = own?.epoch ?? randomUUID().slice(0, 8);
    this.#written = own?.written ?? 0;
    this.#connecting = this.#connect();
  }

  async #connect(): Promise<void> {
    try {
      const nc = await connectNats(this.#config.connection);
      if (this.#closed) {
        await nc.close();
        return;
      }
      this.#nc = nc;
      this.#js = loadNats().jetstream.jetstream(nc, { timeout: this.#config.publishTimeoutMs });
    } catch (e) {
      this.#fail(natsFailure("NATS_SINK_FAILED", `${this.#where()} could not connect to ${String(this.#config.connection.servers)}`, this.#context.operatorName, this.#context.subtaskIndex, e));
    }
  }

  #where(): string {
    return `NatsSink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex})`;
  }

  // hot path
  write(value: T): void | Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const id = this.#config.messageId === undefined ? `${this.#prefix}:${this.#epoch}:${this.#written}` : undefined;
    this.#written++;
    let subject: string;
    let data: Uint8Array | string;
    let headers: NatsHeaders | undefined;
    let msgId: string;
    try {
      subject = this.#config.subject(value);
      data = this.#config.serialize(value);
      if (typeof subject !== "string" || subject.length === 0) throw new Error(`the subject is ${JSON.stringify(subject)}, not a subject`);
      if (typeof data !== "string" && !(data instanceof Uint8Array)) throw new Error(`the payload is ${typeof data}, not a string or Uint8Array`);
      msgId = id ?? this.#config.messageId!(value);
      if (this.#config.headers !== undefined) {
        headers = loadNats().transport.headers();
        for (const [k, v] of Object.entries(this.#config.headers(value))) headers.set(k, v);
      }
    } catch (e) {
      return this.#badRecord(value, e);
    }
    if (this.#js === undefined) return this.#connecting.then(() => this.#publishOrWait(value, subject, data, headers, msgId));
    return this.#publishOrWait(value, subject, data, headers, msgId);
  }

  #publishOrWait(value: T, subject: string, data: Uint8Array | string, headers: NatsHeaders | undefined, msgId: string): void | Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    this.#publish(value, subject, data, headers, msgId, this.#barrier, 1);
    if (this.#inFlightTotal < this.#config.maxInFlight) return;
    // Full: the task waits until half the window is acknowledged (not one slot: a wake-up per
    // message would cost more than the publish).
    const resume = this.#config.maxInFlight >>> 1;
    return this.#until(() => this.#inFlightTotal <= resume);
  }

  /** Sends one message; its PubAck (or its last failure) settles it. The same id on every attempt. */
  #publish(value: T, subject: string, data: Uint8Array | string, headers: NatsHeaders | undefined, msgId: string, barrier: number, attempt: number): void {
    if (attempt === 1) {
      this.#inFlight.set(barrier, (this.#inFlight.get(barrier) ?? 0) + 1);
      this.#inFlightTotal++;
    }
    const options = headers === undefined ? { msgID: msgId, timeout: this.#config.publishTimeoutMs } : { msgID: msgId, timeout: this.#config.publishTimeoutMs, headers };
    let sent: Promise<PubAck>;
    try {
      sent = this.#js!.publish(subject, data, options);
    } catch (e) {
      // The client checks some things (the payload's size) before it sends: the same path as a refusal.
      sent = Promise.reject(e);
    }
    sent.then(
      (ack) => {
        if (ack.duplicate) this.duplicates++;
        this.#settle(barrier);
      },
      (e: unknown) => {
        if (this.#closed) return this.#settle(barrier);
        if (isRefusedMessage(e)) {
          this.#badRecordAsync(value, e, subject);
          return this.#settle(barrier);
        }
        const closed = isClosedConnection(e) || this.#nc?.isClosed() === true;
        if (closed || !isTransient(e) || attempt >= this.#config.maxAttempts) {
          const why = closed ? `the connection to ${String(this.#config.connection.servers)} is closed (the client gave up reconnecting)` : attempt > 1 ? `failed after ${attempt} attempts` : "failed";
          this.#fail(natsFailure("NATS_SINK_FAILED", `${this.#where()} could not publish to '${subject}': ${why}`, this.#context.operatorName, this.#context.subtaskIndex, e));
          return this.#settle(barrier);
        }
        // Still in flight while it waits. The same id again: if the first attempt was stored
        // after all, the stream drops this one.
        setTimeout(() => {
          if (this.#closed || this.#failure !== undefined) return this.#settle(barrier);
          this.#publish(value, subject, data, headers, msgId, barrier, attempt + 1);
        }, backoffMs(this.#config.initialBackoffMs, this.#config.maxBackoffMs, attempt));
      },
    );
  }

  #settle(barrier: number): void {
    const n = this.#inFlight.get(barrier)! - 1;
    if (n === 0) this.#inFlight.delete(barrier);
    else this.#inFlight.set(barrier, n);
    this.#inFlightTotal--;
    this.#notify();
  }

  /** Everything written so far acknowledged; rejects if the writer failed. */
  flush(): Promise<void> {
    return this.#connecting.then(() => this.#until(() => this.#inFlightTotal === 0));
  }

  /**
   * At the barrier: the writer's state (the count and epoch of the ids), given once every message
   * written before the barrier is acknowledged. The checkpoint's asynchronous part waits for the
   * promise, so a completed checkpoint never counts a message the stream has not stored. (Not in
   * prepareCommit: the task calls that only for sinks with a committer, and this one has none.)
   */
  snapshotState(): readonly NatsWriterState[] | Promise<readonly NatsWriterState[]> {
    if (this.#failure !== undefined) throw this.#failure;
    const state: readonly NatsWriterState[] = [{ v: 1, subtask: this.#context.subtaskIndex, written: this.#written, epoch: this.#epoch }];
    const barrier = this.#barrier++;
    const acknowledged = (): boolean => ![...this.#inFlight.keys()].some((b) => b <= barrier);
    if (this.#js !== undefined && acknowledged()) return state;
    return this.#connecting.then(() => this.#until(acknowledged)).then(() => state);
  }

  /** Closes the connection (what is not acknowledged is published again after a restore). May be called twice. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#failure ??= new EddyError("SINK_CLOSED", `sink '${this.#context.operatorName}' (subtask ${this.#context.subtaskIndex}) is closed`);
    this.#notify();
    return this.#connecting.then(() => this.#nc?.close()).catch(() => {});
  }

  /** A record the sink cannot publish: to the error policy (which throws under `fail`). */
  #badRecord(value: T, cause: unknown): void | Promise<void> {
    try {
      this.#context.reportBadRecord(value, this.#badMessage(value, cause));
    } catch (e) {
      this.#fail(e);
      return Promise.reject(e);
    }
  }

  #badRecordAsync(value: T, cause: unknown, subject?: string): void {
    try {
      this.#context.reportBadRecord(value, this.#badMessage(value, cause, subject));
    } catch (e) {
      this.#fail(e);
    }
  }

  #badMessage(value: T, cause: unknown, subject?: string): EddyError {
    let shown: string;
    try {
      shown = JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v))?.slice(0, 200) ?? String(value);
    } catch {
      shown = String(value);
    }
    return new EddyError(
      "NATS_BAD_MESSAGE",
      `${this.#where()} could not publish the record ${shown}${subject === undefined ? "" : ` to '${subject}'`}: ${describeCause(cause)}`,
      { operator: this.#context.operatorName, subtask: this.#context.subtaskIndex, cause },
    );
  }

  #fail(e: unknown): void {
    this.#failure ??= e;
    this.#notify();
  }

  #until(ready: () => boolean): Promise<void> {
    return this.#waiters.until(ready);
  }

  #notify(): void {
    this.#waiters.notify();
  }
}
