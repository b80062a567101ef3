/** The NATS sink's options, checked once when the sink is built (docs/connectors/nats.md). */
import type { NatsConnectionOptions } from "./nats-client.ts";
import { checkedConnection, checkedInteger, invalidNats } from "./nats-source-options.ts";

export interface NatsSinkOptions<T> {
  readonly connection: NatsConnectionOptions;
  /** The subject of every message, or a function of the record. A stream must take it. */
  readonly subject: string | ((value: T) => string);
  /** The payload (default: the record as JSON). May throw: the record then goes to the sink's error policy. */
  readonly serialize?: (value: T) => Uint8Array | string;
  /** Headers of the message (besides Nats-Msg-Id). */
  readonly headers?: (value: T) => Readonly<Record<string, string>>;
  /**
   * The record's message id, instead of the positional one (`<job>:<sink>:<subtask>:<epoch>:<barrier>:<index>`).
   * An id derived from the record's content (a key and a version, an event id) keeps exactly-once
   * where the positional id cannot: when the order of the sink's input differs after a restore.
   */
  readonly messageId?: (value: T) => string;
  /** Publishes awaiting their PubAck at once, per sink subtask (default 1,024); more hold back the task. */
  readonly maxInFlight?: number;
  /** How long a publish waits for its PubAck (default 5,000 ms). */
  readonly publishTimeoutMs?: number;
  /** Attempts of a publish that failed with a transient error (a timeout, a lost connection) before the job fails (default 5). */
  readonly maxAttempts?: number;
  /** Default 100 ms, doubling up to maxBackoffMs (default 5,000 ms). */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

export interface NatsSinkConfig<T> {
  readonly connection: NatsConnectionOptions;
  readonly subject: (value: T) => string;
  readonly serialize: (value: T) => Uint8Array | string;
  readonly headers: ((value: T) => Readonly<Record<string, string>>) | undefined;
  readonly messageId: ((value: T) => string) | undefined;
  readonly maxInFlight: number;
  readonly publishTimeoutMs: number;
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
}

export function natsSinkConfig<T>(options: NatsSinkOptions<T>, serialize: (value: T) => Uint8Array | string): NatsSinkConfig<T> {
  const who = "NatsSink";
  if (options === null || typeof options !== "object") throw invalidNats(who, "needs options { connection, subject, ... }");
  const connection = checkedConnection(who, options.connection);
  const { subject } = options;
  if (typeof subject === "string") {
    if (subject.length === 0 || /[\s*>]/.test(subject)) throw invalidNats(who, `subject must be a subject to publish to (no spaces or wildcards), not ${JSON.stringify(subject)}`);
  } else if (typeof subject !== "function") throw invalidNats(who, "subject must be a subject or a function of the record");
  for (const name of ["serialize", "headers", "messageId"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function") throw invalidNats(who, `${name} must be a function of the record`);
  }
  return {
    connection,
    subject: typeof subject === "string" ? () => subject : subject,
    serialize: options.serialize ?? serialize,
    headers: options.headers,
    messageId: options.messageId,
    maxInFlight: checkedInteger(who, "maxInFlight", options.maxInFlight, 1_024, 1),
    publishTimeoutMs: checkedInteger(who, "publishTimeoutMs", options.publishTimeoutMs, 5_000, 1),
    maxAttempts: checkedInteger(who, "maxAttempts", options.maxAttempts, 5, 1),
    initialBackoffMs: checkedInteger(who, "initialBackoffMs", options.initialBackoffMs, 100, 0),
    maxBackoffMs: checkedInteger(who, "maxBackoffMs", options.maxBackoffMs, 5_000, 0),
  };
}
