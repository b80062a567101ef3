/**
 * The timers of one domain of a timer service (runtime/timer-service.ts), grouped by timestamp:
 * a min-heap of *buckets*, one per distinct timestamp, and in each bucket its timers in
 * registration order (a doubly linked list). Timers fire in (timestamp, registration) order.
 *
 * Why buckets. Timers of a stream processor share timestamps far more often than not: every
 * key's window [s, e) has its end timer at e - 1, a pane operator's firings fall on the slide,
 * processing-time timers are usually rounded. A heap of timers paid O(log n) sifts for every
 * register and fire, and a per-key index (a Map keyed by epoch-millisecond doubles once a key had
 * many windows open between two watermarks) for every deduplication. With buckets a registration
 * at an existing timestamp is a Map lookup and a list append, and a firing unlinks the head of
 * the earliest bucket; the heap holds distinct timestamps only and moves when a bucket is created
 * or emptied. A workload whose timers all differ (one bucket per timer) costs about what the heap
 * of timers did: one Map entry per timestamp instead of one per key.
 *
 * Deduplication: (key, key group, namespace, timestamp), keys by their map identity, namespaces
 * and timestamps by SameValueZero (as Map keys: NaN equals NaN, 0 equals -0). A bucket of up to
 * `BUCKET_SCAN` timers is scanned; a larger one keeps an index from the key's map identity to its
 * timer(s) there. Before any of this, a registration equal to the previous one of the queue (same
 * key object, namespace and timestamp, still pending) is answered without a lookup: a window
 * operator and its trigger register the same timer one after the other for every new window.
 *
 * Per key group listing (`ofGroup`) walks every timer: snapshots group the `timers()` copy by key
 * group in one pass instead (TimerSnapshot), so nothing on a hot path lists one group.
 */

import { mapKeyOf } from "../core/key.ts";
import type { Key, MapKey } from "../core/key.ts";

export type TimerNamespace = string | number;

/**
 * Largest bucket scanned linearly; above it the bucket keeps an index by key. A scan compares
 * three fields per timer, so a few timers are cheaper to scan than to hash.
 */
export const BUCKET_SCAN = 8;

export class Timer {
  /** The bucket holding the timer while it is pending; undefined once fired or deleted. */
  bucket: Bucket | undefined = undefined;
  prev: Timer | undefined = undefined;
  next: Timer | undefined = undefined;
  constructor(
    readonly timestamp: number,
    readonly seq: number,
    readonly key: Key,
    readonly mapKey: MapKey,
    readonly keyGroup: number,
    readonly kgIndex: number,
    readonly namespace: TimerNamespace,
  ) {}

  /** Whether the timer is pending (registered, not fired or deleted). */
  get pending(): boolean {
    return this.bucket !== undefined;
  }
}

/** The pending timers of one timestamp, in registration order. Never empty while in the queue. */
class Bucket {
  heapIndex = -1;
  head: Timer | undefined = undefined;
  tail: Timer | undefined = undefined;
  count = 0;
  /** Key's map identity → its timer(s) here; only while the bucket has more than BUCKET_SCAN. */
  index: Map<MapKey, Timer | Timer[]> | undefined = undefined;
  constructor(readonly timestamp: number) {}

  find(mapKey: MapKey, kgIndex: number, ns: TimerNamespace): Timer | undefined {
    const index = this.index;
    if (index === undefined) {
      for (let t = this.head; t !== undefined; t = t.next) {
        if (t.kgIndex === kgIndex && same(t.mapKey, mapKey) && same(t.namespace, ns)) return t;
      }
      return undefined;
    }
    const at = index.get(mapKey);
    if (at === undefined) return undefined;
    if (at instanceof Timer) return at.kgIndex === kgIndex && same(at.namespace, ns) ? at : undefined;
    for (let i = 0; i < at.length; i++) {
      const t = at[i]!;
      if (t.kgIndex === kgIndex && same(t.namespace, ns)) return t;
    }
    return undefined;
  }

