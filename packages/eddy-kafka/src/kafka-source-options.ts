/**
 * KafkaSource options, checked once when the source is built (INVALID_KAFKA_OPTIONS).
 */
import { EddyError } from "eddy";
import type { Isolation, KafkaClientFactory } from "./client.ts";
import { clientFactoryOf, type KafkaConnectionFields } from "./confluent-client.ts";
import { recordDeserializer, type KafkaDeserializer } from "./serde.ts";
import type { ConsumerRecord } from "./client.ts";

/**
 * Where partitions start (Flink's OffsetsInitializer):
 * - "earliest" / "latest" (latest: the last stable offset under read_committed);
 * - `{ committed: fallback }`: the group's committed offset, else `fallback` ("earliest" or "latest");
 * - `{ timestamp }`: the first record at or after the time (ms), else the end;
 * - `{ offsets, otherwise }`: explicit offsets per partition, `otherwise` for the rest.
 * Partitions discovered after the job started (new partitions) always start at the earliest
 * offset, so nothing written to them is missed (as Flink does).
 */
export type KafkaStartingOffsets =
  | "earliest"
  | "latest"
  | { readonly committed: "earliest" | "latest" }
  | { readonly timestamp: number }
  | { readonly offsets: readonly { readonly topic: string; readonly partition: number; readonly offset: number }[]; readonly otherwise: "earliest" | "latest" };

export interface KafkaSourceOptions<T> extends KafkaConnectionFields {
  /** Makes the client (once per reader and for the enumerator); see client.ts. Or `bootstrapServers` (and `tls`, `sasl`, `clientConfig`): the Confluent client. */
  readonly client?: KafkaClientFactory;
  /** The topics to read; or `topicPattern`, every topic whose name it matches (checked at each discovery). */
  readonly topics?: readonly string[];
  readonly topicPattern?: RegExp;
  /** The consumer group: where `{ committed }` starts, and where offsets are committed when checkpoints complete (monitoring only). */
  readonly groupId?: string;
  /** Default "earliest". */
  readonly startingOffsets?: KafkaStartingOffsets;
  /** Stop at the end each partition had when the job started (backfills, tests): the source ends. */
  readonly bounded?: boolean;
  /** "string", "json", "bytes" (the value), a schema registry serde (`schemaRegistry.avro({ url })`, the value or the key), or a function of the whole record (may return a promise). */
  readonly deserializer: KafkaDeserializer<T>;
  /** Default "read_committed" (records of open and aborted transactions are not read). */
  readonly isolation?: Isolation;
  /** How often new partitions (and topics of the pattern) are looked for; 0: never (default 30 s; bounded sources never). */
  readonly partitionDiscoveryIntervalMs?: number;
  /** Commit the offsets of a completed checkpoint to the group (default: true when groupId is set). */
  readonly commitOffsetsOnCheckpoint?: boolean;
  /** Records per partition per fetch at most (default 500). */
  readonly maxRecordsPerFetch?: number;
  /** How long a fetch waits on the broker for records (default 500 ms). */
  readonly fetchMaxWaitMs?: number;
  /** Records fetched and not yet emitted, per reader, before it stops fetching (default 10,000). */
  readonly maxQueuedRecords?: number;
}

export interface KafkaSourceConfig<T> {
  readonly client: KafkaClientFactory;
  readonly topics: readonly string[] | undefined;
  readonly topicPattern: RegExp | undefined;
  readonly groupId: string | undefined;
  readonly startingOffsets: KafkaStartingOffsets;
  readonly bounded: boolean;
  /** May return a promise (schema registry serdes): the reader awaits the fetched records in order (kafka-source-reader.ts). */
  readonly deserialize: (record: ConsumerRecord) => T | Promise<T>;
  readonly isolation: Isolation;
  readonly discoveryIntervalMs: number;
  readonly commitOffsets: boolean;
  readonly maxRecordsPerFetch: number;
  readonly fetchMaxWaitMs: number;
  readonly maxQueuedRecords: number;
}

const invalid = (message: string): EddyError => new EddyError("INVALID_KAFKA_OPTIONS", `KafkaSource: ${message}`);
const TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;

