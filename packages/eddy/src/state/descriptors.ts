/**
 * State descriptors: what user code declares to get a keyed state handle. A descriptor names the
 * state (the name is its identity inside an operator and in savepoints), fixes its kind, and
 * carries options. Descriptors are immutable and validated when constructed.
 */

import { EddyError } from "../core/errors.ts";

export type StateKind = "value" | "list" | "map" | "reducing" | "aggregating";

/**
 * Time-to-live of state entries, in processing time (the job's clock), as Flink's StateTtlConfig.
 * TTL is per stored value: value, reducing and aggregating state expire as a whole; list state per
 * element; map state per map entry. Each value's timestamp is its last access of the kinds
 * `updateType` names.
 *
 * Only `ttlMs` and `updateType` are recorded in snapshots; visibility and cleanup are how this job
 * runs and may change from one run to the next.
 */
export interface StateTtlConfig {
  readonly ttlMs: number;
  /**
   * `"onCreateAndWrite"` (default, Flink's OnCreateAndWrite): the TTL restarts when the value is
   * written; `"onReadAndWrite"`: also when it is read.
   */
  readonly updateType?: "onCreateAndWrite" | "onReadAndWrite";
  /**
   * `"neverReturnExpired"` (default): an expired value is never returned, cleaned up or not.
   * `"returnExpiredIfNotCleanedUp"`: an expired value still stored is returned (once: the read
   * that returns it removes it), and reducing/aggregating state keeps reducing into it.
   */
  readonly visibility?: "neverReturnExpired" | "returnExpiredIfNotCleanedUp";
  /** When expired values are removed besides the access that finds them (see StateTtlCleanup). */
  readonly cleanup?: StateTtlCleanup;
}

/**
 * Cleanup strategies of a state with TTL (Flink: `cleanupFullSnapshot`, `cleanupIncrementally`,
 * `cleanupInBackground`). An access that finds its own value expired always removes it.
 */
export interface StateTtlCleanup {
  /**
   * Leave expired values out of checkpoints and savepoints (default true; Flink's default is off,
   * Eddy has always filtered, and the check is cheap). `false` writes them, so a restored job may
   * still see them under `returnExpiredIfNotCleanedUp`.
   */
  readonly fullSnapshot?: boolean;
  /**
   * Every access of this state also examines `entriesPerAccess` keys of it (all their namespaces)
   * at a cursor that goes round the state, and removes what expired; `everyRecord`: also once per
   * record or timer of the operator, whether the function touches the state or not. Default
   * `{ entriesPerAccess: 2, everyRecord: false }`; `false` turns it off.
   */
  readonly incremental?: false | { readonly entriesPerAccess: number; readonly everyRecord?: boolean };
  /**
   * Default true: the operator's task examines a bounded number of keys of this state every
   * second of processing time (between records), so keys nobody touches again go too.
   */
  readonly background?: boolean;
}

/**
 * The schema of a state's values, for savepoints and upgrades. Values are written in Eddy's
 * default codec whatever the schema; `id` and `version` are recorded beside them, and a restore
 * compares them with the descriptor's: the same id and version restore as they are; an older
 * version is brought up to date by `migrate` (refused when there is none); another id or a newer
 * version is refused, naming the operator and the state.
 *
 * `migrate` gets each value as the old version wrote it: the whole value of value, reducing and
 * aggregating state (the accumulator), each element of list state, each value of map state.
 */
