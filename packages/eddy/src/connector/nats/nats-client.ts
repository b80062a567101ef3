/**
 * The NATS connector's view of the official clients `@nats-io/transport-node` and
 * `@nats-io/jetstream` (3.x): loaded on first use (optional peer dependencies, so only jobs that
 * use NATS need them installed), typed here by the few members the connector calls so Eddy's
 * published declarations do not depend on them; and how their errors are classified.
 */
import { createRequire } from "node:module";
import { describeCause, EddyError } from "../../core/errors.ts";

/**
 * Options of `connect()` of `@nats-io/transport-node`, passed on unchanged: `servers` (one URL or
 * several), `token`, `user`/`pass`, `tls`, `name`, `maxReconnectAttempts` (default 10),
 * `reconnectTimeWait` (ms, default 2,000), ... A lost connection is reconnected by the client;
 * once it gives up, the connection is closed and the source or sink fails the job.
 */
export interface NatsConnectionOptions {
  readonly servers: string | readonly string[];
  readonly token?: string;
  readonly user?: string;
  readonly pass?: string;
  readonly name?: string;
  readonly maxReconnectAttempts?: number;
  readonly reconnectTimeWait?: number;
  readonly timeout?: number;
  readonly [option: string]: unknown;
}

export interface NatsHeaders {
  keys(): string[];
  values(key: string): string[];
  set(key: string, value: string): void;
}

export interface NatsConnection {
  /** A plain publish (no JetStream acknowledgement): the source's message acknowledgements, sent to a message's reply subject. */
  publish(subject: string, data?: string): void;
  /** The connection's events (`{ type: "reconnect" }` after the client re-established it, ...). */
  status(): AsyncIterable<{ readonly type: string }>;
  /** Resolves once the server has received everything published so far (a PING's PONG). */
  flush(): Promise<void>;
  close(): Promise<void>;
  closed(): Promise<void | Error>;
  isClosed(): boolean;
}

/** A JetStream message as a consumer delivers it. */
export interface JsMsg {
  readonly subject: string;
  /** Where an acknowledgement of the message goes (`$JS.ACK.<stream>.<consumer>....`): empty for an ordered consumer's. */
  readonly reply: string;
  readonly data: Uint8Array;
  readonly headers: NatsHeaders | undefined;
  readonly info: { readonly streamSequence: number; readonly deliverySequence: number; readonly pending: number; readonly timestampNanos: number };
}

export interface FetchedMessages extends AsyncIterable<JsMsg> {
  stop(err?: Error): void;
}

export interface OrderedConsumer {
  fetch(options: { readonly max_messages: number; readonly expires: number }): Promise<FetchedMessages>;
  info(cached?: boolean): Promise<{ readonly num_pending: number }>;
}

export interface PubAck {
  readonly stream: string;
  readonly seq: number;
  readonly duplicate: boolean;
}

export interface JetStreamClient {
  publish(subject: string, data: Uint8Array | string, options: { msgID?: string; timeout?: number; headers?: NatsHeaders }): Promise<PubAck>;
  /** With options: an ordered consumer; with a name: that (durable) pull consumer. */
  readonly consumers: { get(stream: string, options: Record<string, unknown> | string): Promise<OrderedConsumer> };
}

/** What the source reads of a durable consumer's state on the server. */
export interface ConsumerInfo {
  readonly name: string;
  readonly created: string;
  readonly ack_floor: { readonly stream_seq: number; readonly consumer_seq: number };
  readonly config: { readonly filter_subject?: string; readonly opt_start_seq?: number };
}

export interface JetStreamManager {
  readonly streams: {
    info(stream: string): Promise<{
      readonly state: { readonly first_seq: number; readonly last_seq: number };
      readonly config: { readonly duplicate_window?: number; readonly retention?: string };
    }>;
    /** The stored message with sequence `seq`, or with `next_by_subj` the first at or after it on that subject filter; null when there is none. */
    getMessage(stream: string, query: { readonly seq: number; readonly next_by_subj?: string }): Promise<{ readonly seq: number } | null>;
  };
  readonly consumers: {
    info(stream: string, name: string): Promise<ConsumerInfo>;
    add(stream: string, config: Record<string, unknown>): Promise<ConsumerInfo>;
    delete(stream: string, name: string): Promise<boolean>;
  };
}

