/**
 * queryable/ — queryable state served from a running job (docs/design/queryable-state.md): the
 * protocol and the encodings of keys and values (queryable.ts), the state server each thread
 * that runs tasks opens (state-server.ts, queryable-serving.ts), and where a key's state lives
 * (state-lookup.ts).
 *
 * May import: the layers below (core … api) and http/.
 *
 * Invariants: reads never tear (a value is read whole on the task thread) and never write; every
 * read is authenticated and bounded in size and rate.
 */
export { QueryableLocations, serveQueryableStates } from "./queryable-serving.ts";
