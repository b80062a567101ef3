/**
 * What the hand-written scaling benches (bench/hand-join-scaling.ts, bench/hand-window-scaling.ts)
 * share: the rings two threads exchange frames through, without Eddy's channels, and starting a
 * query's threads at once.
 */
import { Worker } from "node:worker_threads";

/** Data bytes of each ring (a power of two). */
export const RING_BYTES = 1 << 21;

/** Shared memory for `threads` threads: rings[from][to] (from ≠ to), and the start gate. */
export interface ThreadWiring {
  readonly index: number;
  readonly threads: number;
  /** rings[from][to], from ≠ to: a header of two int32 (bytes written, bytes read), then the data. */
  readonly rings: (SharedArrayBuffer | undefined)[][];
  /** [0]: threads ready, [1]: go. */
  readonly start: SharedArrayBuffer;
}

/**
 * Runs the module `url` (its worker side: `if (!isMainThread) parentPort.postMessage(run(workerData))`)
 * on `threads` worker threads, each given `data` and its wiring; starts them together once all are
 * loaded and returns what each posts. Worker threads do not inherit the main thread's loader hooks:
 * each registers tsx, then loads the module.
 */
export async function runThreads<D extends object, R>(url: string, threads: number, data: D): Promise<R[]> {
  const rings = Array.from({ length: threads }, (_, from) =>
    Array.from({ length: threads }, (_, to) => (from === to ? undefined : new SharedArrayBuffer(8 + RING_BYTES))),
  );
  const start = new SharedArrayBuffer(8);
  const flags = new Int32Array(start);
  const entry = `import { register } from ${JSON.stringify(import.meta.resolve("tsx/esm/api"))}; register(); await import(${JSON.stringify(url)});`;
  const workers = Array.from(
    { length: threads },
    (_, index) => new Worker(new URL(`data:text/javascript,${encodeURIComponent(entry)}`), { workerData: { ...data, index, threads, rings, start } satisfies D & ThreadWiring }),
  );
  const results = workers.map(
    (w) =>
      new Promise<R>((resolve, reject) => {
        w.once("message", resolve);
        w.once("error", reject);
      }),
  );
  while (Atomics.load(flags, 0) < threads) await new Promise((r) => setTimeout(r, 5));
  Atomics.store(flags, 1, 1);
  Atomics.notify(flags, 1);
  const done = await Promise.all(results);
  await Promise.all(workers.map((w) => w.terminate()));
  return done;
}

/** In a worker: reports this thread ready and waits for the others. */
export function awaitStart(wiring: ThreadWiring): void {
  const flags = new Int32Array(wiring.start);
  Atomics.add(flags, 0, 1);
  Atomics.wait(flags, 1, 0);
}

/** Parses `--name N` (a positive integer, `_` allowed between digits). */
export function intFlag(argv: readonly string[], name: string, fallback: number): number {
  const at = argv.indexOf(name);
  const value = at < 0 ? fallback : Number(argv[at + 1]!.replaceAll("_", ""));
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  return value;
}

/**
 * One direction of the exchange: a single-producer, single-consumer ring of frames, each
 * `u32 length, 4 bytes padding, u8 kind, 3 bytes padding, u32 records, body, padding to 8 bytes`,
 * so that every frame and body starts 8-byte aligned (a codec may view its columns in place).
 */
export class Ring {
  readonly #head: Int32Array;
  readonly #data: Uint8Array;
  readonly #mask: number;
  readonly #header = new Uint8Array(16);
  readonly #headerView = new DataView(this.#header.buffer);
  #pending = 0;

  constructor(sab: SharedArrayBuffer) {
    this.#head = new Int32Array(sab, 0, 2);
    this.#data = new Uint8Array(sab, 8, sab.byteLength - 8);
    this.#mask = sab.byteLength - 8 - 1;
  }

  /** Sends one frame; false (nothing sent) when the ring lacks room. */
  write(kind: number, records: number, body: Uint8Array): boolean {
    const w = Atomics.load(this.#head, 0);
    const used = (w - Atomics.load(this.#head, 1)) | 0;
    const length = 8 + ((body.length + 7) & ~7);
    if (this.#mask + 1 - used < length + 8) return false;
    this.#headerView.setUint32(0, length, true);
    this.#headerView.setUint8(8, kind);
    this.#headerView.setUint32(12, records, true);
    this.#copyIn(this.#header, w);
    this.#copyIn(body, (w + 16) | 0);
    Atomics.store(this.#head, 0, (w + 8 + length) | 0);
    return true;
  }

  /**
   * The next frame (kind, padding, records, body), or undefined when none is there: a view of the
   * ring where the frame is contiguous (decoded in place, as Eddy's channels decode), else a copy
   * in `spill`. Valid until `release`.
   */
  peek(spill: Uint8Array): Uint8Array | undefined {
    const r = Atomics.load(this.#head, 1);
    if (Atomics.load(this.#head, 0) === r) return undefined;
    this.#copyOut(this.#header, 4, r);
    const length = this.#headerView.getUint32(0, true);
    this.#pending = 8 + length;
    const offset = (r + 8) & this.#mask;
    if (offset + length <= this.#mask + 1) return this.#data.subarray(offset, offset + length);
    this.#copyOut(spill, length, (r + 8) | 0);
    return spill.subarray(0, length);
  }

  /** Frees the frame `peek` returned. */
  release(): void {
    Atomics.store(this.#head, 1, (Atomics.load(this.#head, 1) + this.#pending) | 0);
  }

  #copyIn(src: Uint8Array, at: number): void {
    const offset = at & this.#mask;
    const first = Math.min(src.length, this.#mask + 1 - offset);
    this.#data.set(first === src.length ? src : src.subarray(0, first), offset);
    if (first < src.length) this.#data.set(src.subarray(first), 0);
  }

  #copyOut(into: Uint8Array, length: number, at: number): void {
    const offset = at & this.#mask;
    const first = Math.min(length, this.#mask + 1 - offset);
    into.set(this.#data.subarray(offset, offset + first), 0);
    if (first < length) into.set(this.#data.subarray(0, length - first), first);
  }
}
