/**
 * A worker thread (test/kafka-wire.test.ts) that opens a Confluent client through the main
 * thread's host, opens a transaction with a transactional producer, writes a record in it, tells
 * the parent, and exits with status 3 without closing anything (a worker killed mid-transaction).
 */
import { parentPort, workerData } from "node:worker_threads";
import { confluentKafkaClient } from "eddy-kafka";

const { bootstrap, topic, transactionalId } = workerData as { bootstrap: string; topic: string; transactionalId: string };
const client = confluentKafkaClient({ bootstrapServers: bootstrap });
await client.partitionCount(topic);
const producer = client.producer({ transactionalId });
await producer.initTransactions();
producer.beginTransaction();
await producer.send([{ topic, partition: 0, key: null, value: new TextEncoder().encode("left open") }]);
parentPort!.postMessage("open");
parentPort!.once("message", () => process.exit(3));
