/**
 * A KafkaClient whose every call is a remote procedure call `rpc(op, ...args)`: the fake broker's
 * HTTP client (fake-remote.ts) and the worker-thread proxy of the Confluent client
 * (confluent-thread-host.ts). A producer's calls go in order, one after the other (beginTransaction
 * is synchronous in the interface: its effect is local until the first send, as in Kafka's
 * clients; the remote side is told in order, before any later call of that producer).
 */
import type { CommittedOffset, KafkaClient, KafkaProducer, OffsetCommit, ProducerOptions, ProducerRecord, TransactionHandle } from "./client.ts";

export type Rpc = (op: string, ...args: unknown[]) => Promise<unknown>;

/** `openProducer` makes the remote producer and resolves with its id (the first argument of its `producer.*` calls). */
export function rpcKafkaClient(rpc: Rpc, openProducer: (options: ProducerOptions) => Promise<unknown>, rest: Pick<KafkaClient, "close" | "transactionsSurviveRestart">): KafkaClient {
  const producer = (options: ProducerOptions): KafkaProducer => {
    const id = openProducer(options);
    let chain: Promise<unknown> = id;
    const call = <R>(method: string, ...args: unknown[]): Promise<R> => {
      const next = chain.then(async () => rpc(`producer.${method}`, await id, ...args));
      chain = next.catch(() => {});
      return next as Promise<R>;
    };
    return {
      initTransactions: () => call<TransactionHandle>("initTransactions"),
      beginTransaction() {
        call("beginTransaction").catch(() => {});
      },
      send: (records: readonly ProducerRecord[]) => call<readonly number[]>("send", records),
      sendOffsetsToTransaction: (offsets: readonly OffsetCommit[], groupId: string) => call<void>("sendOffsetsToTransaction", offsets, groupId),
      commitTransaction: () => call<void>("commitTransaction"),
      abortTransaction: () => call<void>("abortTransaction"),
      close: () => call<void>("close"),
    };
  };
  return {
    ...rest,
    partitionCount: (topic) => rpc("partitionCount", topic) as Promise<number>,
    listTopics: () => rpc("listTopics") as Promise<readonly string[]>,
    listOffsets: (partitions, spec, isolation) => rpc("listOffsets", partitions, spec, isolation) as Promise<readonly number[]>,
    fetch: (requests, options) => rpc("fetch", requests, options) as Promise<never>,
    committedOffsets: async (groupId, partitions) => ((await rpc("committedOffsets", groupId, partitions)) as (CommittedOffset | null)[]).map((o) => o ?? undefined),
    commitOffsets: async (groupId, offsets) => void (await rpc("commitOffsets", groupId, offsets)),
    producer,
    commitTransaction: (handle) => rpc("commitTransaction", handle) as Promise<"committed" | "already-committed">,
  };
}