export interface StateCodec<T = unknown> {
  readonly id: string;
  /** A positive integer; raise it when the shape of the values changes. */
  readonly version: number;
  migrate?(value: unknown, fromVersion: number): T;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- options without a value type fit every descriptor
export interface StateDescriptorOptions<T = any> {
  readonly ttl?: StateTtlConfig;
  /** The schema of the values (see StateCodec); without one, none is recorded or checked. */
  readonly codec?: StateCodec<T>;
  /**
   * `"deep"` (default): values are copied when written and when read, so user code can never
   * change what state holds by mutating an object. `"none"`: no copies; only for values the user
   * never mutates after writing or reading them (or primitives, which are never copied anyway);
   * `state.verify-copy-none` checks that in tests (runtime/operators/copy-none-check.ts).
   */
  readonly copy?: "deep" | "none";
}

/**
 * What map-state user keys may be: compared by value, like JS Map keys of these types. Other
 * values (objects, arrays, null, undefined, symbols) are rejected by `put` at run time — a JS Map
 * would compare objects by identity, which cannot survive a snapshot; use a string key instead.
 * (Not a type constraint on `UK`, so that generic code can pass `UK` through unconstrained.)
 */
export type MapStateUserKey = string | number | bigint | boolean;

/** Throws INVALID_MAP_STATE_KEY unless `key` may be a map state key (MapStateUserKey); for keyed and broadcast map state. */
export function checkUserKey(stateName: string, key: unknown): void {
  const t = typeof key;
  if (t === "string" || t === "bigint" || t === "boolean") return;
  if (t === "number") return;
  throw new EddyError(
    "INVALID_MAP_STATE_KEY",
    `map state '${stateName}': a map key must be a string, number, bigint or boolean, got ` +
      `${key === null ? "null" : t}; objects would compare by identity, which a snapshot cannot keep — ` +
      `use a string key instead`,
  );
}

/** Incremental aggregation: `add` may mutate and return the accumulator it is given. */
export interface AggregateFunction<IN, ACC, OUT> {
  createAccumulator(): ACC;
  add(value: IN, accumulator: ACC): ACC;
  getResult(accumulator: ACC): OUT;
  merge?(a: ACC, b: ACC): ACC;
}

/** Normalized, validated TTL: every option set. */
export interface ResolvedTtl {
  readonly ttlMs: number;
  readonly updateType: "onCreateAndWrite" | "onReadAndWrite";
  readonly visibility: "neverReturnExpired" | "returnExpiredIfNotCleanedUp";
  readonly cleanupFullSnapshot: boolean;
  /** Keys examined per access (0: no incremental cleanup). */
  readonly cleanupEntriesPerAccess: number;
  readonly cleanupEveryRecord: boolean;
  readonly cleanupInBackground: boolean;
}

/** What snapshots record of a TTL (KeyedStateMeta.ttl): the options that describe the stored timestamps. */
export interface PersistedTtl {
  readonly ttlMs: number;
  readonly updateType: "onCreateAndWrite" | "onReadAndWrite";
}

/** Incremental cleanup when a TTL names none: keys examined per access (Flink examines 5). */
export const DEFAULT_TTL_CLEANUP_ENTRIES_PER_ACCESS = 2;

/** What every descriptor has; the backend reads only these plus the kind-specific function. */
export interface StateDescriptorBase {
  readonly kind: StateKind;
  readonly name: string;
  readonly ttl: ResolvedTtl | undefined;
  readonly copy: "deep" | "none";
  readonly codec: StateCodec | undefined;
  /** See DescriptorBase.setQueryable. */
  readonly queryableName?: string | undefined;
}

/** Queryable names of descriptors (descriptors are frozen, so the mark lives beside them). */
const queryableNames = new WeakMap<object, string>();

/**
 * What every descriptor class shares: `setQueryable`. A queryable state can be read by key from
 * outside the job while it runs (issue 8: `eddy/query`, `eddy query`, the HTTP endpoint).
 */
abstract class DescriptorBase {
  /**
   * Makes the state readable from outside under `name` (unique per job); returns the descriptor.
   * Only the void namespace (state outside windows) is served.
   */
  setQueryable(name: string): this {
    if (typeof name !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(name)) {
      throw new EddyError("INVALID_STATE_DESCRIPTOR", `a queryable state name must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}, got ${describe(name)}`);
    }
    const existing = queryableNames.get(this);
    if (existing !== undefined && existing !== name) throw invalid((this as unknown as StateDescriptorBase).name, `is already queryable as '${existing}'`);
    queryableNames.set(this, name);
    return this;
  }

  /** The name `setQueryable` gave, if any. */
  get queryableName(): string | undefined {
    return queryableNames.get(this);
  }
}

export class ValueStateDescriptor<T> extends DescriptorBase implements StateDescriptorBase {
  readonly kind = "value" as const;
  readonly name: string;
  readonly ttl: ResolvedTtl | undefined;
  readonly copy: "deep" | "none";
  readonly codec: StateCodec | undefined;
  /** Type-only marker (no runtime field) so a descriptor of strings is not one of numbers. */
  declare readonly __type?: T;

