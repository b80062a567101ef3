/**
 * Where keyed state lives below its key: the namespace (a window, or none) and the key-group
 * range a backend owns. Shared by every backend and by the operators that scope state.
 */

/** Scope of keyed state below the key: the window for window operators, else VOID_NAMESPACE. */
export type Namespace = string | number;

/** The namespace of state that is not scoped below the key. No window namespace is `""`. */
export const VOID_NAMESPACE: Namespace = "";

/** Inclusive range of key groups; structurally the same as core's `KeyGroupRange`. */
export interface KeyGroupRangeLike {
  readonly start: number;
  readonly end: number;
}
