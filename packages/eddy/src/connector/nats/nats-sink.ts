/**
 * `NatsSink` (docs/connectors/nats.md): publishes each record to JetStream with a deterministic
 * `Nats-Msg-Id`, so the stream's duplicate window drops what a restored job publishes again;
 * PubAcks are awaited at every checkpoint barrier. `NatsSink.json<T>(options)` publishes the
 * record as JSON, `.create<T>(options)` with `serialize`.
 */
import type { Sink } from "../sink.ts";
import { loadNats } from "./nats-client.ts";
import { natsSinkConfig, type NatsSinkOptions } from "./nats-sink-options.ts";
import { NatsSinkWriter } from "./nats-sink-writer.ts";

function natsSink<T>(options: NatsSinkOptions<T>, serialize: (value: T) => Uint8Array | string): Sink<T> {
  const config = natsSinkConfig(options, serialize);
  loadNats();
  return { createWriter: (context) => new NatsSinkWriter(config, context) };
}

export const NatsSink = {
  /** Each record as a JSON message (unless `serialize` says otherwise). */
  json<T>(options: NatsSinkOptions<T>): Sink<T> {
    return natsSink(options, (value) => JSON.stringify(value));
  },
  /** Each record as `options.serialize` makes it (required). */
  create<T>(options: NatsSinkOptions<T> & { readonly serialize: (value: T) => Uint8Array | string }): Sink<T> {
    return natsSink(options, options.serialize);
  },
};
