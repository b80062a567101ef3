/** The NATS source's options, checked once when the source is built (docs/connectors/nats.md). */
import { EddyError } from "../../core/errors.ts";
import type { NatsConnectionOptions } from "./nats-client.ts";
import type { NatsMessage } from "./nats-message.ts";

/** Where a split starts reading when the job starts without a checkpoint. */
export type NatsStartPosition = "all" | "new" | { readonly sequence: number } | { readonly timeMs: number };

export interface NatsSourceOptions {
  readonly connection: NatsConnectionOptions;
  /** The JetStream stream to read. */
  readonly stream: string;
  /**
   * Subject filters (wildcards allowed): each one is a split, read by its own ordered consumer, in
   * parallel across the source's subtasks. They must not overlap (a message matching two is read
   * twice). Default: one split of the whole stream.
   */
  readonly subjects?: readonly string[];
  /** Default "all" (the stream's first message). `{ sequence }` and `{ timeMs }` as JetStream's by_start_sequence and by_start_time. */
  readonly start?: NatsStartPosition;
  /** Stop at the stream's last sequence when the split is first opened (default false: read on). */
  readonly bounded?: boolean;
  /** Messages per fetch request (default 1,000): what a split holds in memory at most, about 1.5 times that. */
  readonly fetchMessages?: number;
  /** How long a fetch waits for messages on a quiet stream before the next request (default 5,000 ms; at least 1,000). */
  readonly fetchExpiresMs?: number;
  /** Failed fetches of a split in a row (while the client reconnects) before the job fails (default 10). */
  readonly maxAttempts?: number;
  /** Default 100 ms, doubling up to maxBackoffMs (default 5,000 ms). */
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
  /**
   * Read through durable pull consumers and acknowledge each split's messages on the server when
   * the checkpoint that covers them completes (default: ordered consumers, no acknowledgements).
   * `consumer` names the consumers (the whole stream's, or `<consumer>_<subject>_<hash>` per
   * subject filter): unique per job and stream. Needed for work-queue and interest retention.
   */
  readonly acknowledge?: NatsAcknowledgeOptions;
}

export interface NatsAcknowledgeOptions {
  /** The durable consumers' name (or name prefix with subject filters): letters, digits, '_' and '-'. */
  readonly consumer: string;
  /**
   * The consumers' ack_wait (default 600,000 ms): a message not acknowledged this long after its
   * delivery is delivered again (and dropped by the reader). Keep it above the checkpoint interval
   * plus the longest checkpoint.
   */
  readonly ackWaitMs?: number;
}

export interface NatsSourceConfig<T> {
  readonly connection: NatsConnectionOptions;
  readonly stream: string;
  readonly subjects: readonly string[] | undefined;
  readonly start: NatsStartPosition;
  readonly bounded: boolean;
  readonly deserialize: (message: NatsMessage) => T;
  readonly fetchMessages: number;
  readonly fetchExpiresMs: number;
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly acknowledge: { readonly consumer: string; readonly ackWaitMs: number } | undefined;
}

export const invalidNats = (who: string, message: string): EddyError => new EddyError("INVALID_NATS_OPTIONS", `${who}: ${message}`);

export function checkedInteger(who: string, name: string, value: number | undefined, fallback: number, min: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < min) throw invalidNats(who, `${name} must be an integer ≥ ${min}, not ${JSON.stringify(v)}`);
  return v;
}

export function checkedConnection(who: string, connection: unknown): NatsConnectionOptions {
  const c = connection as Partial<NatsConnectionOptions> | null;
  const servers = c?.servers;
  const ok = typeof servers === "string" ? servers.length > 0 : Array.isArray(servers) && servers.length > 0 && servers.every((s) => typeof s === "string" && s.length > 0);
  if (c === null || typeof c !== "object" || !ok) throw invalidNats(who, `connection must be { servers: "nats://host:port" | [...], ... }, not ${JSON.stringify(connection)?.slice(0, 200)}`);
  return c as NatsConnectionOptions;
}

function checkedStart(start: unknown): NatsStartPosition {
  if (start === undefined) return "all";
  if (start === "all" || start === "new") return start;
  const s = start as { sequence?: unknown; timeMs?: unknown } | null;
  if (s !== null && typeof s === "object") {
    if (typeof s.sequence === "number" && Number.isSafeInteger(s.sequence) && s.sequence >= 1) return { sequence: s.sequence };
    if (typeof s.timeMs === "number" && Number.isSafeInteger(s.timeMs) && s.timeMs >= 0) return { timeMs: s.timeMs };
  }
  throw invalidNats("NatsSource", `start must be "all", "new", { sequence: n ≥ 1 } or { timeMs: epoch ms }, not ${JSON.stringify(start)}`);
}

export function natsSourceConfig<T>(options: NatsSourceOptions, deserialize: (message: NatsMessage) => T): NatsSourceConfig<T> {
  const who = "NatsSource";
  if (options === null || typeof options !== "object") throw invalidNats(who, "needs options { connection, stream, ... }");
  const connection = checkedConnection(who, options.connection);
  if (typeof options.stream !== "string" || !/^[^\s.*>/\\]+$/.test(options.stream)) throw invalidNats(who, `stream must be a stream name (no spaces, '.', '*', '>', '/'), not ${JSON.stringify(options.stream)}`);
  const subjects = options.subjects;
  if (subjects !== undefined) {
    if (!Array.isArray(subjects) || subjects.length === 0 || !subjects.every((s) => typeof s === "string" && s.length > 0 && !/\s/.test(s))) {
      throw invalidNats(who, `subjects must be a non-empty array of subject filters, not ${JSON.stringify(subjects)}`);
    }
    if (new Set(subjects).size !== subjects.length) throw invalidNats(who, `subjects name a filter twice: ${JSON.stringify(subjects)}`);
  }
  if (typeof deserialize !== "function") throw invalidNats(who, "deserialize must be a function of the message");
  return {
    connection,
    stream: options.stream,
    subjects: subjects === undefined ? undefined : [...subjects],
    start: checkedStart(options.start),
    bounded: options.bounded === true,
    deserialize,
    fetchMessages: checkedInteger(who, "fetchMessages", options.fetchMessages, 1_000, 1),
    fetchExpiresMs: checkedInteger(who, "fetchExpiresMs", options.fetchExpiresMs, 5_000, 1_000),
    maxAttempts: checkedInteger(who, "maxAttempts", options.maxAttempts, 10, 1),
    initialBackoffMs: checkedInteger(who, "initialBackoffMs", options.initialBackoffMs, 100, 0),
    maxBackoffMs: checkedInteger(who, "maxBackoffMs", options.maxBackoffMs, 5_000, 0),
    acknowledge: checkedAcknowledge(who, options.acknowledge),
  };
}

function checkedAcknowledge(who: string, ack: NatsAcknowledgeOptions | undefined): NatsSourceConfig<unknown>["acknowledge"] {
  if (ack === undefined) return undefined;
  if (ack === null || typeof ack !== "object" || typeof ack.consumer !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(ack.consumer)) {
    throw invalidNats(who, `acknowledge must be { consumer: "<name>" } (1 to 64 letters, digits, '_' or '-'), not ${JSON.stringify(ack)?.slice(0, 200)}`);
  }
  return { consumer: ack.consumer, ackWaitMs: checkedInteger(who, "acknowledge.ackWaitMs", ack.ackWaitMs, 600_000, 1_000) };
}
