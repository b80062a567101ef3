/**
 * A FIFO queue over a power-of-two array with a mask, growing by doubling. O(1) push and shift
 * without `Array.prototype.shift`'s O(n) copying; shifted slots are cleared so the queue never
 * retains references to elements it handed out.
 */
export class RingBuffer<T> {
  #items: (T | undefined)[];
  #mask: number;
  #head = 0;
  #size = 0;

  constructor(initialCapacity = 16) {
    let capacity = 1;
    while (capacity < initialCapacity) capacity <<= 1;
    this.#items = new Array<T | undefined>(capacity);
    this.#mask = capacity - 1;
  }

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    if (this.#size === this.#items.length) this.#grow();
    this.#items[(this.#head + this.#size) & this.#mask] = item;
    this.#size++;
  }

  /** Removes and returns the oldest item, or undefined when empty. */
  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) & this.#mask;
    this.#size--;
    return item;
  }

  peek(): T | undefined {
    return this.#size === 0 ? undefined : this.#items[this.#head];
  }

  /** The `i`-th oldest item (0: the oldest), or undefined when `i` is out of range. */
  at(i: number): T | undefined {
    return i >= 0 && i < this.#size ? this.#items[(this.#head + i) & this.#mask] : undefined;
  }

  clear(): void {
    while (this.#size > 0) this.shift();
  }

  #grow(): void {
    const old = this.#items;
    const next = new Array<T | undefined>(old.length * 2);
    for (let i = 0; i < this.#size; i++) next[i] = old[(this.#head + i) & this.#mask];
    this.#items = next;
    this.#mask = next.length - 1;
    this.#head = 0;
  }
}
