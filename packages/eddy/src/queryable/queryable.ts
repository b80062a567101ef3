/**
 * Queryable state (docs/design/queryable-state.md, issue 8): the contract between a running job,
 * its state servers and clients. A client asks the job's control API where a queryable state lives
 * (the location: which state server holds which key groups), computes the key group of its key as
 * the job does, and reads from that server. Locations change when the job restarts (new
 * generation); a client caches them and asks again when a server answers NOT_OWNER, UNKNOWN_STATE,
 * or is gone.
 *
 * State server protocol (HTTP/1.1 on loopback, `Authorization: Bearer <job token>` on every
 * request, JSON responses):
 *
 *   GET /v1/state/<name>?key=<key>[&keyGroup=<kg>]
 *     key: the key, encoded by `encodeQueryKey` (URI-encoded in the query string)
 *     200 { "found": true, "value": <encodeQueryValue(value)> }   the value at some point between two records
 *     200 { "found": false }                                      no value for the key (absent is not an error)
 *     400 BAD_KEY           the key is not a valid key, or too long (over MAX_QUERY_KEY_BYTES)
 *     401 UNAUTHORIZED      missing or wrong token
 *     404 UNKNOWN_STATE     no queryable state of that name here
 *     409 NOT_OWNER         this server does not hold the key's key group (the location is stale)
 *     413 VALUE_TOO_LARGE   the value's JSON exceeds MAX_QUERY_VALUE_BYTES
 *     503 BUSY              too many requests in flight
 *     503 NOT_SERVING       the tasks here failed or ended (a restarted job serves again elsewhere)
 *   Errors are { "error": { "code", "message" } }.
 */
import { EddyError } from "../core/errors.ts";
import { invalidKeyReason, type Key } from "../core/key.ts";

/** Longest encoded key accepted. */
export const MAX_QUERY_KEY_BYTES = 1024;
/** Largest JSON value served. */
export const MAX_QUERY_VALUE_BYTES = 1024 * 1024;

/** Where a queryable state lives now. */
export interface QueryLocation {
  readonly name: string;
  /** The operator (uid) holding the state, and its name. */
  readonly operatorId: string;
  readonly operatorName: string;
  readonly maxParallelism: number;
  readonly parallelism: number;
  /** The run attempt; a restart makes every earlier location stale. */
  readonly generation: number;
  /** Per subtask, the URL of the state server holding its key groups (undefined: not registered yet). */
  readonly servers: readonly (string | undefined)[];
}

/** What a running job tells its control API about queryable state. */
export interface QueryableJob {
  /** The bearer token of the job's control API and state servers. */
  readonly token: string;
  /** Every queryable state known so far (a state declared in a function registers on first use). */
  queryableStates(): QueryLocation[];
}

/**
 * Keys travel as JSON text in the value encoding below: a string key as a JSON string, a number
 * as a JSON number, an array (composite key) as a JSON array, a bigint as {"$bigint":"<decimal>"}.
 */
export function encodeQueryKey(key: Key): string {
  return encodeQueryValue(key);
}

/** The key `text` encodes; BAD_KEY for text that is not JSON, not a valid key, or too long. */
export function decodeQueryKey(text: string): Key {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_QUERY_KEY_BYTES) throw badQueryKey(`the key is ${bytes} bytes, more than ${MAX_QUERY_KEY_BYTES}`);
  let parsed: unknown;
  try {
    parsed = decodeQueryValue(text);
  } catch {
    throw badQueryKey(`the key is not JSON: ${text.slice(0, 80)}`);
  }
  return checkQueryKey(parsed);
}

/** `key` if it is a valid key whose encoding fits MAX_QUERY_KEY_BYTES; BAD_KEY otherwise. */
export function checkQueryKey(key: unknown): Key {
  const reason = invalidKeyReason(key);
  if (reason !== undefined) throw badQueryKey(`not a valid key: ${reason}`);
  const bytes = Buffer.byteLength(encodeQueryKey(key as Key));
  if (bytes > MAX_QUERY_KEY_BYTES) throw badQueryKey(`the key is ${bytes} bytes as JSON, more than ${MAX_QUERY_KEY_BYTES}`);
  return key as Key;
}

export function badQueryKey(message: string): EddyError {
  return new EddyError("BAD_KEY", message);
}

/**
 * State values as JSON: bigint → {"$bigint"}, Map → {"$map": [[k, v], …]}, Set → {"$set": […]},
 * Date → {"$date": ms}, Uint8Array → {"$bytes": base64}, undefined in arrays → null. Plain
 * objects, arrays, strings, numbers and booleans are themselves (non-finite numbers → null).
 */
export function encodeQueryValue(value: unknown): string {
  return JSON.stringify(value, function (this: unknown, key: string, v: unknown) {
    // JSON.stringify has already called Date's toJSON: read the original from the holder.
    const original = (this as Record<string, unknown>)[key];
    if (original instanceof Date) return { $date: original.getTime() };
    if (typeof v === "bigint") return { $bigint: v.toString() };
    if (v instanceof Map) return { $map: [...v] };
    if (v instanceof Set) return { $set: [...v] };
    if (v instanceof Uint8Array) return { $bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") };
    return v;
  });
}

export function decodeQueryValue(text: string): unknown {
  return JSON.parse(text, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length !== 1) return v;
    if (typeof o.$bigint === "string" && /^-?[0-9]{1,400}$/.test(o.$bigint)) return BigInt(o.$bigint);
    if (Array.isArray(o.$map)) return new Map(o.$map as [unknown, unknown][]);
    if (Array.isArray(o.$set)) return new Set(o.$set);
    if (typeof o.$date === "number") return new Date(o.$date);
    if (typeof o.$bytes === "string") return new Uint8Array(Buffer.from(o.$bytes, "base64"));
    return v;
  });
}

/** The answer to one read: absent, or the value the state held at some point between two records. */
export type QueryAnswer = { readonly found: false } | { readonly found: true; readonly value: unknown };

/** What a state server reads from: the queryable states of the subtasks of one worker (or inline job). */
export interface StateServerBackend {
  /**
   * Reads `key` of queryable state `name`, synchronously, between two records (the server runs
   * on the thread of the tasks). Throws EddyError UNKNOWN_STATE (no such state here) or NOT_OWNER
   * (the key's key group is not held here).
   */
  read(name: string, key: Key): QueryAnswer;
}
