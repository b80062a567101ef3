/**
 * connector/postgres: the PostgreSQL sink (issue 27; docs/connectors/postgres.md), published as
 * the subpath `eddy/postgres` so that only its users need the `pg` client (an optional peer
 * dependency, loaded when a sink is built).
 *
 * May import core/ and connector/ (the sink contract, the async sink base), node: and `pg`
 * (through pg-client.ts only).
 *
 * Invariants:
 * - values reach the server only as statement parameters; identifiers are always quoted;
 * - upsert mode: statements of one sink subtask apply in record order per key;
 * - append mode: a row becomes visible only by `COMMIT PREPARED` of a transaction named in a
 *   completed checkpoint; a prepared transaction is rolled back only when no completed
 *   checkpoint of this run can hold it (prepared-transactions.ts).
 */
export { PostgresSink } from "./postgres-sink.ts";
export type { PostgresRowKind, PostgresSinkOptions, PostgresUpsertSinkOptions } from "./postgres-sink-options.ts";
export type { PostgresClientConfig, PostgresConnection } from "./pg-client.ts";
export { PostgresCdcSource } from "./cdc-source.ts";
export type { ChangeKind, ChangeOp, ChangeRecord, PostgresCdcSourceOptions } from "./cdc-options.ts";
export { isAccumulate } from "./cdc-options.ts";
