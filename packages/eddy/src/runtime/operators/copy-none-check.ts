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
 * two-input, keyed broadcast) and of process window functions (`windowState()` per window,
 * `globalState()`). Not covered: aggregating state (its `get` hands out `getResult`'s value,
 * which may or may not be the accumulator), broadcast state, values the general value codec
 * cannot encode (class instances: the state's own codec stores those). Each check costs an
 * encoding of the value: for tests, not production.
 */
import { ByteWriter } from "../../core/codec/bytes.ts";
import { encodeValue } from "../../core/codec/value-codec.ts";
import { EddyError } from "../../core/errors.ts";
import { describeKey, mapKeyOf, type Key, type MapKey } from "../../core/key.ts";
import { VOID_NAMESPACE, type Namespace } from "../../state/namespace.ts";
import type { KeyedStateStore } from "../functions.ts";
import type { ListState, MapState, ReducingState, ValueState } from "../../state/state.ts";

/** When a change was found, for the message. */
type Found = "read" | "checkpoint" | "end of input";

interface Lent {
  readonly value: object;
  readonly bytes: Uint8Array;
}

/** What one key of one state has lent out or taken in, per namespace: by slot (VALUE, LIST, an element, a map key). */
interface KeyLent {
  readonly key: Key;
  readonly namespaces: Map<Namespace, Map<unknown, Lent>>;
}

/** A state of a wrapped store, and the namespace its handles are in at each call. */
interface At {
  readonly state: string;
  readonly namespace: () => Namespace;
}

const VALUE = Symbol("value");
const LIST = Symbol("list");

export class CopyNoneCheck {
  readonly #operator: string;
  readonly #subtask: number;
  readonly #currentKey: () => Key;
  /** Per state name, per key. */
  readonly #lent = new Map<string, Map<MapKey, KeyLent>>();
  readonly #writer = new ByteWriter(1024);
  /** Slots of list elements taken in, unique per check. */
  #nextElement = 0;

  constructor(operator: string, subtask: number, currentKey: () => Key) {
    this.#operator = operator;
    this.#subtask = subtask;
    this.#currentKey = currentKey;
  }

  /**
   * `store` with its `copy: "none"` value, list, map and reducing states checked, in the namespace
   * `namespace()` says at each call (a window's, for a process window function's `windowState()`).
   * The store's handle is asked for at every call, so a scoped store sets its namespace each time.
   */
  wrap(store: KeyedStateStore, namespace: () => Namespace = () => VOID_NAMESPACE): KeyedStateStore {
    // One wrapper per state: handles follow the current key, so one serves every key. The store
    // is asked each time all the same, so a descriptor that does not match the state's is refused
    // as without the check (STATE_DESCRIPTOR_MISMATCH).
    const wrapped = new Map<string, unknown>();
    /** The store's handle of `d` (asked every time), or for `copy: "none"` the one checked wrapper of it. */
    const checked = <S>(kind: string, d: { readonly name: string; readonly copy?: string | undefined }, get: () => S, make: (at: At, handle: () => S) => S): S => {
      const handle = get();
      if (d.copy !== "none") return handle;
      const id = `${kind}:${d.name}`;
      let w = wrapped.get(id) as S | undefined;
      if (w === undefined) wrapped.set(id, (w = make({ state: d.name, namespace }, get)));
      return w;
    };
    return {
      getState: (d) => checked("value", d, () => store.getState(d), (at, h) => this.#value(at, h)),
      getListState: (d) => checked("list", d, () => store.getListState(d), (at, h) => this.#list(at, h)),
      getMapState: (d) => checked("map", d, () => store.getMapState(d), (at, h) => this.#map(at, h)),
      getReducingState: (d) => checked("reducing", d, () => store.getReducingState(d), (at, h) => this.#reducing(at, h)),
      getAggregatingState: (d) => store.getAggregatingState(d),
    };
  }

  /** Checks everything lent out or taken in, of every key and namespace (a checkpoint, the end of input). */
  verifyAll(found: Found): void {
    for (const [state, byKey] of this.#lent) {
      for (const lent of byKey.values()) {
        for (const [namespace, slots] of lent.namespaces) for (const slot of slots.values()) this.#verify(state, lent.key, namespace, slot, found);
      }
    }
  }

  #value<T>(at: At, handle: () => ValueState<T>): ValueState<T> {
    return {
      value: () => {
        this.#check(at, VALUE);
        const value = handle().value();
        this.#remember(at, VALUE, value);
        return value;
      },
      update: (value) => {
        handle().update(value);
        this.#remember(at, VALUE, value);
      },
      clear: () => {
        handle().clear();
        this.#forget(at);
      },
    };
  }

  #reducing<T>(at: At, handle: () => ReducingState<T>): ReducingState<T> {
    return {
      get: () => {
        this.#check(at, VALUE);
        const value = handle().get();
        this.#remember(at, VALUE, value);
        return value;
      },
      add: (value) => {
        // The reduce function may change the stored value in place, which is allowed, so what was
        // handed out is checked before and forgotten after.
        this.#check(at, VALUE);
        handle().add(value);
        this.#forget(at);
      },
      clear: () => {
        handle().clear();
        this.#forget(at);
      },
    };
  }

  #list<T>(at: At, handle: () => ListState<T>): ListState<T> {
    const taken = (values: readonly T[]): void => {
      // The list handed out may be the stored one, which `add` extends: remember it as it is now.
      const list = this.#slots(at)?.get(LIST);
      if (list !== undefined) this.#remember(at, LIST, list.value);
      for (const value of values) this.#remember(at, this.#nextElement++, value);
    };
    return {
      get: () => {
        this.#check(at);
        const values = handle().get();
        this.#forget(at);
        this.#remember(at, LIST, values);
        return values;
      },
      add: (value) => {
        this.#check(at);
        handle().add(value);
        taken([value]);
      },
      addAll: (values) => {
        this.#check(at);
        const all = [...values];
        handle().addAll(all);
        taken(all);
      },
      update: (values) => {
        const all = [...values];
        handle().update(all);
        this.#forget(at);
        taken(all);
      },
      clear: () => {
        handle().clear();
        this.#forget(at);
      },
    };
  }

  #map<UK, UV>(at: At, handle: () => MapState<UK, UV>): MapState<UK, UV> {
    const check = this;
    // The values an iteration hands out, remembered as they go by.
    function* handedOut<R>(project: (key: UK, value: UV) => R): IterableIterator<R> {
      for (const [key, value] of handle().entries()) {
        check.#remember(at, key, value);
        yield project(key, value);
      }
    }
    return {
      get: (key) => {
        this.#check(at, key);
        const value = handle().get(key);
        this.#remember(at, key, value);
        return value;
      },
      put: (key, value) => {
        handle().put(key, value);
        this.#remember(at, key, value);
      },
      putAll: (entries) => {
        const all = [...entries];
        handle().putAll(all);
        for (const [key, value] of all) this.#remember(at, key, value);
      },
      remove: (key) => {
        handle().remove(key);
        this.#forget(at, key);
      },
      contains: (key) => handle().contains(key),
      entries: () => {
        this.#check(at);
        return handedOut((key, value): [UK, UV] => [key, value]);
      },
      keys: () => handle().keys(),
      values: () => {
        this.#check(at);
        return handedOut((_key, value) => value);
      },
      isEmpty: () => handle().isEmpty(),
      clear: () => {
        handle().clear();
        this.#forget(at);
      },
    };
  }

  /** The current key's slots of `at`'s state in its current namespace, if it has any. */
  #slots(at: At): Map<unknown, Lent> | undefined {
    return this.#lent.get(at.state)?.get(mapKeyOf(this.#currentKey()))?.namespaces.get(at.namespace());
  }

  /** Remembers `value` in the current key's `slot` (a primitive, which cannot change, clears it). */
  #remember(at: At, slot: unknown, value: unknown): void {
    const bytes = typeof value === "object" && value !== null ? this.#encode(value) : undefined;
    if (bytes === undefined) {
      this.#forget(at, slot);
      return;
    }
    let byKey = this.#lent.get(at.state);
    if (byKey === undefined) this.#lent.set(at.state, (byKey = new Map()));
    const key = this.#currentKey();
    const id = mapKeyOf(key);
    let lent = byKey.get(id);
    if (lent === undefined) byKey.set(id, (lent = { key, namespaces: new Map() }));
    const namespace = at.namespace();
    let slots = lent.namespaces.get(namespace);
    if (slots === undefined) lent.namespaces.set(namespace, (slots = new Map()));
    slots.set(slot, { value: value as object, bytes: bytes.slice() });
  }

  /** Forgets the current key's `slot` of `at`'s state, or all of its slots, in the current namespace. */
  #forget(at: At, slot?: unknown): void {
    const byKey = this.#lent.get(at.state);
    if (byKey === undefined) return;
    const id = mapKeyOf(this.#currentKey());
    const lent = byKey.get(id);
    if (lent === undefined) return;
    const namespace = at.namespace();
    const slots = lent.namespaces.get(namespace);
    if (slots === undefined) return;
    if (slot === undefined) slots.clear();
    else slots.delete(slot);
    if (slots.size > 0) return;
    lent.namespaces.delete(namespace);
    if (lent.namespaces.size === 0) byKey.delete(id);
  }

  /** Checks the current key's `slot` of `at`'s state, or all of its slots, in the current namespace. */
  #check(at: At, slot?: unknown): void {
    const slots = this.#slots(at);
    if (slots === undefined) return;
    const key = this.#currentKey();
    const namespace = at.namespace();
    if (slot !== undefined) {
      const lent = slots.get(slot);
      if (lent !== undefined) this.#verify(at.state, key, namespace, lent, "read");
      return;
    }
    for (const lent of slots.values()) this.#verify(at.state, key, namespace, lent, "read");
  }

  #verify(state: string, key: Key, namespace: Namespace, lent: Lent, found: Found): void {
    const now = this.#encode(lent.value);
    if (now !== undefined && Buffer.from(now.buffer, now.byteOffset, now.length).equals(lent.bytes)) return;
    const when = found === "read" ? "at the next access of that key" : found === "checkpoint" ? "at a checkpoint" : "at the end of the input";
    throw new EddyError(
      "STATE_MUTATED_IN_PLACE",
      `operator '${this.#operator}' (subtask ${this.#subtask}), state '${state}' (copy: "none"), key ${describeKey(key)}${namespace === VOID_NAMESPACE ? "" : ` in window ${JSON.stringify(namespace)}`}: a value the state took in or handed out was changed in place and not written back (found ${when}; state.verify-copy-none). ` +
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
