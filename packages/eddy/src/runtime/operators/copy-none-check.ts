/**
 * `state.verify-copy-none`: checks that user functions keep the promise a `copy: "none"` state
 * asks of them (keyed-state-backend.ts): a value is not changed in place after the state took it
 * in (`update`, `add`, `put`) or handed it out (`value`, `get`), unless it is written back.
 *
 * Why it matters: the heap backend keeps and hands out the very objects, so a change in place is
 * seen by later reads; the disk backend and the heap backend's incremental checkpoints store what
 * was written, so the same change is lost there (at an eviction, at a restore). A job tested on
 * one backend then computes something else on the other, and a restore may disagree with the
 * failure-free run. Nothing fails; the numbers are just different.
 *
 * How: every object a checked state takes in or hands out is remembered per state, key and slot
 * with its encoding by the general value codec (the checkpoint format's encoding of values, so
 * "changed" means "would be checkpointed differently"). Before a read that would see a change
 * (the same key's `value`/`get`; `add` to a list or reducing state), at every checkpoint of the
 * operator and at the end of its input, what is remembered is encoded again and compared; a
 * difference fails with STATE_MUTATED_IN_PLACE, naming the state and the key. A write replaces
 * what its slot remembers (a value read, changed and written back is fine; one replaced by
 * another object is too, since no backend keeps the change).
 *
 * Covered: value, list, map and reducing states of the keyed process functions (one- and
 * two-input, keyed broadcast). Not covered: aggregating state (its `get` hands out `getResult`'s
 * value, which may or may not be the accumulator), per-window state of process window functions,
 * broadcast state, values the general value codec cannot encode (class instances: the state's own
 * codec stores those). Each check costs an encoding of the value: for tests, not production.
 */
import { ByteWriter } from "../../core/codec/bytes.ts";
import { encodeValue } from "../../core/codec/value-codec.ts";
import { EddyError } from "../../core/errors.ts";
import { describeKey, mapKeyOf, type Key, type MapKey } from "../../core/key.ts";
import type { KeyedStateStore } from "../functions.ts";
import type { ListState, MapState, ReducingState, ValueState } from "../../state/state.ts";

/** When a change was found, for the message. */
type Found = "read" | "checkpoint" | "end of input";

interface Lent {
  readonly value: object;
  readonly bytes: Uint8Array;
}

/** What one key of one state has lent out or taken in: by slot (VALUE, LIST, an element, a map key). */
interface KeyLent {
  readonly key: Key;
  readonly slots: Map<unknown, Lent>;
}

const VALUE = Symbol("value");
const LIST = Symbol("list");

export class CopyNoneCheck {
  readonly #operator: string;
  readonly #subtask: number;
  readonly #currentKey: () => Key;
  /** Per state name, per key. */
  readonly #lent = new Map<string, Map<MapKey, KeyLent>>();
  readonly #wrapped = new Map<string, unknown>();
  readonly #writer = new ByteWriter(1024);
  /** Slots of list elements taken in, unique per check. */
  #nextElement = 0;

  constructor(operator: string, subtask: number, currentKey: () => Key) {
    this.#operator = operator;
    this.#subtask = subtask;
    this.#currentKey = currentKey;
  }

  /** `store` with its `copy: "none"` value, list, map and reducing states checked. */
  wrap(store: KeyedStateStore): KeyedStateStore {
    return {
      getState: (d) => (d.copy === "none" ? this.#once(`value:${d.name}`, () => this.#value(d.name, store.getState(d))) : store.getState(d)),
      getListState: (d) => (d.copy === "none" ? this.#once(`list:${d.name}`, () => this.#list(d.name, store.getListState(d))) : store.getListState(d)),
      getMapState: (d) => (d.copy === "none" ? this.#once(`map:${d.name}`, () => this.#map(d.name, store.getMapState(d))) : store.getMapState(d)),
      getReducingState: (d) =>
        d.copy === "none" ? this.#once(`reducing:${d.name}`, () => this.#reducing(d.name, store.getReducingState(d))) : store.getReducingState(d),
      getAggregatingState: (d) => store.getAggregatingState(d),
    };
  }

  /** Checks everything lent out or taken in, of every key (a checkpoint, the end of input). */
  verifyAll(found: Found): void {
    for (const [state, byKey] of this.#lent) {
      for (const lent of byKey.values()) for (const slot of lent.slots.values()) this.#verify(state, lent.key, slot, found);
    }
  }

  // One wrapper per state: handles follow the current key, so one serves every key.
  #once<S>(id: string, make: () => S): S {
    let wrapped = this.#wrapped.get(id) as S | undefined;
    if (wrapped === undefined) this.#wrapped.set(id, (wrapped = make()));
    return wrapped;
  }

  #value<T>(state: string, inner: ValueState<T>): ValueState<T> {
    return {
      value: () => {
        this.#check(state, VALUE);
        const value = inner.value();
        this.#remember(state, VALUE, value);
        return value;
      },
      update: (value) => {
        inner.update(value);
        this.#remember(state, VALUE, value);
      },
      clear: () => {
        inner.clear();
        this.#forget(state);
      },
    };
  }

  #reducing<T>(state: string, inner: ReducingState<T>): ReducingState<T> {
    return {
      get: () => {
        this.#check(state, VALUE);
        const value = inner.get();
        this.#remember(state, VALUE, value);
        return value;
      },
      add: (value) => {
        // The reduce function may change the stored value in place, which is allowed, so what was
        // handed out is checked before and forgotten after.
        this.#check(state, VALUE);
        inner.add(value);
        this.#forget(state);
      },
      clear: () => {
        inner.clear();
        this.#forget(state);
      },
    };
  }

