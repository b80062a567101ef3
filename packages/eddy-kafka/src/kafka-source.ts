/**
 * KafkaSource (Flink's KafkaSource): `env.fromSource(KafkaSource.create({...}), watermarks, name)`.
 *
 * The enumerator (on the coordinator) discovers partitions of the topics (a list, or a pattern
 * matched against the cluster's topics), resolves where each starts (and, bounded, where it
 * stops), and assigns each partition as a split to one reader (ownerOf, stable for a given
 * parallelism). With `partitionDiscoveryIntervalMs` it looks again periodically and assigns new
 * partitions without a restart; those start at the earliest offset. Its checkpointed state is the
 * set of partitions it has seen and the splits not assigned yet; offsets live in the readers'
 * splits (kafka-source-reader.ts).
 */
import type { Source, SourceReaderContext, SplitEnumerator, SplitEnumeratorContext } from "eddy";
import { EddyError } from "eddy";
import type { KafkaClient, TopicPartition } from "./client.ts";
import { kafkaSourceConfig, type KafkaSourceConfig, type KafkaSourceOptions } from "./kafka-source-options.ts";
import { kafkaSourceReader } from "./kafka-source-reader.ts";
import { ownerOf, readKafkaSplit, splitIdOf, type KafkaSplit } from "./kafka-split.ts";

export const KafkaSource = {
  create<T>(options: KafkaSourceOptions<T>): Source<T, KafkaSplit> {
    const config = kafkaSourceConfig(options);
    return {
      boundedness: config.bounded ? "bounded" : "continuous",
      createEnumerator: (context) => new KafkaSplitEnumerator(config, context, undefined),
      restoreEnumerator: (context, state) => new KafkaSplitEnumerator(config, context, readEnumeratorState(state)),
      createReader: (context: SourceReaderContext) => kafkaSourceReader(config, context),
    };
  },
};

/** The enumerator's state in a checkpoint. Version 1. */
interface EnumeratorState {
  readonly v: 1;
  /** Split ids of every partition seen (assigned or pending). */
  readonly seen: readonly string[];
  /** Splits discovered and not assigned yet. */
  readonly pending: readonly KafkaSplit[];
}

function readEnumeratorState(x: unknown): EnumeratorState {
  const s = x as Partial<EnumeratorState> | null;
  if (s === null || typeof s !== "object" || s.v !== 1 || !Array.isArray(s.seen) || !Array.isArray(s.pending)) {
    throw new EddyError("KAFKA_SOURCE_FAILED", `KafkaSource: the enumerator state in the restored checkpoint is not valid (${JSON.stringify(x)?.slice(0, 200)})`);
  }
  return { v: 1, seen: s.seen.map(String), pending: s.pending.map(readKafkaSplit) };
}

