/**
 * eddy-kafka: Kafka source and sink for Eddy (issue 26; docs/connectors/kafka.md).
 */
export { KafkaClientError, kafkaErrorCode } from "./client.ts";
export type { ConsumerRecord, FetchOptions, FetchRequest, FetchResult, Isolation, KafkaClient, KafkaClientFactory, KafkaErrorCode, KafkaHeader, KafkaProducer, OffsetSpec, ProducerOptions, ProducerRecord, TopicPartition, TransactionHandle } from "./client.ts";