  append(timer: Timer): void {
    timer.bucket = this;
    timer.prev = this.tail;
    if (this.tail === undefined) this.head = timer;
    else this.tail.next = timer;
    this.tail = timer;
    this.count++;
    if (this.index !== undefined) indexAdd(this.index, timer);
    else if (this.count > BUCKET_SCAN) {
      const index = (this.index = new Map());
      for (let t = this.head; t !== undefined; t = t.next) indexAdd(index, t);
    }
  }

  unlink(timer: Timer): void {
    const { prev, next } = timer;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    timer.bucket = timer.prev = timer.next = undefined;
    this.count--;
    const index = this.index;
    if (index === undefined) return;
    const at = index.get(timer.mapKey)!;
    if (at === timer) index.delete(timer.mapKey);
    else {
      const list = at as Timer[];
      list.splice(list.indexOf(timer), 1);
      if (list.length === 1) index.set(timer.mapKey, list[0]!);
    }
  }
}

function indexAdd(index: Map<MapKey, Timer | Timer[]>, timer: Timer): void {
  const at = index.get(timer.mapKey);
  if (at === undefined) index.set(timer.mapKey, timer);
  else if (at instanceof Timer) index.set(timer.mapKey, [at, timer]);
  else at.push(timer);
}

export class TimerQueue {
  /** Timestamp → its bucket. */
  readonly #buckets = new Map<number, Bucket>();
  /**
   * 4-ary min-heap of the buckets by timestamp; `heap[i].heapIndex === i`. The timestamps of
   * slot i are also in `#ts[i]`, so sifting compares numbers in a typed array instead of loading
   * buckets scattered over the heap. Timestamps are distinct: no tie-break.
   */
  readonly #heap: Bucket[] = [];
  #ts = new Float64Array(64);
  #size = 0;
  #seq = 0;
  /**
   * The bucket the last `add` used; may have left the queue since (heapIndex -1). Registrations
   * come in runs at one timestamp (every key firing at t chains to t + slide; windows of many keys
   * end together), and a lookup by an epoch-ms timestamp hashes a double.
   */
  #lastBucket: Bucket | undefined = undefined;
  /** The timer the last `add` returned or found; may have fired or been deleted since. */
  #last: Timer | undefined = undefined;

  get size(): number {
    return this.#size;
  }

  peek(): Timer | undefined {
    return this.#heap[0]?.head;
  }

