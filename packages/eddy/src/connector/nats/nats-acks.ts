/**
 * The NATS source's acknowledgement mode (`acknowledge: { consumer }`, docs/connectors/nats.md):
 * each split is read through a durable pull consumer, and its messages are acknowledged on the
 * server when the checkpoint that covers them completes, exactly up to the position that
 * checkpoint recorded.
 *
 * - `AckLedger`: a split's emitted, unacknowledged messages (sequence and reply subject, in
 *   stream order) and the positions of its checkpoints not completed yet.
 * - `openDurable`: (re)creates a split's consumer at a position. JetStream 2.9 cannot move a
 *   consumer, so it is replaced: on work-queue streams (which allow one consumer per filter and
 *   only "deliver all", and keep messages when a consumer is deleted) the old one is deleted
 *   first; on limits and interest streams the new one (under the other of two names) is created
 *   first and the old one deleted after, so an interest stream never has a moment without
 *   interest (it drops messages then). Before a restore it checks that the stream still holds
 *   the restored position's messages ("too old": NATS_POSITION_GONE).
 */
import { createHash } from "node:crypto";
import { EddyError } from "../../core/errors.ts";
import { isConsumerNotFound, type ConsumerInfo, type JetStreamClient, type JetStreamManager, type OrderedConsumer } from "./nats-client.ts";
import type { NatsSplit } from "./nats-split.ts";

/** The durable consumer of a split: `<consumer>` for the whole stream, `<consumer>_<subject>_<hash>` per subject filter (names allow no '.', '*', '>'). */
export function durableName(consumer: string, subject: string | null): string {
  if (subject === null) return consumer;
  const readable = subject.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 48);
  return `${consumer}_${readable}_${createHash("sha256").update(subject).digest("hex").slice(0, 8)}`;
}

/** The other name a split's consumer takes when it is replaced on a limits or interest stream. */
const alternateName = (name: string): string => `${name}-r`;

/** A split's emitted messages not acknowledged yet, and its pending checkpoints' positions. */
export class AckLedger {
  /** Work-queue streams need an acknowledgement per message; others take AckAll (one per checkpoint). */
  explicit = false;
  /** Messages below this sequence are covered by a completed (or the restored) checkpoint: acknowledged, or to be at once. */
  ackBelow: number;
  /** The highest sequence in the ledger or below ackBelow: a delivery at or below it is a redelivery. */
  tracked: number;
  readonly #seqs: number[] = [];
  readonly #replies: string[] = [];
  #head = 0;
  /** Checkpoint id → the split's position (next sequence) it recorded. */
  readonly #pending = new Map<number, number>();

  constructor(position: number) {
    this.ackBelow = position;
    this.tracked = position - 1;
  }

  get unacknowledged(): number {
    return this.#seqs.length - this.#head;
  }
  get idle(): boolean {
    return this.unacknowledged === 0 && this.#pending.size === 0;
  }

  /** An emitted message (sequences increase). */
  push(seq: number, reply: string): void {
    this.#seqs.push(seq);
    this.#replies.push(reply);
    this.tracked = seq;
  }

  /** The consumer was replaced: the replies held belong to the old one; the new one delivers those messages again. */
  reset(): void {
    this.#seqs.length = 0;
    this.#replies.length = 0;
    this.#head = 0;
    this.tracked = this.ackBelow - 1;
  }

  record(checkpointId: number, position: number): void {
    if (position > 0) this.#pending.set(checkpointId, position);
  }

  /**
   * Checkpoint `checkpointId` completed: acknowledges (through `send`) every message below the
   * highest position recorded by it or an earlier checkpoint, and nothing at or past it.
   */
  complete(checkpointId: number, send: (reply: string) => void): void {
    let position = 0;
    for (const [id, p] of this.#pending) {
      if (id > checkpointId) continue;
      if (p > position) position = p;
      this.#pending.delete(id);
    }
    if (position <= this.ackBelow) return;
    this.ackBelow = position;
    if (this.tracked < position - 1) this.tracked = position - 1;
    let last: string | undefined;
    while (this.#head < this.#seqs.length && this.#seqs[this.#head]! < position) {
      const reply = this.#replies[this.#head]!;
      this.#replies[this.#head] = "";
      this.#head++;
      if (this.explicit) send(reply);
      else last = reply;
    }
    // AckAll: the last message below the position acknowledges every one before it.
    if (last !== undefined) send(last);
    if (this.#head > 4_096 && this.#head * 2 > this.#seqs.length) {
      this.#seqs.splice(0, this.#head);
      this.#replies.splice(0, this.#head);
      this.#head = 0;
    }
  }
}

export interface DurableTarget {
  readonly stream: string;
  readonly subject: string | null;
  /** The consumer's name (durableName). */
  readonly name: string;
  /** Where the new consumer starts: a sequence (> 0), or 0 for `startTimeMs` or the stream's first message. */
  readonly from: number;
  readonly startTimeMs: number | null;
  readonly ackWaitMs: number;
  /** Whether the job's start position is "all" (work-queue streams deliver nothing else). */
  readonly startsAtAll: boolean;
  /** First open of a split from a position (a restore, or a start sequence): check the stream still holds it. */
  readonly check: { readonly position: number; readonly ahead: number | undefined; readonly delivered: NatsSplit["delivered"] } | undefined;
}

