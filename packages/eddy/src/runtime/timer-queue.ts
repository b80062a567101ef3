/**
 * The timers of one domain of a timer service (runtime/timer-service.ts): a min-heap that orders
 * them, and per key group an index that deduplicates them by (key, namespace, timestamp).
 *
 * Costs. Heap: register, delete and fire O(log n), with each timer knowing its heap index, so
 * removal is real (no tombstones; the heap holds exactly the live timers). A 4-ary heap whose
 * order keys also sit in typed arrays, see `#heap`. Index: per key group a
 * Map from the key's map identity to the key's timers, held in the cheapest shape that fits:
 * - one `Timer` (the common case: a keyed process function's one pending timer, a tumbling
 *   window's cleanup timer): a duplicate registration is one Map.get and two comparisons, and
 *   a new key allocates only the timer;
 * - an array of 2..`SMALL_KEY_TIMERS` timers, scanned linearly (a key's open windows, or the
 *   events it buffers until the watermark passes them);
 * - above that, one Map timestamp → timer(s) (a key with many pending timers, e.g. one per
 *   event or window), O(1) per operation; back to an array when it falls to half the threshold.
 * A key without timers has no entry, so a key never holds an empty array or map.
 * Before any of this, a registration equal to the previous one of the queue (same key object,
 * namespace and timestamp, still pending) is answered without a lookup: a window operator and
 * its trigger register the same timer one after the other for every element.
 *
 * Equality of namespaces and timestamps is SameValueZero, as in a Map.
 */

import { mapKeyOf } from "../core/key.ts";
import type { Key, MapKey } from "../core/key.ts";

export type TimerNamespace = string | number;

/**
 * Largest number of timers one key keeps in an array before the index switches to maps. Timestamps
 * in epoch milliseconds are heap numbers as Map keys, so a lookup in the maps costs about what a
 * scan of a few dozen timers does: with 8, a job buffering ~15 events per key until the watermark
 * passes them (the fraud-detection example) took ~15 % longer than with 32.
 */
export const SMALL_KEY_TIMERS = 32;

export class Timer {
  /** Position in the heap array; -1 once removed. */
  heapIndex = -1;
  constructor(
    readonly timestamp: number,
    readonly seq: number,
    readonly key: Key,
    readonly mapKey: MapKey,
    readonly keyGroup: number,
    readonly kgIndex: number,
    readonly namespace: TimerNamespace,
  ) {}
}

/**
 * The timers of a key with many: timestamp → its timer at that time, or its timers there (2 or
 * more, of different namespaces: rare). One Map per key, whose entries come and go with the
 * timers, not a Map per namespace: a key's windows each have their own namespace, so a map per
 * namespace was created and dropped with every window.
 */
class ManyTimers {
  readonly byTs = new Map<number, Timer | Timer[]>();
  /** Number of timers in `byTs`; always > `SMALL_KEY_TIMERS / 2` (below, the key uses an array). */
  size = 0;

  get(ns: TimerNamespace, timestamp: number): Timer | undefined {
    const at = this.byTs.get(timestamp);
    if (at === undefined) return undefined;
    if (at instanceof Timer) return same(at.namespace, ns) ? at : undefined;
    return findIn(at, ns, timestamp);
  }

  add(timer: Timer): void {
    const at = this.byTs.get(timer.timestamp);
    if (at === undefined) this.byTs.set(timer.timestamp, timer);
    else if (at instanceof Timer) this.byTs.set(timer.timestamp, [at, timer]);
    else at.push(timer);
    this.size++;
  }

  delete(timer: Timer): void {
    const at = this.byTs.get(timer.timestamp)!;
    if (at === timer) {
      this.byTs.delete(timer.timestamp);
    } else {
      const list = at as Timer[];
      list.splice(list.indexOf(timer), 1);
      if (list.length === 1) this.byTs.set(timer.timestamp, list[0]!);
    }
    this.size--;
  }

  *values(): Generator<Timer, void, undefined> {
    for (const at of this.byTs.values()) {
      if (at instanceof Timer) yield at;
      else yield* at;
    }
  }
}

/** The pending timers of one key: see the file comment. Never an empty array. */
type KeyTimers = Timer | Timer[] | ManyTimers;