  #list<T>(state: string, inner: ListState<T>): ListState<T> {
    const taken = (values: readonly T[]): void => {
      // The list handed out may be the stored one, which `add` extends: remember it as it is now.
      const list = this.#slots(state)?.get(LIST);
      if (list !== undefined) this.#remember(state, LIST, list.value);
      for (const value of values) this.#remember(state, this.#nextElement++, value);
    };
    return {
      get: () => {
        this.#check(state);
        const values = inner.get();
        this.#forget(state);
        this.#remember(state, LIST, values);
        return values;
      },
      add: (value) => {
        this.#check(state);
        inner.add(value);
        taken([value]);
      },
      addAll: (values) => {
        this.#check(state);
        const all = [...values];
        inner.addAll(all);
        taken(all);
      },
      update: (values) => {
        const all = [...values];
        inner.update(all);
        this.#forget(state);
        taken(all);
      },
      clear: () => {
        inner.clear();
        this.#forget(state);
      },
    };
  }

  #map<UK, UV>(state: string, inner: MapState<UK, UV>): MapState<UK, UV> {
    const check = this;
    // The values an iteration hands out, remembered as they go by.
    function* handedOut<R>(project: (key: UK, value: UV) => R): IterableIterator<R> {
      for (const [key, value] of inner.entries()) {
        check.#remember(state, key, value);
        yield project(key, value);
      }
    }
    return {
      get: (key) => {
        this.#check(state, key);
        const value = inner.get(key);
        this.#remember(state, key, value);
        return value;
      },
      put: (key, value) => {
        inner.put(key, value);
        this.#remember(state, key, value);
      },
      putAll: (entries) => {
        const all = [...entries];
        inner.putAll(all);
        for (const [key, value] of all) this.#remember(state, key, value);
      },
      remove: (key) => {
        inner.remove(key);
        this.#forget(state, key);
      },
      contains: (key) => inner.contains(key),
      entries: () => {
        this.#check(state);
        return handedOut((key, value): [UK, UV] => [key, value]);
      },
      keys: () => inner.keys(),
      values: () => {
        this.#check(state);
        return handedOut((_key, value) => value);
      },
      isEmpty: () => inner.isEmpty(),
      clear: () => {
        inner.clear();
        this.#forget(state);
      },
    };
  }

  /** The current key's slots of `state`, if it has any. */
  #slots(state: string): Map<unknown, Lent> | undefined {
    return this.#lent.get(state)?.get(mapKeyOf(this.#currentKey()))?.slots;
  }

  /** Remembers `value` in the current key's `slot` (a primitive, which cannot change, clears it). */
  #remember(state: string, slot: unknown, value: unknown): void {
    const bytes = typeof value === "object" && value !== null ? this.#encode(value) : undefined;
    if (bytes === undefined) {
      this.#forget(state, slot);
      return;
    }
    let byKey = this.#lent.get(state);
    if (byKey === undefined) this.#lent.set(state, (byKey = new Map()));
    const key = this.#currentKey();
    const id = mapKeyOf(key);
    let lent = byKey.get(id);
    if (lent === undefined) byKey.set(id, (lent = { key, slots: new Map() }));
    lent.slots.set(slot, { value: value as object, bytes: bytes.slice() });
  }

  /** Forgets the current key's `slot` of `state`, or all of its slots. */
  #forget(state: string, slot?: unknown): void {
    const byKey = this.#lent.get(state);
    if (byKey === undefined) return;
    const id = mapKeyOf(this.#currentKey());
    const lent = byKey.get(id);
    if (lent === undefined) return;
    if (slot === undefined) lent.slots.clear();
    else lent.slots.delete(slot);
    if (lent.slots.size === 0) byKey.delete(id);
  }

  /** Checks the current key's `slot` of `state`, or all of its slots. */
  #check(state: string, slot?: unknown): void {
    const slots = this.#slots(state);
    if (slots === undefined) return;
    const key = this.#currentKey();
    if (slot !== undefined) {
      const lent = slots.get(slot);
      if (lent !== undefined) this.#verify(state, key, lent, "read");
      return;
    }
    for (const lent of slots.values()) this.#verify(state, key, lent, "read");
  }

  #verify(state: string, key: Key, lent: Lent, found: Found): void {
    const now = this.#encode(lent.value);
    if (now !== undefined && sameBytes(now, lent.bytes)) return;
    const when = found === "read" ? "at the next access of that key" : found === "checkpoint" ? "at a checkpoint" : "at the end of the input";
    throw new EddyError(
      "STATE_MUTATED_IN_PLACE",
      `operator '${this.#operator}' (subtask ${this.#subtask}), state '${state}' (copy: "none"), key ${describeKey(key)}: a value the state took in or handed out was changed in place and not written back (found ${when}; state.verify-copy-none). ` +
        `The heap backend would keep such a change, the disk backend and incremental checkpoints would lose it. Write the changed value back (update, put, add), build a new value instead, or drop copy: "none".`,
      { operator: this.#operator, subtask: this.#subtask },
    );
  }

  /** The value's encoding, in the writer's buffer (valid until the next encoding); undefined when the value codec cannot encode it. */
  #encode(value: object): Uint8Array | undefined {
    const writer = this.#writer;
    writer.reset();
    try {
      encodeValue(value, writer);
    } catch {
      return undefined;
    }
    return writer.written();
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