  constructor(name: string, options?: StateDescriptorOptions<T>) {
    super();
    this.name = validName(name);
    this.ttl = resolveTtl(name, options?.ttl);
    this.copy = resolveCopy(name, options?.copy);
    this.codec = resolveCodec(name, options?.codec);
    Object.freeze(this);
  }
}

export class ListStateDescriptor<T> extends DescriptorBase implements StateDescriptorBase {
  readonly kind = "list" as const;
  readonly name: string;
  readonly ttl: ResolvedTtl | undefined;
  readonly copy: "deep" | "none";
  readonly codec: StateCodec | undefined;
  declare readonly __type?: T;

  constructor(name: string, options?: StateDescriptorOptions<T>) {
    super();
    this.name = validName(name);
    this.ttl = resolveTtl(name, options?.ttl);
    this.copy = resolveCopy(name, options?.copy);
    this.codec = resolveCodec(name, options?.codec);
    Object.freeze(this);
  }
}

export class MapStateDescriptor<UK, UV> extends DescriptorBase implements StateDescriptorBase {
  readonly kind = "map" as const;
  readonly name: string;
  readonly ttl: ResolvedTtl | undefined;
  readonly copy: "deep" | "none";
  readonly codec: StateCodec | undefined;
  declare readonly __type?: [UK, UV];

  constructor(name: string, options?: StateDescriptorOptions<UV>) {
    super();
    this.name = validName(name);
    this.ttl = resolveTtl(name, options?.ttl);
    this.copy = resolveCopy(name, options?.copy);
    this.codec = resolveCodec(name, options?.codec);
    Object.freeze(this);
  }
}

export class ReducingStateDescriptor<T> extends DescriptorBase implements StateDescriptorBase {
  readonly kind = "reducing" as const;
  readonly name: string;
  readonly ttl: ResolvedTtl | undefined;
  readonly copy: "deep" | "none";
  readonly codec: StateCodec | undefined;
  readonly reduceFn: (a: T, b: T) => T;

  constructor(name: string, reduceFn: (a: T, b: T) => T, options?: StateDescriptorOptions<T>) {
    super();
    this.name = validName(name);
    if (typeof reduceFn !== "function") throw invalid(name, "needs a reduce function (a, b) => value");
    this.reduceFn = reduceFn;
    this.ttl = resolveTtl(name, options?.ttl);
    this.copy = resolveCopy(name, options?.copy);
    this.codec = resolveCodec(name, options?.codec);
    Object.freeze(this);
  }
}

export class AggregatingStateDescriptor<IN, ACC, OUT> extends DescriptorBase implements StateDescriptorBase {
  readonly kind = "aggregating" as const;
  readonly name: string;
  readonly ttl: ResolvedTtl | undefined;
  readonly copy: "deep" | "none";
  readonly codec: StateCodec | undefined;
  readonly aggregateFunction: AggregateFunction<IN, ACC, OUT>;

