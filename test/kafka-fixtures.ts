/**
 * The fake Kafka broker of a test file (eddy-kafka/testing), served over loopback HTTP so that
 * jobs on worker threads share it: started before the file's tests, stopped after them.
 */
import { after, before } from "node:test";
import { FakeKafkaBroker, serveFakeKafka, type FakeKafkaServer } from "eddy-kafka/testing";
import type { ProducerRecord } from "eddy-kafka";

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

export { readCommitted } from "eddy-kafka/testing";

/** A record whose value is `value` as JSON (and its key, timestamp). */
export const json = (topic: string, partition: number, value: unknown, key: string | null = null, timestamp?: number): ProducerRecord => ({
  topic,
  partition,
  key: key === null ? null : new TextEncoder().encode(key),
  value: new TextEncoder().encode(JSON.stringify(value)),
  ...(timestamp === undefined ? {} : { timestamp }),
});
