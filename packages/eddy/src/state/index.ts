/**
 * state/ — keyed state: descriptors, user-facing handles, the keyed state backend contract
 * (keyed-state-backend.ts: what operators depend on), the heap backend that implements it, and
 * the disk backend (disk-keyed-state-backend.ts: the heap backend's tables as a cache in front
 * of an LMDB store; chosen by state-backend-spec.ts).
 *
 * May import: core/ only.
 *
 * Invariants:
 * - Everything keyed is stored per key group of the backend's key-group range, so it can be
 *   snapshotted and rescaled by key-group range.
 * - With `copy: "deep"` (the default) no object held in state is reachable from user code: values
 *   are copied on write and on read, and user functions only see copies.
 * - An expired TTL entry is never returned; cleared or emptied values leave no entry behind.
 * - Handles and the backend run on the task thread only; nothing here is called concurrently.
 * - Code outside state/ uses a backend through KeyedStateBackend only (test/layers.test.ts checks
 *   runtime/); every implementation passes testing/keyed-state-backend-contract.ts.
 */

export { copyValue } from "./copy-value.ts";
export {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "./descriptors.ts";
export type {
  AggregateFunction,
  MapStateUserKey,
  StateDescriptorBase,
  StateDescriptorOptions,
  StateKind,
  StateTtlConfig,
} from "./descriptors.ts";
export type { AggregatingState, ListState, MapState, ReducingState, ValueState } from "./state.ts";
export type { KeyedStateBackend, KeyedStateBackendFactory, KeyedStateBackendOptions, KeyedStateSnapshot, ValueCursor } from "./keyed-state-backend.ts";
export { VOID_NAMESPACE } from "./namespace.ts";
export type { KeyGroupRangeLike, Namespace } from "./namespace.ts";
export type { KeyedStateMeta } from "./keyed-state-meta.ts";
export { HeapKeyedStateBackend, heapStateBackend } from "./heap-keyed-state-backend.ts";
export { DiskKeyedStateBackend, diskStateBackend } from "./disk-keyed-state-backend.ts";
export type { DiskKeyedStateBackendOptions, DiskStateBackendOptions } from "./disk-keyed-state-backend.ts";
export { stateBackendFactory, stateBackendSpec } from "./state-backend-spec.ts";
export type { DiskStateBackendInput, HeapStateBackendInput, StateBackendKind, StateBackendSpec } from "./state-backend-spec.ts";
export type { HeapKeyedStateBackendOptions, KeyedStateEntry } from "./heap-keyed-state-backend.ts";
export type {
  InternalAggregatingState,
  InternalKvState,
  InternalListState,
  InternalMapState,
  InternalReducingState,
  InternalValueState,
} from "./internal-state.ts";