class KafkaSplitEnumerator<T> implements SplitEnumerator<KafkaSplit> {
  readonly #config: KafkaSourceConfig<T>;
  readonly #context: SplitEnumeratorContext<KafkaSplit>;
  readonly #seen: Set<string>;
  /** Splits waiting for their reader to register, by reader. */
  readonly #pending = new Map<number, KafkaSplit[]>();
  readonly #readers = new Set<number>();
  /** Bounded: readers told that no more splits come. */
  readonly #finishedReaders = new Set<number>();
  /** Whether this enumerator discovered once already (partitions found later are new: they start at the earliest offset). */
  readonly #restored: boolean;
  #discoveredOnce = false;
  #client: KafkaClient | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(config: KafkaSourceConfig<T>, context: SplitEnumeratorContext<KafkaSplit>, restored: EnumeratorState | undefined) {
    this.#config = config;
    this.#context = context;
    this.#seen = new Set(restored?.seen ?? []);
    this.#restored = restored !== undefined;
    for (const split of restored?.pending ?? []) this.#queue(split);
  }

  start(): void {
    this.#client = this.#config.client();
    void this.#discover();
  }

  addReader(subtaskIndex: number): void {
    this.#readers.add(subtaskIndex);
    this.#assignPending();
  }

  addSplitsBack(splits: readonly KafkaSplit[]): void {
    for (const split of splits) this.#queue(split);
    this.#assignPending();
  }

  snapshotState(): EnumeratorState {
    return { v: 1, seen: [...this.#seen], pending: [...this.#pending.values()].flat() };
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    void this.#client?.close();
  }

  #queue(split: KafkaSplit): void {
    const owner = ownerOf(split.topic, split.partition, this.#context.parallelism);
    const list = this.#pending.get(owner) ?? [];
    list.push(split);
    this.#pending.set(owner, list);
  }

  #assignPending(): void {
    for (const [reader, splits] of this.#pending) {
      if (!this.#readers.has(reader) || splits.length === 0) continue;
      this.#pending.delete(reader);
      this.#context.assignSplits(reader, splits);
    }
    // Bounded: every partition is known after the first discovery; readers end once theirs are read.
    if (this.#config.bounded && this.#discoveredOnce) {
      for (const reader of this.#readers) {
        if (this.#pending.has(reader) || this.#finishedReaders.has(reader)) continue;
        this.#finishedReaders.add(reader);
        this.#context.signalNoMoreSplits(reader);
      }
    }
  }

  async #topics(client: KafkaClient): Promise<readonly string[]> {
    if (this.#config.topics !== undefined) return this.#config.topics;
    const pattern = this.#config.topicPattern!;
    return (await client.listTopics()).filter((t) => pattern.test(t)).sort();
  }

  /** Looks for partitions not seen yet, resolves their offsets, assigns them; then again after the interval. */
  async #discover(): Promise<void> {
    const client = this.#client!;
    try {
      const found: TopicPartition[] = [];
      for (const topic of await this.#topics(client)) {
        const count = await client.partitionCount(topic);
        for (let partition = 0; partition < count; partition++) if (!this.#seen.has(splitIdOf(topic, partition))) found.push({ topic, partition });
      }
      // Partitions found after the first discovery (or after a restore) are new: from the earliest offset.
      const isNew = this.#discoveredOnce || this.#restored;
      // Both at once: each is a round trip per partition's leader.
      const [starts, stops] = await Promise.all([
        found.length === 0 ? [] : this.#startOffsets(client, found, isNew),
        found.length === 0 || !this.#config.bounded ? [] : client.listOffsets(found, "latest", this.#config.isolation),
      ]);
      if (this.#closed) return;
      found.forEach((tp, i) => {
        this.#seen.add(splitIdOf(tp.topic, tp.partition));
        this.#queue({ v: 1, splitId: splitIdOf(tp.topic, tp.partition), topic: tp.topic, partition: tp.partition, next: starts[i]!, stop: this.#config.bounded ? Math.max(stops[i]!, starts[i]!) : -1 });
      });
      this.#discoveredOnce = true;
      this.#assignPending();
    } catch (e) {
      if (this.#closed) return;
      this.#context.failJob(new EddyError("KAFKA_SOURCE_FAILED", `KafkaSource could not discover the partitions of ${this.#config.topics?.join(", ") ?? String(this.#config.topicPattern)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e }));
      return;
    }
    if (this.#config.discoveryIntervalMs > 0 && !this.#closed) this.#timer = setTimeout(() => void this.#discover(), this.#config.discoveryIntervalMs);
  }

  async #startOffsets(client: KafkaClient, partitions: readonly TopicPartition[], isNew: boolean): Promise<number[]> {
    const { isolation, startingOffsets: s, groupId } = this.#config;
    if (isNew || s === "earliest") return [...(await client.listOffsets(partitions, "earliest", isolation))];
    if (s === "latest") return [...(await client.listOffsets(partitions, "latest", isolation))];
    if ("timestamp" in s) return [...(await client.listOffsets(partitions, { timestamp: s.timestamp }, isolation))];
    const fallback = [...(await client.listOffsets(partitions, "committed" in s ? s.committed : s.otherwise, isolation))];
    if ("committed" in s) {
      const committed = await client.committedOffsets(groupId!, partitions);
      return fallback.map((f, i) => committed[i]?.offset ?? f);
    }
    return partitions.map((tp, i) => s.offsets.find((o) => o.topic === tp.topic && o.partition === tp.partition)?.offset ?? fallback[i]!);
  }
}
