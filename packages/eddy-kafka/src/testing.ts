/**
 * eddy-kafka/testing: the in-memory fake broker behind Eddy's Kafka client interface, for tests of
 * jobs with a KafkaSource or KafkaSink where no broker runs (docs/connectors/kafka.md says what it
 * models and what not). In one thread: `new FakeKafkaBroker()` and `client: () => broker.client()`;
 * across worker threads: `serveFakeKafka(broker)` and `client: () => remoteFakeKafkaClient(url)`.
 */
export { FakeKafkaBroker, readCommitted, type FakeKafkaBrokerOptions } from "./fake-broker.ts";
export { remoteFakeKafkaClient, serveFakeKafka, type FakeKafkaServer } from "./fake-remote.ts";
/** How many clients the Confluent client's main-thread host holds for worker threads (those of a worker that exited are closed). */
export { hostedClientCount } from "./confluent-thread-host.ts";
/** A stand-in for a Confluent Schema Registry over loopback HTTP (the REST subset the serdes use; fake-schema-registry.ts). */
export { serveFakeSchemaRegistry, type FakeSchemaRegistry } from "./fake-schema-registry.ts";
