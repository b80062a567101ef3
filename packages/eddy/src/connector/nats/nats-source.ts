/**
 * `NatsSource` (docs/connectors/nats.md): a JetStream stream as a source, for
 * `env.fromSource(source, watermarkStrategy, name)`. `NatsSource.json<T>(options)` parses each
 * message's payload as JSON, `.string(options)` decodes it as UTF-8, `.create(options,
 * deserialize)` takes any function of the message (subject, headers, data, sequence, timestamp).
 *
 * Positions are in Eddy's checkpoints (each split's next stream sequence), and restores start
 * there. By default the server is read through ordered consumers (ephemeral, no
 * acknowledgements); with `acknowledge`, through durable consumers acknowledged when a checkpoint
 * completes (nats-acks.ts). The docs compare the two.
 */
import type { Source } from "../source.ts";
import { staticSplitEnumerator } from "../source.ts";
import { loadNats } from "./nats-client.ts";
import type { NatsMessage } from "./nats-message.ts";
import { natsSourceConfig, type NatsSourceConfig, type NatsSourceOptions } from "./nats-source-options.ts";
import { natsSourceReader } from "./nats-source-reader.ts";
import { NATS_SPLIT_VERSION, type NatsSplit } from "./nats-split.ts";

function splitsOf(config: NatsSourceConfig<unknown>): NatsSplit[] {
  const start = config.start;
  const base = {
    v: NATS_SPLIT_VERSION,
    stream: config.stream,
    next: typeof start === "object" && "sequence" in start ? start.sequence : 0,
    startTimeMs: typeof start === "object" && "timeMs" in start ? start.timeMs : null,
    startNew: start === "new",
    stopAt: -1,
    bounded: config.bounded,
  } as const;
  if (config.subjects === undefined) return [{ ...base, splitId: config.stream, subject: null }];
  return config.subjects.map((subject) => ({ ...base, splitId: `${config.stream}/${subject}`, subject }));
}

function natsSource<T>(options: NatsSourceOptions, deserialize: (message: NatsMessage) => T): Source<T, NatsSplit> {
  const config = natsSourceConfig(options, deserialize);
  loadNats();
  const splits = splitsOf(config as NatsSourceConfig<unknown>);
  return {
    boundedness: config.bounded ? "bounded" : "continuous",
    maxParallelism: splits.length,
    createEnumerator: (context) => staticSplitEnumerator(context, splits),
    createReader: (context) => natsSourceReader(config, context),
  };
}

const utf8 = new TextDecoder();

export const NatsSource = {
  /** Each message's payload parsed as JSON; a payload that does not parse is a bad record (with its stream sequence). */
  json<T>(options: NatsSourceOptions): Source<T, NatsSplit> {
    return natsSource<T>(options, (m) => JSON.parse(utf8.decode(m.data)) as T);
  },
  /** Each message's payload as UTF-8 text. */
  string(options: NatsSourceOptions): Source<string, NatsSplit> {
    return natsSource<string>(options, (m) => utf8.decode(m.data));
  },
  /** Each message as `deserialize` makes it (it may throw: the message is then a bad record). */
  create<T>(options: NatsSourceOptions, deserialize: (message: NatsMessage) => T): Source<T, NatsSplit> {
    return natsSource<T>(options, deserialize);
  },
};
