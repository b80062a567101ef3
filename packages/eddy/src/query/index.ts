/**
 * `eddy/query`: reading queryable state of a running job from TypeScript, by key, while it runs
 * (docs/design/queryable-state.md, issue 8). `createQueryClient()` finds jobs in this machine's
 * registry and reads from their state servers directly; see client.ts for routing and retries,
 * queryable/queryable.ts for the protocol and the encodings of keys and values.
 *
 * The top layer with savepoint/: it may import from every layer below (executor, coordinator and control included), and
 * nothing in the engine imports it. Invariant: a client never writes to a job; it only reads,
 * with the job's token from the registry.
 */
export { createQueryClient, MAX_CONCURRENT_READS, type QueryClient, type QueryClientOptions } from "./client.ts";
export { decodeQueryValue, encodeQueryKey, MAX_QUERY_KEY_BYTES, MAX_QUERY_VALUE_BYTES, type QueryLocation } from "../queryable/queryable.ts";
export type { Key } from "../core/key.ts";
