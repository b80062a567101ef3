/**
 * What a snapshot records about each keyed state, whatever backend wrote it: the canonical
 * description savepoints carry (one backend-independent format; docs/design/savepoints.md), read by every backend's
 * restore and by the offline savepoint reader.
 */
import type { PersistedTtl, StateDescriptorBase, StateKind } from "./descriptors.ts";

/** What a snapshot records about each keyed state (JSON-able). */
export interface KeyedStateMeta {
  readonly name: string;
  readonly kind: StateKind;
  /** Only what describes the stored timestamps; visibility and cleanup are the running job's. */
  readonly ttl: PersistedTtl | undefined;
  readonly copy: "deep" | "none";
  /** The byte format of keys, namespaces and values (CELL_FORMAT). */
  readonly format: string;
  /** The schema the values were written with (StateCodec id and version), if the state declared one. */
  readonly codec?: { readonly id: string; readonly version: number };
  /** The name it is queryable under (setQueryable), so a restore serves it before it is used. */
  readonly queryable?: string;
}

/** The byte format of every keyed state's cells in snapshots (the default codec's id). */
export const CELL_FORMAT = "eddy.default/3";

export function metaOf(descriptor: StateDescriptorBase): KeyedStateMeta {
  const { name, kind, ttl, copy, codec, queryableName } = descriptor;
  return {
    name,
    kind,
    // Exactly these two fields, as before the other TTL options existed: the snapshot format
    // (the metadata's JSON) stays the same.
    ttl: ttl === undefined ? undefined : { ttlMs: ttl.ttlMs, updateType: ttl.updateType },
    copy,
    format: CELL_FORMAT,
    ...(codec === undefined ? {} : { codec: { id: codec.id, version: codec.version } }),
    ...(queryableName === undefined ? {} : { queryable: queryableName }),
  };
}