  constructor(name: string, aggregateFunction: AggregateFunction<IN, ACC, OUT>, options?: StateDescriptorOptions<ACC>) {
    super();
    this.name = validName(name);
    const f = aggregateFunction as Partial<AggregateFunction<IN, ACC, OUT>> | null | undefined;
    if (
      f === null ||
      typeof f !== "object" ||
      typeof f.createAccumulator !== "function" ||
      typeof f.add !== "function" ||
      typeof f.getResult !== "function"
    ) {
      throw invalid(name, "needs an aggregate function with createAccumulator(), add(value, acc) and getResult(acc)");
    }
    this.aggregateFunction = aggregateFunction;
    this.ttl = resolveTtl(name, options?.ttl);
    this.copy = resolveCopy(name, options?.copy);
    this.codec = resolveCodec(name, options?.codec);
    Object.freeze(this);
  }
}

function validName(name: unknown): string {
  if (typeof name !== "string" || name.trim() === "") {
    throw new EddyError("INVALID_STATE_DESCRIPTOR", `a state name must be a non-empty string, got ${describe(name)}`);
  }
  return name;
}

function resolveTtl(name: string, ttl: StateTtlConfig | undefined): ResolvedTtl | undefined {
  if (ttl === undefined) return undefined;
  if (ttl === null || typeof ttl !== "object") throw invalid(name, `ttl must be an object { ttlMs }, got ${describe(ttl)}`);
  const { ttlMs, updateType = "onCreateAndWrite", visibility = "neverReturnExpired", cleanup = {} } = ttl;
  if (typeof ttlMs !== "number" || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw invalid(name, `ttl.ttlMs must be a positive finite number of milliseconds, got ${describe(ttlMs)}`);
  }
  if (updateType !== "onCreateAndWrite" && updateType !== "onReadAndWrite") {
    throw invalid(name, `ttl.updateType must be "onCreateAndWrite" or "onReadAndWrite", got ${describe(updateType)}`);
  }
  if (visibility !== "neverReturnExpired" && visibility !== "returnExpiredIfNotCleanedUp") {
    throw invalid(name, `ttl.visibility must be "neverReturnExpired" or "returnExpiredIfNotCleanedUp", got ${describe(visibility)}`);
  }
  if (cleanup === null || typeof cleanup !== "object") throw invalid(name, `ttl.cleanup must be an object, got ${describe(cleanup)}`);
  const { fullSnapshot = true, incremental = { entriesPerAccess: DEFAULT_TTL_CLEANUP_ENTRIES_PER_ACCESS }, background = true } = cleanup;
  if (typeof fullSnapshot !== "boolean") throw invalid(name, `ttl.cleanup.fullSnapshot must be a boolean, got ${describe(fullSnapshot)}`);
  if (typeof background !== "boolean") throw invalid(name, `ttl.cleanup.background must be a boolean, got ${describe(background)}`);
  let entriesPerAccess = 0;
  let everyRecord = false;
  if (incremental !== false) {
    if (incremental === null || typeof incremental !== "object") {
      throw invalid(name, `ttl.cleanup.incremental must be false or { entriesPerAccess, everyRecord? }, got ${describe(incremental)}`);
    }
    entriesPerAccess = incremental.entriesPerAccess;
    everyRecord = incremental.everyRecord ?? false;
    if (!Number.isSafeInteger(entriesPerAccess) || entriesPerAccess < 1) {
      throw invalid(name, `ttl.cleanup.incremental.entriesPerAccess must be a positive integer, got ${describe(entriesPerAccess)}`);
    }
    if (typeof everyRecord !== "boolean") throw invalid(name, `ttl.cleanup.incremental.everyRecord must be a boolean, got ${describe(everyRecord)}`);
  }
  return Object.freeze({
    ttlMs,
    updateType,
    visibility,
    cleanupFullSnapshot: fullSnapshot,
    cleanupEntriesPerAccess: entriesPerAccess,
    cleanupEveryRecord: everyRecord,
    cleanupInBackground: background,
  });
}

/**
 * A TTL as a snapshot recorded it (only `ttlMs` and `updateType`), completed with the defaults,
 * so a restored state can stand in for its descriptor until the job asks for it.
 */
export function ttlFromSnapshot(stateName: string, persisted: PersistedTtl | undefined): ResolvedTtl | undefined {
  return persisted === undefined ? undefined : resolveTtl(stateName, { ttlMs: persisted.ttlMs, updateType: persisted.updateType });
}

function resolveCodec(name: string, codec: StateCodec | undefined): StateCodec | undefined {
  if (codec === undefined) return undefined;
  if (codec === null || typeof codec !== "object") throw invalid(name, `codec must be an object { id, version, migrate? }, got ${describe(codec)}`);
  if (typeof codec.id !== "string" || codec.id.trim() === "" || codec.id.length > 200) {
    throw invalid(name, `codec.id must be a non-empty string of at most 200 characters, got ${describe(codec.id)}`);
  }
  if (!Number.isSafeInteger(codec.version) || codec.version < 1) throw invalid(name, `codec.version must be a positive integer, got ${describe(codec.version)}`);
  if (codec.migrate !== undefined && typeof codec.migrate !== "function") throw invalid(name, "codec.migrate must be a function (value, fromVersion) => value");
  return codec;
}

function resolveCopy(name: string, copy: unknown): "deep" | "none" {
  if (copy === undefined || copy === "deep") return "deep";
  if (copy === "none") return "none";
  throw invalid(name, `copy must be "deep" or "none", got ${describe(copy)}`);
}

function invalid(name: string, what: string): EddyError {
  return new EddyError("INVALID_STATE_DESCRIPTOR", `state '${name}': ${what}`);
}

function describe(v: unknown): string {
  return typeof v === "string" ? JSON.stringify(v) : typeof v === "bigint" ? `${v}n` : String(v);
}
