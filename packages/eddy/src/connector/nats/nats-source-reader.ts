/**
 * The NATS source's reader: one connection per reader, one ordered consumer per split (an
 * ephemeral pull consumer that the client recreates at the right sequence when it sees a gap),
 * started at the split's position. Messages are pulled in bounded fetches (at most `fetchMessages`
 * per request, one request in flight per split, the next only once the split's queue runs low), so
 * a slow job holds back the server instead of filling memory. `pollNext` never blocks: it emits
 * what the fetches have queued, each split through its own output (per-split watermarks and
 * idleness), and records the stream sequence of the next unread message as the split's position.
 *
 * Bounded splits stop at the stream's last sequence when they were first opened (`stopAt`): the
 * fetch stops at a message with that sequence, at one that says nothing more is pending for the
 * filter, or when the consumer reports nothing pending; a message past `stopAt` is not emitted.
 *
 * With `acknowledge`, each split is read by a durable pull consumer instead (nats-acks.ts): every
 * emitted message goes into the split's ledger, each checkpoint records the split's position, and
 * `notifyCheckpointComplete` acknowledges the messages below the completed checkpoint's position,
 * never one past it. A failed fetch replaces the consumer at the acknowledged position (messages
 * in flight are not lost to the ack wait); what it delivers again below the emitted position goes
 * to the ledger without being emitted, and below the acknowledged position is acknowledged at once.
 * A gap in the consumer's delivery sequence (deliveries that never reached the reader: lost in
 * flight with a dropped connection, or taken by another client pulling from the job's consumer)
 * replaces the consumer the same way, before anything past the gap is queued: every message
 * below the emitted position was emitted, so the ledger may acknowledge it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { EddyError } from "../../core/errors.ts";
import type { InputStatus, ReaderOutput, SourceReader, SourceReaderContext } from "../source.ts";
import { AckLedger, durableName, openDurable } from "./nats-acks.ts";
import { backoffMs, connectNats, isTransient, loadNats, natsFailure, type JetStreamClient, type JetStreamManager, type JsMsg, type NatsConnection, type OrderedConsumer } from "./nats-client.ts";
import { DeliveredMessage, type NatsMessage } from "./nats-message.ts";
import { parseNatsSplit, type NatsSplit } from "./nats-split.ts";
import type { NatsSourceConfig } from "./nats-source-options.ts";

/** Records emitted per `pollNext` call at most: bounds the work of one call. */
const MAX_RECORDS_PER_POLL = 1024;
/** A bad record's raw bytes, bounded (BadRecord.raw); copied, as the client's buffer is not the record's to keep. */
const MAX_RAW_BYTES = 65_536;

/** One split being read: its position and the messages fetched and not yet emitted. */
interface SplitReading {
  readonly split: NatsSplit;
  /** The stream sequence of the next message to emit (0: not resolved yet, see NatsSplit.next). */
  next: number;
  /** Bounded: the last sequence to read (-1: not resolved yet). */
  stopAt: number;
  consumer: OrderedConsumer | undefined;
  /** The stream sequence of the last message queued (fetched), 0 before the first: where a new consumer starts after it. */
  queuedUpTo: number;
  /** Fetched, not emitted: queue[head, length). */
  queue: (JsMsg | undefined)[];
  head: number;
  /** A fetch (or the consumer's creation, or a backoff) is under way. */
  fetching: boolean;
  /** Bounded: every message up to stopAt has been fetched; the split ends once its queue is emitted. */
  fetchedAll: boolean;
  /** Failed fetches in a row. */
  failures: number;
  /** Messages of the split's subjects in the stream after the last one fetched, as the server said with it (the consumer's num_pending); 0 before the first. */
  serverPending: number;
  /** With acknowledgements: the split's ledger, from its first open on. */
  ledger: AckLedger | undefined;
  /** With acknowledgements: the consumer in use (name, creation time), and the delivery sequence of the last message it delivered that was emitted (0: none yet). */
  incarnation: { readonly consumer: string; readonly created: string } | undefined;
  emittedDelivery: number;
  /** With acknowledgements: the delivery sequence of the last message the consumer in use delivered to the reader (0: none yet). */
  receivedDelivery: number;
  /**
   * With acknowledgements: replace the consumer before the next fetch, because the connection was
   * re-established (acknowledgements may have been lost with the old one) or deliveries of the
   * consumer never reached the reader (a gap in its delivery sequence).
   */
  replaceConsumer: boolean;
}

