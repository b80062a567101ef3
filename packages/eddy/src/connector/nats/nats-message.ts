/** A JetStream message as the source's deserializer sees it. */
import type { JsMsg } from "./nats-client.ts";

export interface NatsMessage {
  readonly stream: string;
  readonly subject: string;
  /** The payload. A view of the client's buffer: copy it to keep it beyond the deserializer call. */
  readonly data: Uint8Array;
  /** The headers (each name with its values), or undefined for a message without any. */
  readonly headers: Readonly<Record<string, readonly string[]>> | undefined;
  /** The stream sequence: the message's position. */
  readonly sequence: number;
  /** When the server stored the message (epoch ms): the record's timestamp unless the watermark strategy assigns one. */
  readonly timestamp: number;
}

/** The view of one delivered message; headers are decoded only when asked for. */
export class DeliveredMessage implements NatsMessage {
  readonly stream: string;
  readonly #msg: JsMsg;

  constructor(stream: string, msg: JsMsg) {
    this.stream = stream;
    this.#msg = msg;
  }

  get subject(): string {
    return this.#msg.subject;
  }
  get data(): Uint8Array {
    return this.#msg.data;
  }
  get sequence(): number {
    return this.#msg.info.streamSequence;
  }
  get timestamp(): number {
    return Math.floor(this.#msg.info.timestampNanos / 1e6);
  }
  get headers(): Readonly<Record<string, readonly string[]>> | undefined {
    const h = this.#msg.headers;
    if (h === undefined) return undefined;
    const out: Record<string, string[]> = {};
    for (const k of h.keys()) out[k] = h.values(k);
    return out;
  }
}
