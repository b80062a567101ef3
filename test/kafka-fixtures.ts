/**
 * The fake Kafka broker of a test file (eddy-kafka/testing), served over loopback HTTP so that
 * jobs on worker threads share it: started before the file's tests, stopped after them.
 */
import { after, before } from "node:test";
import { FakeKafkaBroker, serveFakeKafka, type FakeKafkaServer } from "eddy-kafka/testing";
import type { ConsumerRecord, ProducerRecord } from "eddy-kafka";

export interface FakeKafka {
  readonly broker: FakeKafkaBroker;
  /** What jobs pass to remoteFakeKafkaClient. */
  readonly url: string;
}

/** Registers the file's broker; the fields are readable once `before` ran. */
export function fakeKafkaForThisFile(): FakeKafka {
  let broker: FakeKafkaBroker | undefined;
  let server: FakeKafkaServer | undefined;
  before(async () => {
    broker = new FakeKafkaBroker();
    server = await serveFakeKafka(broker);
  });
  after(async () => {
    await server?.close();
  });
  return {
    get broker() {
      return broker!;
    },
    get url() {
      return server!.url;
    },
  };
}

/** What a read_committed reader sees of `topic`, per partition, each record as `show` makes it. */
export async function readCommitted<R>(broker: FakeKafkaBroker, topic: string, show: (r: ConsumerRecord) => R): Promise<R[][]> {
  const client = broker.client();
  const out: R[][] = [];
  for (let p = 0; p < (await client.partitionCount(topic)); p++) {
    const [r] = await client.fetch([{ topic, partition: p, offset: 0 }], { isolation: "read_committed", maxRecords: 1e9, maxWaitMs: 0 });
    out.push(r!.records.map(show));
  }
  return out;
}

/** A record whose value is `value` as JSON (and its key, timestamp). */
export const json = (topic: string, partition: number, value: unknown, key: string | null = null, timestamp?: number): ProducerRecord => ({
  topic,
  partition,
  key: key === null ? null : new TextEncoder().encode(key),
  value: new TextEncoder().encode(JSON.stringify(value)),
  ...(timestamp === undefined ? {} : { timestamp }),
});
