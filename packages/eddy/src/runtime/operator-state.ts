/**
 * Operator (non-keyed) list state for user functions, as Flink's `OperatorStateStore`: a list per
 * operator subtask, snapshotted at every barrier. On a restore at another parallelism, `split`
 * state is divided among the new subtasks (each element goes to exactly one) and `union` state is
 * given whole to every subtask (docs/design/savepoints.md, "How a savepoint is restored").
 */
import { EddyError } from "../core/errors.ts";
import { copyValue } from "../state/copy-value.ts";
import type { OperatorStateMode } from "../checkpoint/format/task-snapshot.ts";
import type { OperatorContext } from "./operator.ts";

export interface OperatorListState<T> {
  /** A copy of the elements: mutating it does not change the state. */
  get(): T[];
  add(value: T): void;
  update(values: readonly T[]): void;
  clear(): void;
}

/** Creates (once per name) the list states of one operator subtask. */
export function operatorStateStore(ctx: OperatorContext): (name: string, mode: OperatorStateMode) => OperatorListState<unknown> {
  const states = new Map<string, { mode: OperatorStateMode; handle: OperatorListState<unknown> }>();
  return (name, mode) => {
    if (typeof name !== "string" || name === "") {
      // Asked for by a running function (in open()), not while building: the user's domain.
      throw new EddyError("INVALID_STATE_DESCRIPTOR", `an operator state name must be a non-empty string, got ${String(name)}`, { domain: "user" });
    }
    const existing = states.get(name);
    if (existing !== undefined) {
      if (existing.mode !== mode) {
        throw new EddyError("STATE_KIND_MISMATCH", `operator state '${name}' of '${ctx.operatorName}' is ${existing.mode} list state; it cannot also be ${mode} list state`);
      }
      return existing.handle;
    }
    // Values are copied in and out, so what a snapshot holds is never changed by user code.
    let values: unknown[] = [];
    const restored = ctx.checkpointing?.registerOperatorState(name, mode, () => values.map(copyValue));
    if (restored !== undefined) values = restored.map(copyValue);
    const handle: OperatorListState<unknown> = {
      get: () => values.map(copyValue),
      add: (value) => void values.push(copyValue(value)),
      update: (next) => {
        if (!Array.isArray(next)) throw new EddyError("INVALID_STATE_VALUE", `operator state '${name}': update() needs an array`);
        values = next.map(copyValue);
      },
      clear: () => {
        values = [];
      },
    };
    states.set(name, { mode, handle });
    return handle;
  };
}