  /** Adds the timer unless it exists; returns the new timer, or undefined for a duplicate. */
  add(key: Key, keyGroup: number, kgIndex: number, ns: TimerNamespace, timestamp: number): Timer | undefined {
    // hot path: the same registration as the last one (key compared by identity: a miss for an
    // equal composite key in another array only costs the lookup below).
    const last = this.#last;
    if (
      last !== undefined &&
      last.key === key &&
      last.bucket !== undefined &&
      last.kgIndex === kgIndex &&
      same(last.timestamp, timestamp) &&
      same(last.namespace, ns)
    ) {
      return undefined;
    }
    const mapKey = mapKeyOf(key);
    const lastBucket = this.#lastBucket;
    let bucket = lastBucket !== undefined && lastBucket.heapIndex >= 0 && same(lastBucket.timestamp, timestamp) ? lastBucket : this.#buckets.get(timestamp);
    if (bucket !== undefined) {
      const found = bucket.find(mapKey, kgIndex, ns);
      if (found !== undefined) {
        this.#last = found;
        return undefined;
      }
    } else {
      bucket = new Bucket(timestamp);
      this.#buckets.set(timestamp, bucket);
      const at = this.#heap.length;
      if (at === this.#ts.length) this.#grow();
      this.#heap.push(bucket);
      this.#siftUp(at, bucket);
    }
    this.#lastBucket = bucket;
    const timer = new Timer(timestamp, this.#seq++, key, mapKey, keyGroup, kgIndex, ns);
    bucket.append(timer);
    this.#size++;
    this.#last = timer;
    return timer;
  }

  /** Removes the timer if present and returns it. */
  take(mapKey: MapKey, kgIndex: number, ns: TimerNamespace, timestamp: number): Timer | undefined {
    const bucket = this.#buckets.get(timestamp);
    if (bucket === undefined) return undefined;
    const timer = bucket.find(mapKey, kgIndex, ns);
    if (timer === undefined) return undefined;
    this.#unlink(bucket, timer);
    return timer;
  }

  /** The `seq` the next timer added gets: timers with a lower one were added before now. */
  get nextSeq(): number {
    return this.#seq;
  }

  /** Removes and returns the earliest timer. */
  poll(): Timer | undefined {
    const bucket = this.#heap[0];
    if (bucket === undefined) return undefined;
    const head = bucket.head!;
    this.#unlink(bucket, head);
    return head;
  }

  /** A copy of the pending timers (in no particular order). */
  timers(): Timer[] {
    const out = new Array<Timer>(this.#size);
    let i = 0;
    for (const bucket of this.#heap) for (let t = bucket.head; t !== undefined; t = t.next) out[i++] = t;
    return out;
  }

  /** The pending timers of one key group (walks every timer: for tests and tools, not hot paths). */
  *ofGroup(kgIndex: number): Generator<Timer, void, undefined> {
    for (const t of this.timers()) if (t.kgIndex === kgIndex) yield t;
  }

  #unlink(bucket: Bucket, timer: Timer): void {
    bucket.unlink(timer);
    this.#size--;
    if (bucket.count !== 0) return;
    this.#buckets.delete(bucket.timestamp);
    this.#removeAt(bucket.heapIndex);
  }

  #grow(): void {
    const ts = new Float64Array(this.#ts.length * 2);
    ts.set(this.#ts);
    this.#ts = ts;
  }

  #removeAt(i: number): void {
    const heap = this.#heap;
    const removed = heap[i]!;
    removed.heapIndex = -1;
    const last = heap.pop()!;
    if (last === removed) return;
    if (i > 0 && last.timestamp < this.#ts[(i - 1) >> 2]!) this.#siftUp(i, last);
    else this.#siftDown(i, last);
  }

  /** Moves `bucket` from the free slot `i` towards the root to its place. */
  #siftUp(i: number, bucket: Bucket): void {
    const heap = this.#heap;
    const ts = this.#ts;
    const t = bucket.timestamp;
    while (i > 0) {
      const p = (i - 1) >> 2;
      const pt = ts[p]!;
      if (!(t < pt)) break;
      const parent = heap[p]!;
      heap[i] = parent;
      ts[i] = pt;
      parent.heapIndex = i;
      i = p;
    }
    heap[i] = bucket;
    ts[i] = t;
    bucket.heapIndex = i;
  }

  /** Moves `bucket` from the free slot `i` towards the leaves to its place. */
  #siftDown(i: number, bucket: Bucket): void {
    const heap = this.#heap;
    const ts = this.#ts;
    const n = heap.length;
    const t = bucket.timestamp;
    for (;;) {
      const first = 4 * i + 1;
      if (first >= n) break;
      let best = first;
      let bt = ts[first]!;
      const end = first + 4 < n ? first + 4 : n;
      for (let c = first + 1; c < end; c++) {
        const ct = ts[c]!;
        if (ct < bt) {
          best = c;
          bt = ct;
        }
      }
      if (!(bt < t)) break;
      const child = heap[best]!;
      heap[i] = child;
      ts[i] = bt;
      child.heapIndex = i;
      i = best;
    }
    heap[i] = bucket;
    ts[i] = t;
    bucket.heapIndex = i;
  }
}

/** SameValueZero, the equality of Map keys (NaN equals NaN, 0 equals -0). */
function same(a: unknown, b: unknown): boolean {
  return a === b || (a !== a && b !== b);
}