export class TimerQueue {
  /** Per key group index: key → its timers. */
  readonly #groups: (Map<MapKey, KeyTimers> | undefined)[];
  /**
   * 4-ary min-heap by (timestamp, seq); `heap[i].heapIndex === i`. The order keys of slot i are
   * also in `#ts[i]` and `#seqs[i]`, so sifting compares numbers in two typed arrays instead of
   * loading timers scattered over the heap (with tens of thousands of timers, each level of a
   * sift loaded two or three of them from memory). Four children per node halve the levels.
   */
  readonly #heap: Timer[] = [];
  #ts = new Float64Array(64);
  #seqs = new Float64Array(64);
  #seq = 0;
  /** The timer the last `add` returned or found; may have been removed since (heapIndex -1). */
  #last: Timer | undefined = undefined;

  constructor(numGroups: number) {
    this.#groups = new Array<Map<MapKey, KeyTimers> | undefined>(numGroups).fill(undefined);
  }

  get size(): number {
    return this.#heap.length;
  }

  peek(): Timer | undefined {
    return this.#heap[0];
  }

  /** Adds the timer unless it exists; returns the new timer, or undefined for a duplicate. */
  add(key: Key, keyGroup: number, kgIndex: number, ns: TimerNamespace, timestamp: number): Timer | undefined {
    // hot path: the same registration as the last one (key compared by identity: a miss for an
    // equal composite key in another array only costs the lookup below).
    const last = this.#last;
    if (
      last !== undefined &&
      last.key === key &&
      last.heapIndex >= 0 &&
      last.kgIndex === kgIndex &&
      same(last.timestamp, timestamp) &&
      same(last.namespace, ns)
    ) {
      return undefined;
    }
    const mapKey = mapKeyOf(key);
    let byKey = this.#groups[kgIndex];
    if (byKey === undefined) this.#groups[kgIndex] = byKey = new Map();
    const timers = byKey.get(mapKey);
    const found = findTimer(timers, ns, timestamp);
    if (found !== undefined) {
      this.#last = found;
      return undefined;
    }
    const timer = new Timer(timestamp, this.#seq++, key, mapKey, keyGroup, kgIndex, ns);
    if (timers === undefined) byKey.set(mapKey, timer);
    else if (timers instanceof Timer) byKey.set(mapKey, [timers, timer]);
    else if (!Array.isArray(timers)) timers.add(timer);
    else if (timers.length < SMALL_KEY_TIMERS) timers.push(timer);
    else {
      const many = new ManyTimers();
      for (const t of timers) many.add(t);
      many.add(timer);
      byKey.set(mapKey, many);
    }
    const at = this.#heap.length;
    if (at === this.#ts.length) this.#grow();
    this.#heap.push(timer);
    this.#siftUp(at, timer);
    this.#last = timer;
    return timer;
  }

  /** Removes the timer if present; returns whether it was the head of the heap. */
  remove(mapKey: MapKey, kgIndex: number, ns: TimerNamespace, timestamp: number): boolean {
    const timer = findTimer(this.#groups[kgIndex]?.get(mapKey), ns, timestamp);
    if (timer === undefined) return false;
    const wasHead = timer.heapIndex === 0;
    this.#unindex(timer);
    this.#removeAt(timer.heapIndex);
    return wasHead;
  }

  /** Removes and returns the earliest timer. */
  poll(): Timer | undefined {
    const head = this.#heap[0];
    if (head === undefined) return undefined;
    this.#unindex(head);
    this.#removeAt(0);
    return head;
  }

  /** A copy of the live timers, in heap order. */
  timers(): Timer[] {
    return this.#heap.slice();
  }

  *ofGroup(kgIndex: number): Generator<Timer, void, undefined> {
    const byKey = this.#groups[kgIndex];
    if (byKey === undefined) return;
    for (const timers of byKey.values()) {
      if (timers instanceof Timer) yield timers;
      else if (Array.isArray(timers)) yield* timers;
      else yield* timers.values();
    }
  }

  /** Removes a live timer from the index, moving its key to a smaller shape when it fits. */
  #unindex(timer: Timer): void {
    const byKey = this.#groups[timer.kgIndex]!;
    const timers = byKey.get(timer.mapKey)!;
    if (timers instanceof Timer) {
      byKey.delete(timer.mapKey);
    } else if (Array.isArray(timers)) {
      const at = timers.indexOf(timer);
      const lastIndex = timers.length - 1;
      timers[at] = timers[lastIndex]!;
      timers.pop();
      if (lastIndex === 1) byKey.set(timer.mapKey, timers[0]!);
    } else {
      timers.delete(timer);
      // Back to an array at half the threshold, so a key hovering around it does not flip shapes.
      if (timers.size === SMALL_KEY_TIMERS / 2) byKey.set(timer.mapKey, [...timers.values()]);
    }
  }

  #grow(): void {
    const ts = new Float64Array(this.#ts.length * 2);
    ts.set(this.#ts);
    this.#ts = ts;
    const seqs = new Float64Array(this.#seqs.length * 2);
    seqs.set(this.#seqs);
    this.#seqs = seqs;
  }

  #removeAt(i: number): void {
    const heap = this.#heap;
    const removed = heap[i]!;
    removed.heapIndex = -1;
    const last = heap.pop()!;
    if (last === removed) return;
    const parent = (i - 1) >> 2;
    const ts = this.#ts;
    if (i > 0 && (last.timestamp < ts[parent]! || (last.timestamp === ts[parent] && last.seq < this.#seqs[parent]!))) this.#siftUp(i, last);
    else this.#siftDown(i, last);
  }

  /** Moves `timer` from the free slot `i` towards the root to its place. */
  #siftUp(i: number, timer: Timer): void {
    const heap = this.#heap;
    const ts = this.#ts;
    const seqs = this.#seqs;
    const t = timer.timestamp;
    const s = timer.seq;
    while (i > 0) {
      const p = (i - 1) >> 2;
      const pt = ts[p]!;
      if (!(t < pt || (t === pt && s < seqs[p]!))) break;
      const parent = heap[p]!;
      heap[i] = parent;
      ts[i] = pt;
      seqs[i] = seqs[p]!;
      parent.heapIndex = i;
      i = p;
    }
    heap[i] = timer;
    ts[i] = t;
    seqs[i] = s;
    timer.heapIndex = i;
  }

  /** Moves `timer` from the free slot `i` towards the leaves to its place. */
  #siftDown(i: number, timer: Timer): void {
    const heap = this.#heap;
    const ts = this.#ts;
    const seqs = this.#seqs;
    const n = heap.length;
    const t = timer.timestamp;
    const s = timer.seq;
    for (;;) {
      const first = 4 * i + 1;
      if (first >= n) break;
      let best = first;
      let bt = ts[first]!;
      let bs = seqs[first]!;
      const end = first + 4 < n ? first + 4 : n;
      for (let c = first + 1; c < end; c++) {
        const ct = ts[c]!;
        if (ct < bt || (ct === bt && seqs[c]! < bs)) {
          best = c;
          bt = ct;
          bs = seqs[c]!;
        }
      }
      if (!(bt < t || (bt === t && bs < s))) break;
      const child = heap[best]!;
      heap[i] = child;
      ts[i] = bt;
      seqs[i] = bs;
      child.heapIndex = i;
      i = best;
    }
    heap[i] = timer;
    ts[i] = t;
    seqs[i] = s;
    timer.heapIndex = i;
  }
}

/** SameValueZero, the equality of Map keys (NaN equals NaN, 0 equals -0). */
function same<T extends string | number>(a: T, b: T): boolean {
  return a === b || (a !== a && b !== b);
}

function matches(timer: Timer, ns: TimerNamespace, timestamp: number): boolean {
  return same(timer.timestamp, timestamp) && same(timer.namespace, ns);
}

/** A key's timer for (`ns`, `timestamp`), whatever shape its timers are held in. */
function findTimer(timers: KeyTimers | undefined, ns: TimerNamespace, timestamp: number): Timer | undefined {
  if (timers === undefined) return undefined;
  if (timers instanceof Timer) return matches(timers, ns, timestamp) ? timers : undefined;
  if (Array.isArray(timers)) return findIn(timers, ns, timestamp);
  return timers.get(ns, timestamp);
}

function findIn(timers: readonly Timer[], ns: TimerNamespace, timestamp: number): Timer | undefined {
  for (let i = 0; i < timers.length; i++) {
    const t = timers[i]!;
    if (matches(t, ns, timestamp)) return t;
  }
  return undefined;
}
