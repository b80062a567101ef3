/**
 * The queryable states of one executor's subtasks (issue 8): a state server on the same thread
 * reads from here by name and key. Entries are added when an operator first uses a queryable
 * state; reads run between two records (the server shares the tasks' thread), so a value is
 * always one the state held, and it is encoded before anything can change it.
 */
import { EddyError } from "../core/errors.ts";
import type { Key } from "../core/key.ts";
import { assignToKeyGroup, keyGroupRangeContains, type KeyGroupRange } from "../core/key-group.ts";

/** One subtask's part of a queryable state. */
export interface QueryableEntry {
  readonly operatorId: string;
  readonly operatorName: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly keyGroupRange: KeyGroupRange;
  /** The value for `key` (of `keyGroup`), or undefined when there is none. */
  read(key: Key, keyGroup: number): unknown;
}

export class QueryableRegistry {
  readonly #byName = new Map<string, QueryableEntry[]>();
  readonly #listeners: ((name: string, entry: QueryableEntry) => void)[] = [];
  /** Why reads are refused from now on (the executor failed or ended), if they are. */
  #closed: string | undefined;

  /**
   * Refuses every later read: after a failure, state may be half-updated by the function that
   * threw (and is about to be replaced by a restore); after the end, it is gone.
   */
  close(reason: string): void {
    this.#closed ??= reason;
  }

  /** Called for every entry added from now on (and at once for those added before). */
  onRegister(listener: (name: string, entry: QueryableEntry) => void): void {
    this.#listeners.push(listener);
    for (const [name, entries] of this.#byName) for (const e of entries) listener(name, e);
  }

  register(name: string, entry: QueryableEntry): void {
    let entries = this.#byName.get(name);
    if (entries === undefined) this.#byName.set(name, (entries = []));
    const other = entries.find((e) => e.operatorId !== entry.operatorId);
    if (other !== undefined) {
      throw new EddyError(
        "DUPLICATE_QUERYABLE_STATE",
        `queryable state '${name}' is declared by operator '${other.operatorName}' and by '${entry.operatorName}': names are unique per job`,
        { operator: entry.operatorName },
      );
    }
    if (entries.some((e) => e.subtask === entry.subtask)) return;
    entries.push(entry);
    for (const l of this.#listeners) l(name, entry);
  }

  /** Reads `key` of state `name` from the subtask here that holds its key group. */
  read(name: string, key: Key): { readonly found: false } | { readonly found: true; readonly value: unknown } {
    if (this.#closed !== undefined) throw new EddyError("NOT_SERVING", `queryable state is not served: ${this.#closed}`);
    const entries = this.#byName.get(name);
    if (entries === undefined || entries.length === 0) {
      throw new EddyError("UNKNOWN_STATE", `no queryable state '${name}' here (known: ${[...this.#byName.keys()].join(", ") || "none"})`);
    }
    const keyGroup = assignToKeyGroup(key, entries[0]!.maxParallelism);
    const entry = entries.find((e) => keyGroupRangeContains(e.keyGroupRange, keyGroup));
    if (entry === undefined) {
      throw new EddyError("NOT_OWNER", `key group ${keyGroup} of queryable state '${name}' is not held here`);
    }
    const value = entry.read(key, keyGroup);
    return value === undefined ? { found: false } : { found: true, value };
  }
}
