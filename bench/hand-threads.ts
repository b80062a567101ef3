/**
 * What the hand-written scaling benches (bench/hand-join-scaling.ts, bench/hand-window-scaling.ts)
 * share: the rings two threads exchange frames through, without Eddy's channels, and starting a
 * query's threads at once.
 */
import { availableParallelism, cpus, loadavg } from "node:os";
import { Worker } from "node:worker_threads";
import { nexmarkConfig, nexmarkEvent, type NexmarkEvent } from "eddy";
import { ByteReader, ByteWriter } from "../packages/eddy/src/core/codec/bytes.ts";
import type { BatchCodec } from "../packages/eddy/src/core/codec/codec.ts";
import { defaultCodec } from "../packages/eddy/src/core/codec/default-codec.ts";
import { mergeFolds, type OutputFold } from "./output-fold.ts";
import { median } from "./stats.ts";

/** Data bytes of each ring (a power of two). */
const RING_BYTES = 1 << 21;

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
function awaitStart(wiring: ThreadWiring): void {
  const flags = new Int32Array(wiring.start);
  Atomics.add(flags, 0, 1);
  Atomics.wait(flags, 1, 0);
}

/** Parses `--name N` (a positive integer, `_` allowed between digits). */
function intFlag(argv: readonly string[], name: string, fallback: number): number {
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

/** The thread owning key `id` of `threads` (a multiplicative hash, so not simply the id's parity). */
export function owner(id: number, threads: number): number {
  return (Math.imul(id, 0x9e3779b1) >>> 16) % threads;
}

/** Largest frame: 1,024 auctions of ~500 bytes fit. */
const MAX_FRAME_BYTES = 1 << 20;
/** Records per frame at most (Eddy's batch between threads). */
export const FRAME_RECORDS = 1024;
/** Events generated between two looks at the input ring. */
const POLL_EVERY = 1024;
/** The frame kind that ends a thread's output (`finish`); a query's kinds are 1-255. */
const END = 0;

/**
 * One thread's end of the exchange with the other: frames out through one ring and in through the
 * other. A frame of records of a kind is encoded by a codec of its own per direction (each kind is
 * an edge, as each of Eddy's channels has its own codec) and decoded in place; a frame of a
 * `signals` kind carries one number (a float64 body) instead: a watermark, a progress mark.
 */
export class Exchange {
  /** Records sent. */
  crossed = 0;
  /** Time spent waiting for room in the output ring. */
  blockedMs = 0;
  /** The other thread has finished (its END arrived). */
  otherDone = false;
  readonly #out: Ring;
  readonly #input: Ring;
  readonly #flags: Int32Array;
  readonly #encoders: BatchCodec[] = [];
  readonly #decoders: BatchCodec[] = [];
  readonly #writer = new ByteWriter(64 * 1024);
  readonly #spill = new Uint8Array(MAX_FRAME_BYTES);
  readonly #signals: readonly boolean[];

  constructor(
    wiring: ThreadWiring,
    readonly onRecords: (kind: number, values: unknown[]) => void,
    readonly onSignal: (kind: number, value: number) => void = () => {},
    signals: readonly number[] = [],
  ) {
    const other = 1 - wiring.index;
    this.#out = new Ring(wiring.rings[wiring.index]![other]!);
    this.#input = new Ring(wiring.rings[other]![wiring.index]!);
    this.#flags = new Int32Array(wiring.start);
    const isSignal: boolean[] = [];
    for (const kind of signals) isSignal[kind] = true;
    this.#signals = isSignal;
  }

  /** Hands every frame waiting in the input ring to the callbacks; true if there was one. */
  drain(): boolean {
    let any = false;
    const input = this.#input;
    for (let f = input.peek(this.#spill); f !== undefined; f = input.peek(this.#spill)) {
      any = true;
      const kind = f[0]!;
      if (kind === END) this.otherDone = true;
      else {
        const records = f[4]! | (f[5]! << 8) | (f[6]! << 16) | (f[7]! << 24);
        // The body's length is not sent: the padding after it is never read (the codec reads `records`).
        const reader = new ByteReader(f.buffer, f.byteOffset + 8, f.byteOffset + f.length);
        if (this.#signals[kind] === true) this.onSignal(kind, reader.f64());
        else this.onRecords(kind, (this.#decoders[kind] ??= defaultCodec()).decode(reader, records));
      }
      input.release();
    }
    return any;
  }

  /** Sends `values` as one frame of `kind` and empties them. */
  send(kind: number, values: unknown[]): void {
    const writer = this.#writer;
    writer.reset();
    if (values.length > 0) (this.#encoders[kind] ??= defaultCodec()).encode(values, writer);
    this.#write(kind, values.length, writer.written());
    this.crossed += values.length;
    values.length = 0;
  }

  /** Sends the number `value` as a frame of `kind` (one of the constructor's `signals`). */
  signal(kind: number, value: number): void {
    this.#writer.reset();
    this.#writer.f64(value);
    this.#write(kind, 0, this.#writer.written());
  }

  /** Takes in the other thread's frames until `done`; the time this waited. */
  waitFor(done: () => boolean): number {
    const t = performance.now();
    while (!done()) if (!this.drain()) Atomics.wait(this.#flags, 1, 1, 0.05);
    return performance.now() - t;
  }

  /** Sends END and takes in the other thread's frames until its END; the time this waited. */
  finish(): number {
    this.send(END, []);
    return this.waitFor(() => this.otherDone);
  }

  /** Writes a frame, taking in input while the ring is full. */
  #write(kind: number, records: number, body: Uint8Array): void {
    if (body.length + 8 > MAX_FRAME_BYTES) throw new RangeError(`a frame of ${body.length} bytes`);
    if (this.#out.write(kind, records, body)) return;
    const t = performance.now();
    while (!this.#out.write(kind, records, body)) this.drain();
    this.blockedMs += performance.now() - t;
  }
}

/**
 * Once every thread is ready, this thread's share of the event ids, in order: `block` consecutive
 * ids, then the other thread's `block` (all of them with one thread); `poll` every POLL_EVERY
 * events. Returns when the generation started (performance.now()), start-up excluded.
 */
export function generate(job: ThreadJob & ThreadWiring, each: (e: NexmarkEvent) => void, poll: () => void): number {
  const config = nexmarkConfig();
  awaitStart(job);
  const started = performance.now();
  const { index, threads, events, block } = job;
  for (let id = index * block, k = 1; id < events; k++) {
    const e = nexmarkEvent(id, config);
    id = (id + 1) % block === 0 ? id + 1 + (threads - 1) * block : id + 1;
    each(e);
    if (k % POLL_EVERY === 0) poll();
  }
  return started;
}

/** What every thread of a hand-written query posts back. */
export interface ThreadResult {
  /** From the start signal to the thread's last output, start-up excluded. */
  readonly ms: number;
  readonly fold: OutputFold;
  /** Records this thread sent to the other. */
  readonly crossed: number;
  /** Waiting for room in the output ring, and for the other thread at the end. */
  readonly blockedMs: number;
  readonly endWaitMs: number;
  /** Query-specific counts, summed over the threads and printed per round. */
  readonly counts?: Readonly<Record<string, number>>;
}

/** What every hand-written scaling bench's worker gets besides its wiring. */
export interface ThreadJob {
  readonly events: number;
  /** Consecutive ids a thread generates before the other's turn (1: every other id). */
  readonly block: number;
}

/** What a bench checks each run against: the query's loop's output, and anything else it keeps. */
export interface Expected<R extends ThreadResult> {
  readonly fold: OutputFold;
  /** A further check of one run's thread results: a description of what differs, or undefined. */
  readonly check?: (done: readonly R[]) => string | undefined;
}

/**
 * The main side of a hand-written scaling bench: `--events`, `--rounds` and `--block` from the
 * command line, then rounds alternating one thread and two (which goes first alternates too), each
 * run's output checked against `expected` (the query's loop), and the median ratio. `data` goes
 * to every thread beside its ThreadJob.
 */
export async function compareThreads<R extends ThreadResult>(url: string, title: string, expected: (events: number) => Expected<R>, data: object = {}): Promise<void> {
  const argv = process.argv.slice(2);
  const events = intFlag(argv, "--events", 4_000_000);
  const rounds = intFlag(argv, "--rounds", 5);
  const block = intFlag(argv, "--block", 1);
  console.log(
    `${title}: ${events.toLocaleString("en")} events${block === 1 ? "" : ` (in blocks of ${block.toLocaleString("en")} ids per thread)`}, median of ${rounds} alternated rounds; ` +
      `${availableParallelism()} cores (${cpus()[0]?.model ?? "unknown CPU"}), Node ${process.version}, ${new Date().toISOString().slice(0, 16)}, load ${loadavg()[0]!.toFixed(1)}\n`,
  );
  const { fold: want, check } = expected(events);
  const ones: number[] = [];
  const twos: number[] = [];
  let crossed = 0;
  for (let r = 0; r < rounds; r++) {
    for (const threads of r % 2 === 0 ? [1, 2] : [2, 1]) {
      const done = await runThreads<ThreadJob, R>(url, threads, { ...data, events, block });
      const ms = Math.max(...done.map((d) => d.ms));
      const fold = mergeFolds(done.map((d) => d.fold));
      if (fold.count !== want.count || fold.checksum !== want.checksum) {
        throw new Error(`${threads} thread(s): ${JSON.stringify(fold)}, the loop: ${JSON.stringify(want)}`);
      }
      const differs = check?.(done);
      if (differs !== undefined) throw new Error(`${threads} thread(s): ${differs}`);
      (threads === 1 ? ones : twos).push(ms);
      const sent = done.reduce((n, d) => n + d.crossed, 0);
      if (threads === 2) crossed = sent;
      const counts = new Map<string, number>();
      for (const d of done) for (const [name, n] of Object.entries(d.counts ?? {})) counts.set(name, (counts.get(name) ?? 0) + n);
      const notes = [...counts].map(([name, n]) => `${n.toLocaleString("en")} ${name}`);
      if (threads === 2) {
        notes.push(
          `${sent.toLocaleString("en")} records crossed (waited for room ${Math.max(...done.map((d) => d.blockedMs)).toFixed(0)} ms, ` +
            `for the other thread at the end ${Math.max(...done.map((d) => d.endWaitMs)).toFixed(0)} ms)`,
        );
      }
      console.log(`  round ${r + 1}, ${threads} thread${threads === 1 ? " " : "s"}: ${ms.toFixed(0).padStart(6)} ms, ${((events / ms) * 1000 / 1e6).toFixed(2)} M events/s${notes.length > 0 ? `; ${notes.join("; ")}` : ""}`);
    }
  }
  const [one, two] = [median(ones)!, median(twos)!];
  console.log(
    `\nmedian: 1 thread ${one.toFixed(0)} ms, 2 threads ${two.toFixed(0)} ms: **${(one / two).toFixed(2)}×** ` +
      `(${crossed.toLocaleString("en")} records crossed, ${((crossed / events) * 100).toFixed(1)} per 100 events; output ${want.count.toLocaleString("en")} rows, the loop's); load now ${loadavg()[0]!.toFixed(1)}`,
  );
}
