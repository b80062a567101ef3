/**
 * eddy-kafka: Kafka source and sink for Eddy (issue 26; docs/connectors/kafka.md).
 */
export { KafkaClientError, kafkaErrorCode } from "./client.ts";
export type { ConsumerRecord, FetchOptions, FetchRequest, FetchResult, Isolation, KafkaClient, KafkaClientFactory, KafkaErrorCode, KafkaHeader, KafkaProducer, OffsetSpec, ProducerOptions, ProducerRecord, TopicPartition, TransactionHandle } from "./client.ts";
export { KafkaSink, type DeliveryGuarantee, type KafkaSinkOptions } from "./kafka-sink.ts";
export type { KafkaCommittable, KafkaWriterState } from "./transactional-ids.ts";
export type { SerializedRecord, WriteAheadCommittable } from "./write-ahead.ts";
export { murmur2, partitionForKey } from "./murmur2.ts";
export { utf8, type KafkaDeserializer, type KafkaValueSerializer } from "./serde.ts";
export { schemaRegistry, type SchemaRegistrySerde, type SchemaFormat, type SchemaRegistryOptions, type SubjectNameStrategy } from "./schema-registry.ts";
export { KafkaSource } from "./kafka-source.ts";
export type { KafkaSourceOptions, KafkaStartingOffsets } from "./kafka-source-options.ts";
export type { KafkaSplit } from "./kafka-split.ts";
export { confluentKafkaClient, librdkafkaConfig, type KafkaConnectionOptions, type KafkaSasl, type KafkaTls } from "./confluent-client.ts";
export { closeConfluentHost } from "./confluent-thread-host.ts";