function checkStart(s: unknown): KafkaStartingOffsets {
  const edge = (x: unknown): boolean => x === "earliest" || x === "latest";
  if (edge(s)) return s as KafkaStartingOffsets;
  if (s !== null && typeof s === "object") {
    const o = s as Record<string, unknown>;
    if ("committed" in o && edge(o.committed)) return s as KafkaStartingOffsets;
    if ("timestamp" in o && Number.isSafeInteger(o.timestamp)) return s as KafkaStartingOffsets;
    if ("offsets" in o && Array.isArray(o.offsets) && edge(o.otherwise)) {
      for (const e of o.offsets as unknown[]) {
        const x = e as Record<string, unknown>;
        if (x === null || typeof x !== "object" || typeof x.topic !== "string" || !Number.isSafeInteger(x.partition) || (x.partition as number) < 0 || !Number.isSafeInteger(x.offset) || (x.offset as number) < 0) {
          throw invalid(`an explicit starting offset must be { topic, partition, offset } with non-negative integers, got ${JSON.stringify(e)}`);
        }
      }
      return s as KafkaStartingOffsets;
    }
  }
  throw invalid(`\`startingOffsets\` must be "earliest", "latest", { committed: "earliest" | "latest" }, { timestamp } or { offsets, otherwise }, got ${JSON.stringify(s)}`);
}

export function kafkaSourceConfig<T>(o: KafkaSourceOptions<T>): KafkaSourceConfig<T> {
  if (o === null || typeof o !== "object") throw invalid("options are required");
  const client = clientFactoryOf(o, "KafkaSource");
  if ((o.topics === undefined) === (o.topicPattern === undefined)) throw invalid("give exactly one of `topics` and `topicPattern`");
  if (o.topics !== undefined) {
    if (!Array.isArray(o.topics) || o.topics.length === 0) throw invalid("`topics` must be a non-empty list of topic names");
    for (const t of o.topics) if (typeof t !== "string" || !TOPIC.test(t)) throw invalid(`not a valid topic name: ${JSON.stringify(t)}`);
  }
  if (o.topicPattern !== undefined && !(o.topicPattern instanceof RegExp)) throw invalid("`topicPattern` must be a RegExp");
  if (o.groupId !== undefined && (typeof o.groupId !== "string" || o.groupId === "")) throw invalid("`groupId` must be a non-empty string");
  const startingOffsets = checkStart(o.startingOffsets ?? "earliest");
  if (typeof startingOffsets === "object" && "committed" in startingOffsets && o.groupId === undefined) throw invalid("starting from committed offsets needs a `groupId`");
  if (o.deserializer === undefined) throw invalid("`deserializer` is required (\"string\", \"json\", \"bytes\", a schema registry serde or a function of the record)");
  if (o.isolation !== undefined && o.isolation !== "read_committed" && o.isolation !== "read_uncommitted") throw invalid(`\`isolation\` must be "read_committed" or "read_uncommitted", got ${JSON.stringify(o.isolation)}`);
  const num = (name: keyof KafkaSourceOptions<T>, fallback: number, min: number): number => {
    const v = (o[name] as number | undefined) ?? fallback;
    if (!Number.isSafeInteger(v) || v < min) throw invalid(`\`${String(name)}\` must be an integer of at least ${min}, got ${String(v)}`);
    return v;
  };
  const bounded = o.bounded === true;
  return {
    client,
    topics: o.topics,
    topicPattern: o.topicPattern,
    groupId: o.groupId,
    startingOffsets,
    bounded,
    deserialize: recordDeserializer(o.deserializer),
    isolation: o.isolation ?? "read_committed",
    discoveryIntervalMs: bounded ? 0 : num("partitionDiscoveryIntervalMs", 30_000, 0),
    commitOffsets: o.groupId !== undefined && o.commitOffsetsOnCheckpoint !== false,
    maxRecordsPerFetch: num("maxRecordsPerFetch", 500, 1),
    fetchMaxWaitMs: num("fetchMaxWaitMs", 500, 0),
    maxQueuedRecords: num("maxQueuedRecords", 10_000, 1),
  };
}