interface TransportModule {
  connect(options: Record<string, unknown>): Promise<NatsConnection>;
  headers(): NatsHeaders;
}
interface JetStreamModule {
  jetstream(nc: NatsConnection, options?: Record<string, unknown>): JetStreamClient;
  jetstreamManager(nc: NatsConnection, options?: Record<string, unknown>): Promise<JetStreamManager>;
}

export interface NatsModules {
  readonly transport: TransportModule;
  readonly jetstream: JetStreamModule;
}

let loaded: NatsModules | undefined;

/** The client modules, or a clear error naming `npm i @nats-io/jetstream @nats-io/transport-node`. */
export function loadNats(): NatsModules {
  if (loaded !== undefined) return loaded;
  const require = createRequire(import.meta.url);
  try {
    loaded = { transport: require("@nats-io/transport-node") as TransportModule, jetstream: require("@nats-io/jetstream") as JetStreamModule };
    return loaded;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") {
      throw new EddyError(
        "NATS_CLIENT_MISSING",
        "the NATS connector needs the official client packages, optional peer dependencies of eddy: run `npm i @nats-io/jetstream @nats-io/transport-node`",
        { cause: e },
      );
    }
    throw e;
  }
}

/** Opens a connection (the client retries the initial connect only if `waitOnFirstConnect` is set). */
export function connectNats(options: NatsConnectionOptions): Promise<NatsConnection> {
  const { transport } = loadNats();
  const servers = typeof options.servers === "string" ? options.servers : [...options.servers];
  return transport.connect({ ...options, servers });
}

/** The error and its causes, outermost first. */
function chain(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let x = e; x !== undefined && x !== null && out.length < 5; x = (x as { cause?: unknown }).cause) out.push(x);
  return out;
}

// ConsumerNotFoundError: the server lost a source's ephemeral consumer (a restart); the reader
// creates a new one at its own position.
const TRANSIENT_NAMES = new Set(["TimeoutError", "ConnectionError", "NoRespondersError", "RequestError", "DrainingConnectionError", "ConsumerNotFoundError"]);
const TRANSIENT_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/** Whether a failed request may succeed when sent again (the connection is lost or reconnecting, JetStream is busy). */
export function isTransient(e: unknown): boolean {
  return chain(e).some((x) => {
    const name = (x as { name?: unknown } | null)?.name;
    const code = (x as { code?: unknown } | null)?.code;
    if (typeof name === "string" && TRANSIENT_NAMES.has(name)) return true;
    if (typeof code === "string" && TRANSIENT_CODES.has(code)) return true;
    // JetStream's 503 (no responders: no leader for the stream yet, or the server is restarting).
    return code === 503 || (x as { status?: unknown } | null)?.status === 503;
  });
}

/** Whether the connection is closed for good (the client gave up reconnecting, or it was closed). */
export function isClosedConnection(e: unknown): boolean {
  return chain(e).some((x) => (x as { name?: unknown } | null)?.name === "ClosedConnectionError");
}

/**
 * Whether the server (or the client, before sending) refused a message for its own content, which
 * no retry can fix: larger than the server's max_payload, larger than the stream's max_msg_size
 * (JetStream error 10054), an invalid subject or header.
 */
export function isRefusedMessage(e: unknown): boolean {
  return chain(e).some((x) => {
    const message = x instanceof Error ? x.message : "";
    const code = (x as { code?: unknown } | null)?.code;
    return code === 10054 || /max_payload|message size exceeds|InvalidSubject|invalid subject|invalid header/i.test(message) || (x as { name?: unknown } | null)?.name === "InvalidSubjectError";
  });
}

/** A failure of the NATS client as an EddyError with the operator, keeping an EddyError as it is. */
export function natsFailure(code: "NATS_SOURCE_FAILED" | "NATS_SINK_FAILED", what: string, operator: string, subtask: number, e: unknown): EddyError {
  if (e instanceof EddyError) return e;
  return new EddyError(code, `${what}: ${describeCause(e)}`, { operator, subtask, cause: e });
}

/** The wait before attempt `attempt + 1`: doubling from `initialMs`, at most `maxMs`. */
export function backoffMs(initialMs: number, maxMs: number, attempt: number): number {
  return Math.min(initialMs * 2 ** (attempt - 1), maxMs);
}

/** Whether JetStream answered that the consumer does not exist (API error 10014). */
export function isConsumerNotFound(e: unknown): boolean {
  return chain(e).some((x) => (x as { code?: unknown } | null)?.code === 10014 || (x as { name?: unknown } | null)?.name === "ConsumerNotFoundError");
}