export interface OpenedDurable {
  readonly consumer: OrderedConsumer;
  readonly explicit: boolean;
  readonly name: string;
  /** The consumer's creation time: which incarnation of the name it is. */
  readonly created: string;
}

async function infoOrUndefined(jsm: JetStreamManager, stream: string, name: string): Promise<ConsumerInfo | undefined> {
  try {
    return await jsm.consumers.info(stream, name);
  } catch (e) {
    if (isConsumerNotFound(e)) return undefined;
    throw e;
  }
}

async function deleteIfThere(jsm: JetStreamManager, stream: string, name: string): Promise<void> {
  try {
    await jsm.consumers.delete(stream, name);
  } catch (e) {
    if (!isConsumerNotFound(e)) throw e;
  }
}

/** Creates (or replaces) the split's durable consumer; see the module comment. */
export async function openDurable(jsm: JetStreamManager, js: JetStreamClient, t: DurableTarget): Promise<OpenedDurable> {
  const info = await jsm.streams.info(t.stream);
  const retention = info.config.retention ?? "limits";
  const workQueue = retention === "workqueue";
  const where = `stream ${t.stream}${t.subject === null ? "" : ` (subject ${t.subject})`}, consumer ${t.name}`;
  if (workQueue && !t.startsAtAll) {
    throw new EddyError("INVALID_NATS_OPTIONS", `NatsSource: ${where}: a work-queue stream delivers from its first message only (JetStream requires "deliver all" there): start must be "all"`);
  }
  const names = [t.name, alternateName(t.name)];
  const existing = (await Promise.all(names.map((n) => infoOrUndefined(jsm, t.stream, n)))).filter((c): c is ConsumerInfo => c !== undefined);

  if (t.check !== undefined && retention !== "limits" && t.check.position > 0) {
    const { position, ahead, delivered } = t.check;
    const gone = (why: string): EddyError =>
      new EddyError(
        "NATS_POSITION_GONE",
        `NatsSource: ${where}: the restored position (sequence ${position}) is no longer in the ${retention} stream: ${why}. Its messages were acknowledged (and removed) after the checkpoint was taken: restore from the job's latest checkpoint, or start the job without one`,
      );
    if (ahead !== undefined && ahead <= info.state.last_seq && (await jsm.streams.getMessage(t.stream, { seq: ahead })) === null) {
      throw gone(`message ${ahead}, the split's next one when the checkpoint was taken, was removed`);
    }
    const same = delivered === undefined ? undefined : existing.find((c) => c.name === delivered.consumer && c.created === delivered.created);
    if (same !== undefined && same.ack_floor.consumer_seq > delivered!.seq) {
      throw gone(`the consumer acknowledged its delivery ${same.ack_floor.consumer_seq}, after the split's last one at the checkpoint (${delivered!.seq})`);
    }
    // A consumer that replaced the split's since the checkpoint was created at a position a
    // later checkpoint covered; on an interest stream, deleting the one before it removed what
    // lay below that position.
    const later = retention === "interest" ? existing.find((c) => (c.config.opt_start_seq ?? 0) > position) : undefined;
    if (later !== undefined) throw gone(`its consumer was replaced since at sequence ${later.config.opt_start_seq} (a later checkpoint's position)`);
    if (t.subject === null) {
      const floor = Math.max(0, ...existing.map((c) => c.ack_floor.stream_seq));
      if (floor >= position) throw gone(`the consumer acknowledged up to sequence ${floor}`);
      if (info.state.first_seq > position && position <= info.state.last_seq) throw gone(`the stream's first message is ${info.state.first_seq}`);
    }
  }

  const config: Record<string, unknown> = {
    ack_policy: workQueue ? "explicit" : "all",
    ack_wait: t.ackWaitMs * 1_000_000,
    // Unlimited (-1, measured on nats-server 2.9.10): messages stay unacknowledged for a whole
    // checkpoint interval; the default (1,000) stalls a fast stream until the next checkpoint.
    max_ack_pending: -1,
    max_deliver: -1,
    replay_policy: "instant",
  };
  if (t.subject !== null) config.filter_subject = t.subject;
  if (workQueue || t.from === 0) {
    if (!workQueue && t.startTimeMs !== null) Object.assign(config, { deliver_policy: "by_start_time", opt_start_time: new Date(t.startTimeMs).toISOString() });
    else config.deliver_policy = "all";
  } else Object.assign(config, { deliver_policy: "by_start_sequence", opt_start_seq: t.from });

  let name: string;
  let created: string;
  if (workQueue) {
    // One consumer per filter: the old one goes first (a work-queue stream keeps its messages).
    for (const c of existing) await deleteIfThere(jsm, t.stream, c.name);
    name = t.name;
    created = (await jsm.consumers.add(t.stream, { ...config, durable_name: name })).created;
  } else {
    // The new one first: an interest stream drops messages nobody is interested in.
    if (existing.length === names.length) {
      await deleteIfThere(jsm, t.stream, names[1]!);
      existing.splice(existing.findIndex((c) => c.name === names[1]), 1);
    }
    name = names.find((n) => !existing.some((c) => c.name === n))!;
    created = (await jsm.consumers.add(t.stream, { ...config, durable_name: name })).created;
    for (const c of existing) await deleteIfThere(jsm, t.stream, c.name);
  }
  return { consumer: await js.consumers.get(t.stream, name), explicit: workQueue, name, created };
}
