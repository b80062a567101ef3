/**
 * connector/nats: the NATS JetStream source and sink (issue 27; docs/connectors/nats.md),
 * published as the subpath `eddy/nats` so that only its users need the clients
 * `@nats-io/jetstream` and `@nats-io/transport-node` (optional peer dependencies, loaded when a
 * source or sink is built).
 *
 * May import core/ and connector/ (the source and sink contracts), node: and the NATS clients
 * (through nats-client.ts only).
 *
 * Invariants:
 * - source: a split's position in a checkpoint is the stream sequence of its next unemitted
 *   message; a restored split resumes there, so nothing is read twice or skipped (within the
 *   stream's retention); by default no state is kept on the server (ordered consumers, no acks);
 *   with `acknowledge`, durable consumers whose messages are acknowledged when a checkpoint that
 *   covers them completes, never past its position (nats-acks.ts);
 * - sink: a message's id is a function of (job, sink, subtask, epoch, barrier, index) or of the
 *   record (`messageId`), never of time; a checkpoint completes only after every message written
 *   before its barrier is acknowledged.
 */
export { NatsSource } from "./nats-source.ts";
export { NatsSink } from "./nats-sink.ts";
export type { NatsSinkOptions } from "./nats-sink-options.ts";
export type { NatsAcknowledgeOptions, NatsSourceOptions, NatsStartPosition } from "./nats-source-options.ts";
export type { NatsMessage } from "./nats-message.ts";
export type { NatsSplit } from "./nats-split.ts";
export type { NatsConnectionOptions } from "./nats-client.ts";