export function natsSourceReader<T>(config: NatsSourceConfig<T>, context: SourceReaderContext): SourceReader<T, NatsSplit> {
  const readings: SplitReading[] = [];
  /** With acknowledgements: splits read to their end whose last messages are not acknowledged yet. */
  const finishing: SplitReading[] = [];
  let noMoreSplits = false;
  // The reader's lag (FLIP-33 pendingRecords, what Kafka's consumer lag is): messages the server
  // holds past the last fetch, plus those fetched and not emitted yet; a bounded split counts up
  // to its stop sequence only.
  context.metrics.setPendingRecordsGauge(() =>
    readings.reduce((n, r) => {
      const queued = r.queue.length - r.head;
      const beyond = r.split.bounded && r.stopAt >= 0 ? Math.min(r.serverPending, Math.max(0, r.stopAt - r.queuedUpTo)) : r.serverPending;
      return n + queued + (r.fetchedAll ? 0 : beyond);
    }, 0),
  );
  let nc: NatsConnection | undefined;
  let js: JetStreamClient | undefined;
  let jsm: JetStreamManager | undefined;
  let connecting: Promise<void> | undefined;
  let failure: EddyError | undefined;
  let closed = false;
  let wake: (() => void) | undefined;
  let available: Promise<void> | undefined;

  const operator = `NatsSource(${config.stream})`;
  const where = (): string => `NatsSource of stream ${config.stream} (subtask ${context.subtaskIndex})`;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    available = undefined;
    w?.();
  };
  const fail = (e: unknown, what: string): void => {
    if (closed) return;
    failure ??= natsFailure("NATS_SOURCE_FAILED", `${where()} could not ${what}`, operator, context.subtaskIndex, e);
    notify();
  };

  const connect = (): void => {
    if (connecting !== undefined) return;
    connecting = (async () => {
      try {
        const conn = await connectNats(config.connection);
        if (closed) {
          await conn.close();
          return;
        }
        // All three at once, after the last await: `js` set means ready to fetch (pollNext and
        // isAvailable look at it), and a split opening then needs `jsm` too.
        const manager = await loadNats().jetstream.jetstreamManager(conn);
        if (closed) {
          await conn.close();
          return;
        }
        nc = conn;
        js = loadNats().jetstream.jetstream(conn);
        jsm = manager;
        if (config.acknowledge !== undefined) {
          // Acknowledgements are not confirmed: those sent as the connection went down may be
          // lost, and on a work-queue stream (one per message) no later one covers them. The
          // replaced consumer delivers every unacknowledged message below the acknowledged
          // position again, and the reader acknowledges it on arrival.
          void (async () => {
            for await (const s of conn.status()) if (s.type === "reconnect") for (const r of readings) if (r.ledger !== undefined) r.replaceConsumer = true;
          })().catch(() => {});
        }
        void conn.closed().then((err) => {
          if (!closed) fail(err ?? new Error("the connection was closed"), `go on reading: the connection to ${String(config.connection.servers)} is closed (the client gave up reconnecting)`);
        });
      } catch (e) {
        fail(e, `connect to ${String(config.connection.servers)}`);
      }
      notify();
    })();
  };

  /** Creates the split's ordered consumer at its position, resolving the start (and for bounded splits the stop) first. */
  const open = async (r: SplitReading): Promise<void> => {
    const { split } = r;
    if ((r.next === 0 && split.startNew) || (split.bounded && r.stopAt === -1)) {
      const info = await jsm!.streams.info(split.stream);
      if (r.next === 0 && split.startNew) r.next = info.state.last_seq + 1;
      if (split.bounded && r.stopAt === -1) r.stopAt = info.state.last_seq;
    }
    if (split.bounded && (r.stopAt === 0 || (r.next > 0 && r.next > r.stopAt))) {
      r.fetchedAll = true;
      return;
    }
    if (config.acknowledge !== undefined) return openAcknowledged(r, config.acknowledge);
    const options: Record<string, unknown> = {};
    if (split.subject !== null) options.filter_subjects = split.subject;
    const from = r.queuedUpTo > 0 ? r.queuedUpTo + 1 : r.next;
    if (from > 0) Object.assign(options, { deliver_policy: "by_start_sequence", opt_start_seq: from });
    else if (split.startTimeMs !== null) Object.assign(options, { deliver_policy: "by_start_time", opt_start_time: new Date(split.startTimeMs).toISOString() });
    else options.deliver_policy = "all";
    r.consumer = await js!.consumers.get(split.stream, options);
  };

  /** The split's durable consumer: created at its position when first opened, replaced at the acknowledged position after a failed fetch. */
  const openAcknowledged = async (r: SplitReading, ack: NonNullable<NatsSourceConfig<T>["acknowledge"]>): Promise<void> => {
    const first = r.ledger === undefined;
    const ledger = (r.ledger ??= new AckLedger(r.next));
    // Fetched and not emitted: fetched again from the new consumer (and on a work-queue stream,
    // which delivers from its first message, what lies below the position is acknowledged).
    r.queue.length = 0;
    r.head = 0;
    r.queuedUpTo = Math.max(0, r.next - 1);
    if (!first) ledger.reset();
    const opened = await openDurable(jsm!, js!, {
      stream: r.split.stream,
      subject: r.split.subject,
      name: durableName(ack.consumer, r.split.subject),
      from: ledger.ackBelow,
      startTimeMs: r.split.startTimeMs,
      ackWaitMs: ack.ackWaitMs,
      startsAtAll: config.start === "all",
      check: first ? { position: r.next, ahead: r.split.ahead, delivered: r.split.delivered } : undefined,
    });
    ledger.explicit = opened.explicit;
    r.incarnation = { consumer: opened.name, created: opened.created };
    r.emittedDelivery = 0;
    r.receivedDelivery = 0;
    r.consumer = opened.consumer;
  };

  /** Sends an acknowledgement (fire and forget: a lost one is covered by the next, or the messages are delivered again after a restore). */
  const send = (reply: string): void => {
    if (reply === "" || nc === undefined || nc.isClosed()) return;
    try {
      nc.publish(reply, "+ACK");
    } catch {
      // The connection is closing: the job fails or restores anyway.
    }
  };

  /**
   * One fetch request of the split: its messages are queued as they arrive. After a failed fetch
   * the consumer is replaced by one starting after the last message the reader queued
   * (`queuedUpTo`): the ordered consumer moves its own cursor when a message reaches the client,
   * before the iterator hands it over, so the reader does not rely on it after an error.
   */
  const fetch = async (r: SplitReading): Promise<void> => {
    let failed = false;
    try {
      if (r.replaceConsumer) {
        r.replaceConsumer = false;
        r.consumer = undefined;
      }
      if (r.consumer === undefined) await open(r);
      if (r.fetchedAll || closed) return;
      const messages = await r.consumer!.fetch({ max_messages: config.fetchMessages, expires: config.fetchExpiresMs });
      let received = 0;
      const ledger = r.ledger;
      for await (const m of messages) {
        received++;
        const seq = m.info.streamSequence;
        if (ledger !== undefined) {
          // The consumer is new (openDurable creates one each time): its deliveries count from 1.
          if (m.info.deliverySequence !== r.receivedDelivery + 1) {
            // Deliveries in between never arrived: their messages wait on this consumer,
            // unacknowledged, until the ack wait; skipping them would let a later checkpoint's
            // acknowledgements cover them unread. A new consumer delivers them again.
            r.replaceConsumer = true;
            messages.stop();
            break;
          }
          r.receivedDelivery = m.info.deliverySequence;
        }
        if (ledger === undefined || seq > r.queuedUpTo) {
          r.queue.push(m);
          r.queuedUpTo = seq;
        } else if (seq < ledger.ackBelow) {
          // Covered by a completed checkpoint (or the restored one): a work-queue stream delivers it again until acknowledged.
          send(m.reply);
        } else if (seq < r.next && seq > ledger.tracked) {
          // Emitted before the consumer was replaced: acknowledged with the checkpoint that covers it.
          ledger.push(seq, m.reply);
        }
        // Otherwise delivered again (after the ack wait): already queued or in the ledger.
        r.serverPending = m.info.pending;
        if (r.split.bounded && (seq >= r.stopAt || m.info.pending === 0)) {
          r.fetchedAll = true;
          messages.stop();
          break;
        }
        // The task waits for input (it emitted everything queued): wake it.
        if (wake !== undefined) notify();
      }
      if (received === 0 && r.split.bounded && !closed && (await r.consumer!.info()).num_pending === 0) r.fetchedAll = true;
      r.failures = 0;
    } catch (e) {
      if (closed) return;
      failed = true;
      r.failures++;
      // A lost connection: the client reconnects meanwhile; a fetch that still fails after
      // maxAttempts in a row (or any other error: no such stream) fails the job.
      if (!isTransient(e) || r.failures >= config.maxAttempts || nc?.isClosed() === true) {
        fail(e, `read split ${r.split.splitId} at sequence ${r.next}${r.failures > 1 ? ` after ${r.failures} attempts` : ""}`);
        return;
      }
      await sleep(backoffMs(config.initialBackoffMs, config.maxBackoffMs, r.failures));
    } finally {
      if (failed) r.consumer = undefined;
      r.fetching = false;
      notify();
    }
  };

  const emit = (r: SplitReading, output: ReaderOutput<T>, budget: number): number => {
    const out = output.createOutputForSplit(r.split.splitId);
    let emitted = 0;
    // hot path
    while (r.head < r.queue.length && emitted < budget) {
      const m = r.queue[r.head]!;
      r.queue[r.head++] = undefined;
      const seq = m.info.streamSequence;
      if (r.split.bounded && seq > r.stopAt) {
        r.fetchedAll = true;
        r.queue.length = r.head;
        break;
      }
      r.next = seq + 1;
      if (r.ledger !== undefined) {
        r.ledger.push(seq, m.reply);
        r.emittedDelivery = m.info.deliverySequence;
      }
      emitted++;
      const message: NatsMessage = new DeliveredMessage(r.split.stream, m);
      let value: T;
      try {
        value = config.deserialize(message);
      } catch (error) {
        out.reportBadRecord({ raw: m.data.slice(0, MAX_RAW_BYTES), error, position: { stream: r.split.stream, subject: m.subject, sequence: seq } });
        continue;
      }
      out.collect(value, message.timestamp);
    }
    if (r.head === r.queue.length) {
      r.queue.length = 0;
      r.head = 0;
    }
    return emitted;
  };

  return {
    start: connect,
    pollNext(output: ReaderOutput<T>): InputStatus {
      if (failure !== undefined) throw failure;
      let emitted = 0;
      for (let i = 0; i < readings.length; i++) {
        const r = readings[i]!;
        if (emitted < MAX_RECORDS_PER_POLL) emitted += emit(r, output, MAX_RECORDS_PER_POLL - emitted);
        const queued = r.queue.length - r.head;
        if (queued === 0 && r.fetchedAll && !r.fetching) {
          output.releaseOutputForSplit(r.split.splitId);
          readings.splice(i--, 1);
          if (r.ledger !== undefined && !r.ledger.idle) finishing.push(r);
          continue;
        }
        if (js !== undefined && !r.fetching && !r.fetchedAll && queued < config.fetchMessages / 2) {
          r.fetching = true;
          void fetch(r);
        }
      }
      if (readings.length === 0 && noMoreSplits) return "end";
      if (emitted > 0) return "more";
      return "nothing";
    },
    isAvailable() {
      if (failure !== undefined || readings.some((r) => r.queue.length > r.head || (js !== undefined && !r.fetching)) || (readings.length === 0 && noMoreSplits)) return Promise.resolve();
      available ??= new Promise<void>((resolve) => (wake = resolve));
      return available;
    },
    addSplits(splits) {
      // Restored splits come from a checkpoint: checked like any persisted input.
      for (const s of splits) {
        const split = parseNatsSplit(s);
        readings.push({ split, next: split.next, stopAt: split.stopAt, consumer: undefined, queuedUpTo: 0, queue: [], head: 0, fetching: false, fetchedAll: false, failures: 0, serverPending: 0, ledger: undefined, incarnation: undefined, emittedDelivery: 0, receivedDelivery: 0, replaceConsumer: false });
      }
      notify();
    },
    notifyNoMoreSplits() {
      noMoreSplits = true;
      notify();
    },
    snapshotState(checkpointId) {
      if (config.acknowledge === undefined) return readings.map((r): NatsSplit => ({ ...r.split, next: r.next, stopAt: r.stopAt }));
      for (const r of finishing) r.ledger!.record(checkpointId, r.next);
      return readings.map((r): NatsSplit => {
        r.ledger?.record(checkpointId, r.next);
        const { ahead: _a, delivered: _d, ...split } = r.split;
        const queued = r.queue[r.head];
        return {
          ...split,
          next: r.next,
          stopAt: r.stopAt,
          ...(queued === undefined ? {} : { ahead: queued.info.streamSequence }),
          ...(r.incarnation === undefined || r.emittedDelivery === 0 ? {} : { delivered: { ...r.incarnation, seq: r.emittedDelivery } }),
        };
      });
    },
    notifyCheckpointComplete(checkpointId) {
      if (config.acknowledge === undefined) return;
      for (const r of readings) r.ledger?.complete(checkpointId, send);
      for (let i = 0; i < finishing.length; i++) {
        const ledger = finishing[i]!.ledger!;
        ledger.complete(checkpointId, send);
        if (ledger.idle) finishing.splice(i--, 1);
      }
    },
    close() {
      if (closed) return;
      closed = true;
      for (const r of readings) r.consumer = undefined;
      const conn = nc;
      if (conn === undefined) return notify();
      // Acknowledgements are buffered by the client: close() alone may drop the last ones (those
      // of the job's final checkpoint). Flushed first, for at most 2 s (a connection that is away).
      const flushed = config.acknowledge === undefined || conn.isClosed() ? Promise.resolve() : Promise.race([conn.flush(), sleep(2_000, undefined, { ref: false })]);
      void flushed.catch(() => {}).then(() => conn.close()).catch(() => {});
      notify();
    },
  };
}
