/**
 * Each subtask gets its own instance of a user function object. Flink achieves this by serializing
 * the function; Eddy rebuilds the graph in every worker (docs/design/architecture.md,
 * "A job is a module"), but several subtasks of one operator can share a worker, so the object the
 * user passed is copied per subtask: same prototype (class methods), own copies of its own
 * properties. Fields assigned in `open()` are therefore per subtask, as a Flink user expects. The
 * copy is shallow: an object held in a field is shared, like a closure variable.
 */
export function perSubtaskInstance<T extends object>(fn: T): T {
  const copy = Object.create(Object.getPrototypeOf(fn) as object | null) as T;
  return Object.defineProperties(copy, Object.getOwnPropertyDescriptors(fn));
}
