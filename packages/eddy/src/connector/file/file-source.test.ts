import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { ManualClock } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import { readerOutputOf, type BadRecord, type Source, type SourceReader, type SplitEnumerator, type SplitEnumeratorContext } from "../source.ts";
import { sourceReaderContext } from "../../testing/source-reader-context.ts";
import { FileSource } from "./file-source.ts";
import type { FileSplit } from "./file-split.ts";

const root = mkdtempSync(join(tmpdir(), "eddy-file-source-"));
after(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
function dir(files: Record<string, string | Buffer> = {}): string {
  const d = join(root, `d${dirs++}`);
  mkdirSync(d, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(d, name, ".."), { recursive: true });
    writeFileSync(join(d, name), content);
  }
  return d;
}

interface Snapshot {
  readonly enumerator: unknown;
  readonly splits: FileSplit[];
}

/**
 * Runs a source's enumerator and `parallelism` readers on this thread as the runtime does:
 * split requests and assignments are asynchronous (a microtask), snapshots are taken between polls.
 */
class Driver<T> {
  readonly outputs: T[][];
  readonly bad: BadRecord[] = [];
  /** Split outputs the readers have opened and not released. */
  readonly openSplits = new Set<string>();
  readonly readers: SourceReader<T, FileSplit>[] = [];
  readonly enumerator: SplitEnumerator<FileSplit>;
  readonly ended: boolean[];
  failure: unknown;
  polls = 0;

  constructor(readonly source: Source<T, FileSplit>, readonly parallelism: number, restored?: Snapshot) {
    this.outputs = Array.from({ length: parallelism }, () => []);
    this.ended = this.outputs.map(() => false);
    const context: SplitEnumeratorContext<FileSplit> = {
      parallelism,
      assignSplits: (i, splits) => queueMicrotask(() => this.readers[i]!.addSplits(splits)),
      signalNoMoreSplits: (i) => queueMicrotask(() => this.readers[i]!.notifyNoMoreSplits()),
      failJob: (cause) => void (this.failure = cause),
    };
    this.enumerator = restored === undefined ? source.createEnumerator(context) : source.restoreEnumerator!(context, restored.enumerator);
    for (let i = 0; i < parallelism; i++) {
      this.readers.push(source.createReader(sourceReaderContext({ subtaskIndex: i, parallelism, sendSplitRequest: () => queueMicrotask(() => this.enumerator.handleSplitRequest!(i)) })));
    }
    this.enumerator.start?.();
    for (let i = 0; i < parallelism; i++) this.enumerator.addReader(i);
    // Restored splits go round robin, as operator state is redistributed.
    restored?.splits.forEach((s, j) => this.readers[j % parallelism]!.addSplits([s]));
    for (const r of this.readers) r.start?.();
  }

  /** Polls until every reader ended, `maxPolls` polls were made, or `until` holds; returns whether all ended. */
  async run(options: { maxPolls?: number; until?: () => boolean; timeoutMs?: number } = {}): Promise<boolean> {
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      if (this.ended.every(Boolean)) {
        assert.deepEqual([...this.openSplits], [], "every split's output is released once the readers end");
        return true;
      }
      if (options.until?.() === true) return false;
      if (Date.now() > deadline) throw new Error("the source did not end in time");
      const waits: Promise<void>[] = [];
      let progressed = false;
      for (let i = 0; i < this.parallelism; i++) {
        if (this.ended[i]) continue;
        if (options.maxPolls !== undefined && this.polls >= options.maxPolls) return false;
        this.polls++;
        const out = this.outputs[i]!;
        const status = this.readers[i]!.pollNext(readerOutputOf({ collect: (v) => void out.push(v), reportBadRecord: (b) => void this.bad.push(b) }, this.openSplits));
        if (status === "end") this.ended[i] = true;
        else if (status === "more") progressed = true;
        else waits.push(this.readers[i]!.isAvailable());
      }
      if (!progressed) await Promise.race([...waits, new Promise((r) => setTimeout(r, 2))]);
      else await Promise.resolve();
    }
  }

  snapshot(): Snapshot {
    return { enumerator: structuredClone(this.enumerator.snapshotState!(1)), splits: structuredClone(this.readers.flatMap((r) => r.snapshotState(1))) };
  }

  close(): void {
    for (const r of this.readers) r.close?.();
    this.enumerator.close?.();
  }

  get all(): T[] {
    return this.outputs.flat();
  }
}

async function readAll<T>(source: Source<T, FileSplit>, parallelism = 1): Promise<Driver<T>> {
  const d = new Driver(source, parallelism);
  try {
    await d.run();
  } finally {
    d.close();
  }
  return d;
}

/** Reads `stopAfter` polls at parallelism `before`, snapshots, restores at parallelism `after` and reads to the end: all it emitted, in order per reader. */
async function readAcrossRestore<T>(source: Source<T, FileSplit>, stopAfter: number, before: number, after: number): Promise<T[]> {
  const first = new Driver(source, before);
  await first.run({ maxPolls: stopAfter });
  const snapshot = first.snapshot();
  first.close();
  const second = new Driver(source, after, snapshot);
  await second.run();
  second.close();
  return [...first.all, ...second.all];
}

const sorted = <T>(xs: readonly T[]): T[] => [...xs].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0));

/** Lines of text: no '\n', no trailing '\r' (a reader strips one), some multi-byte. */
const lineArb = fc.string({ unit: fc.constantFrom("a", "b", "é", "€", "😀", " ", "\r", "{"), maxLength: 12 }).map((s) => s.replace(/\r+$/, ""));
const fileArb = fc.record({ lines: fc.array(lineArb, { maxLength: 30 }), trailingNewline: fc.boolean() }).map(({ lines, trailingNewline }) => ({
  lines,
  // Without a final newline the last line must not be empty (else it is not there).
  content: lines.length === 0 ? "" : lines.join("\n") + (trailingNewline || lines[lines.length - 1] === "" ? "\n" : ""),
}));

describe("FileSource.lines: splits and the boundary rule", () => {
  test("a file read by byte ranges yields every line once, in order, for any split and chunk sizes", async () => {
    await fc.assert(
      fc.asyncProperty(fileArb, fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 17 }), async (file, splitBytes, chunkBytes) => {
        const d = dir({ "f.txt": file.content });
        const read = await readAll(FileSource.lines(join(d, "f.txt"), { splitBytes, chunkBytes }));
        assert.deepEqual(read.all, file.lines);
      }),
      { numRuns: 150 },
    );
  });

  test("parallel readers share a file's splits and read each line once", async () => {
    await fc.assert(
      fc.asyncProperty(fileArb, fc.integer({ min: 1, max: 40 }), fc.integer({ min: 2, max: 4 }), async (file, splitBytes, parallelism) => {
        const d = dir({ "f.txt": file.content });
        const read = await readAll(FileSource.lines(join(d, "f.txt"), { splitBytes, chunkBytes: 7 }), parallelism);
        assert.deepEqual(sorted(read.all), sorted(file.lines));
      }),
      { numRuns: 60 },
    );
  });

  test("a record straddling a split boundary is read once, by the split where it starts", async () => {
    // Splits of 10 bytes: "0123456789abcdefghij" straddles bytes 10 and 20 and starts in the first.
    const d = dir({ "f.txt": "0123456789abcdefghij\nx\nyy\n" });
    const source = FileSource.lines(join(d, "f.txt"), { splitBytes: 10 });
    const read = await readAll(source, 3);
    assert.deepEqual(sorted(read.all), ["0123456789abcdefghij", "x", "yy"]);
    assert.equal(read.all.length, 3);
  });

  test("CRLF line ends, a byte-order mark and a last line without a newline", async () => {
    const d = dir({ "f.txt": "\ufeffone\r\ntwo\r\n\r\nthree" });
    assert.deepEqual((await readAll(FileSource.lines(join(d, "f.txt")))).all, ["one", "two", "", "three"]);
  });
});

describe("FileSource: checkpoints", () => {
  test("snapshot at a random point, restore, read on: the output equals one uninterrupted read", async () => {
    await fc.assert(
      fc.asyncProperty(fileArb, fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 9 }), fc.nat(60), fc.boolean(), async (file, splitBytes, chunkBytes, stopAfter, gz) => {
        const name = gz ? "f.txt.gz" : "f.txt";
        const d = dir({ [name]: gz ? gzipSync(file.content) : file.content });
        const source = FileSource.lines(join(d, name), { splitBytes, chunkBytes });
        assert.deepEqual(await readAcrossRestore(source, stopAfter, 1, 1), file.lines);
      }),
      { numRuns: 150 },
    );
  });

  test("NDJSON and CSV resume mid-file from a snapshot, at another parallelism", async () => {
    const rows = Array.from({ length: 300 }, (_, i) => ({ id: i, name: `n,"${i}"\n` }));
    const csv = `id,name\n${rows.map((r) => `${r.id},"${r.name.replace(/"/g, '""')}"`).join("\n")}\n`;
    const d = dir({
      "a.ndjson": rows.slice(0, 150).map((r) => JSON.stringify(r)).join("\n"),
      "b.ndjson.gz": gzipSync(rows.slice(150).map((r) => JSON.stringify(r)).join("\n")),
      "c.csv": csv,
      "d.csv.gz": gzipSync(csv),
    });
    for (const [source, expected] of [
      [FileSource.ndjson<unknown>(join(d, "*.ndjson*"), { splitBytes: 500, chunkBytes: 64 }), rows],
      [FileSource.csv<unknown>(join(d, "*.csv*"), { chunkBytes: 64, cast: true }), [...rows, ...rows]],
    ] as const) {
      for (const stopAfter of [3, 17, 40, 90]) {
        assert.deepEqual(sorted(await readAcrossRestore(source, stopAfter, 2, 3)), sorted(expected), `stop after ${stopAfter} polls`);
      }
    }
  });
});

describe("FileSource formats", () => {
  test("NDJSON: values per line, blank lines skipped", async () => {
    const d = dir({ "a.ndjson": '{"a":1}\n\n  \n[2]\n"s"\n' });
    assert.deepEqual((await readAll(FileSource.ndjson(join(d, "a.ndjson")))).all, [{ a: 1 }, [2], "s"]);
  });

  test("CSV: header, quoting (delimiters, quotes and newlines inside quotes), another delimiter, no header", async () => {
    const d = dir({ "h.csv": 'a,b\n1,"x,y"\n2,"say ""hi"""\n3,"two\nlines"\n', "n.tsv": "1\tx\n2\ty\n" });
    assert.deepEqual((await readAll(FileSource.csv(join(d, "h.csv")))).all, [
      { a: "1", b: "x,y" },
      { a: "2", b: 'say "hi"' },
      { a: "3", b: "two\nlines" },
    ]);
    assert.deepEqual((await readAll(FileSource.csv(join(d, "n.tsv"), { header: false, delimiter: "\t" }))).all, [
      ["1", "x"],
      ["2", "y"],
    ]);
    assert.deepEqual((await readAll(FileSource.csv(join(d, "n.tsv"), { header: false, delimiter: "\t", columns: ["k", "v"], cast: true }))).all, [
      { k: 1, v: "x" },
      { k: 2, v: "y" },
    ]);
  });

  test(".gz files are decompressed on the fly", async () => {
    const d = dir({ "a.txt.gz": gzipSync("x\ny\n"), "b.ndjson.gz": gzipSync('{"v":1}\n{"v":2}') });
    assert.deepEqual((await readAll(FileSource.lines(join(d, "a.txt.gz")))).all, ["x", "y"]);
    assert.deepEqual((await readAll(FileSource.ndjson(join(d, "b.ndjson.gz")))).all, [{ v: 1 }, { v: 2 }]);
  });
});

describe("FileSource: bad input and file errors", () => {
  test("a line that is not JSON is a bad record with file, line and byte offset; reading goes on", async () => {
    const d = dir({ "a.ndjson": '{"a":1}\n{oops\n{"a":2}\n' });
    const read = await readAll(FileSource.ndjson(join(d, "a.ndjson")));
    assert.deepEqual(read.all, [{ a: 1 }, { a: 2 }]);
    assert.equal(read.bad.length, 1);
    assert.equal(read.bad[0]!.raw, "{oops");
    assert.deepEqual(read.bad[0]!.position, { file: join(d, "a.ndjson"), line: 2, offset: 8 });
  });

  test("a bad line in a byte-range split that starts inside the file still gets its line number", async () => {
    const lines = Array.from({ length: 50 }, (_, i) => (i === 37 ? "not json" : JSON.stringify({ i })));
    const d = dir({ "a.ndjson": lines.join("\n") });
    const read = await readAll(FileSource.ndjson(join(d, "a.ndjson"), { splitBytes: 64 }), 2);
    assert.equal(read.all.length, 49);
    assert.equal(read.bad.length, 1);
    assert.equal(read.bad[0]!.position.line, 38);
    assert.equal(read.bad[0]!.position.offset, lines.slice(0, 37).join("\n").length + 1);
  });

  test("a CSV row with the wrong number of columns is a bad record with its line; reading goes on", async () => {
    const d = dir({ "a.csv": 'a,b\n1,2\n"x\ny",3,4\n5,6\n' });
    const read = await readAll(FileSource.csv(join(d, "a.csv")));
    assert.deepEqual(read.all, [
      { a: "1", b: "2" },
      { a: "5", b: "6" },
    ]);
    assert.equal(read.bad.length, 1);
    assert.equal(read.bad[0]!.position.line, 4);
    assert.equal(read.bad[0]!.position.file, join(d, "a.csv"));
  });

  test("a truncated gzip file: the records before the cut, then a bad record, and the split ends", async () => {
    const full = gzipSync(Array.from({ length: 2000 }, (_, i) => `line ${i}`).join("\n"));
    const d = dir({ "t.txt.gz": full.subarray(0, full.length - 100) });
    const read = await readAll(FileSource.lines(join(d, "t.txt.gz")));
    assert.ok(read.all.length > 0 && read.all.length < 2000);
    assert.deepEqual(read.all, Array.from({ length: read.all.length }, (_, i) => `line ${i}`));
    assert.equal(read.bad.length, 1);
    assert.equal(read.bad[0]!.position.file, join(d, "t.txt.gz"));
    assert.match(String(read.bad[0]!.error), /unexpected end of file/);
  });

  test("a path that does not exist fails the job with FILE_NOT_FOUND naming it", async () => {
    const missing = join(root, "no-such-dir");
    await assert.rejects(readAll(FileSource.ndjson(missing)), (e: unknown) => e instanceof EddyError && e.code === "FILE_NOT_FOUND" && e.message.includes(missing));
  });

  test("a file that vanishes before it is read fails with FILE_NOT_FOUND naming it", async () => {
    const d = dir({ "a.txt": "x\n" });
    const d1 = new Driver(FileSource.lines(d), 1);
    await d1.run({ until: () => d1.polls > 0 || (d1.enumerator.snapshotState!(0) as { discovered: boolean }).discovered });
    // Discovered; the reader has not opened it yet.
    await new Promise((r) => setTimeout(r, 20));
    rmSync(join(d, "a.txt"));
    await assert.rejects(d1.run(), (e: unknown) => e instanceof EddyError && e.code === "FILE_NOT_FOUND" && e.message.includes(join(d, "a.txt")));
    d1.close();
  });

  test("a file that may not be read fails with FILE_ACCESS_DENIED naming it", async () => {
    const d = dir({ "a.txt": "x\n" });
    chmodSync(join(d, "a.txt"), 0o000);
    if (process.getuid?.() !== 0) {
      await assert.rejects(readAll(FileSource.lines(d)), (e: unknown) => e instanceof EddyError && e.code === "FILE_ACCESS_DENIED" && e.message.includes(join(d, "a.txt")));
      return;
    }
    // Root reads every file: the same read runs in a child process as the unprivileged user 65534.
    for (let p = d; p.startsWith(tmpdir() + "/"); p = dirname(p)) chmodSync(p, 0o755);
    const script = join(d, "read.mts");
    writeFileSync(
      script,
      `import { FileSource } from ${JSON.stringify(new URL("./file-source.ts", import.meta.url).href)};
       import { readerOutputOf } from ${JSON.stringify(new URL("../source.ts", import.meta.url).href)};
       const source = FileSource.lines(${JSON.stringify(d)});
       const splits = [];
       const enumerator = source.createEnumerator({ parallelism: 1, assignSplits: (_s, a) => splits.push(...a), signalNoMoreSplits() {}, failJob(e) { console.log(JSON.stringify({ code: e.code, message: e.message })); process.exit(0); } });
       enumerator.start?.();
       enumerator.addReader(0);
       enumerator.handleSplitRequest?.(0);
       for (let i = 0; i < 1000 && splits.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
       const reader = source.createReader({ subtaskIndex: 0, parallelism: 1, sendSplitRequest() {} });
       reader.addSplits(splits);
       reader.notifyNoMoreSplits();
       const out = readerOutputOf({ collect() {}, reportBadRecord() {} });
       try {
         for (let i = 0; i < 1000; i++) { if (reader.pollNext(out) === "end") break; await reader.isAvailable(); }
         console.log(JSON.stringify({ code: "none" }));
       } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`,
    );
    const child = spawnSync(process.execPath, ["--import", "tsx", script], { uid: 65534, gid: 65534, encoding: "utf8", cwd: import.meta.dirname });
    assert.equal(child.status, 0, child.stderr);
    const result = JSON.parse(child.stdout.trim().split("\n").pop()!) as { code: string; message: string };
    assert.equal(result.code, "FILE_ACCESS_DENIED", child.stdout);
    assert.ok(result.message.includes(join(d, "a.txt")), result.message);
  });

  test("invalid options are INVALID_FILE_SOURCE when the source is built", () => {
    assert.throws(() => FileSource.lines(""), { code: "INVALID_FILE_SOURCE" });
    assert.throws(() => FileSource.lines("x", { splitBytes: 0 }), { code: "INVALID_FILE_SOURCE" });
    assert.throws(() => FileSource.lines("x", { monitorIntervalMs: -1 }), { code: "INVALID_FILE_SOURCE" });
  });
});

describe("FileSource: paths and discovery", () => {
  test("a directory is read recursively, hidden files skipped; a glob picks files by pattern", async () => {
    const d = dir({ "a.txt": "a\n", "sub/b.txt": "b\n", "sub/c.log": "c\n", ".hidden.txt": "h\n", "_tmp/x.txt": "x\n", "sub/.part-0.txt": "p\n" });
    assert.deepEqual(sorted((await readAll(FileSource.lines(d))).all), ["a", "b", "c"]);
    assert.deepEqual(sorted((await readAll(FileSource.lines(join(d, "**/*.txt")))).all), ["a", "b"]);
    assert.deepEqual(sorted((await readAll(FileSource.lines(join(d, "*.txt")))).all), ["a"]);
  });

  test("files are read in modification order", async () => {
    const d = dir({ "a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n" });
    utimesSync(join(d, "a.txt"), 3000, 3000);
    utimesSync(join(d, "b.txt"), 1000, 1000);
    utimesSync(join(d, "c.txt"), 2000, 2000);
    assert.deepEqual((await readAll(FileSource.lines(d))).all, ["b", "c", "a"]);
  });
});

describe("FileSource: continuous monitoring", () => {
  /** Adds a file, lets the enumerator discover it, reads until `count` records, then one idle discovery more. */
  async function addAndRead(driver: Driver<string>, clock: ManualClock, path: string, text: string, count: number): Promise<void> {
    writeFileSync(path, text);
    clock.advance(100);
    await driver.run({ until: () => driver.all.length === count });
    clock.advance(100); // nothing new: nothing is read again
    await driver.run({ maxPolls: driver.polls + 20 });
  }

  test("files added later are read, each once, also across a restore of the enumerator", async () => {
    const d = dir({ "1.txt": "one\n" });
    const clock = new ManualClock(0);
    const source = FileSource.lines(d, { clock }).monitorContinuously(100);
    assert.equal(source.boundedness, "continuous");
    const first = new Driver(source, 2);
    await first.run({ until: () => first.all.length === 1 });
    await addAndRead(first, clock, join(d, "2.txt"), "two\n", 2);
    writeFileSync(join(d, "3.txt"), "three\n");
    const snapshot = first.snapshot();
    first.close();
    assert.deepEqual(sorted(first.all), ["one", "two"]);
    assert.deepEqual(sorted((snapshot.enumerator as { seen: string[] }).seen), [join(d, "1.txt"), join(d, "2.txt")]);

    const second = new Driver(source, 1, snapshot);
    await second.run({ until: () => second.all.length === 1 });
    await addAndRead(second, clock, join(d, "4.txt"), "four\n", 2);
    second.close();
    assert.deepEqual(sorted(second.all), ["four", "three"]);
  });
});

describe("FileSource.parquet", () => {
  test("rows as objects, row group by row group; a snapshot inside a row group resumes at the next row", async () => {
    const { DuckDBInstance } = await import("@duckdb/node-api");
    const d = dir();
    const instance = await DuckDBInstance.create(":memory:");
    const connection = await instance.connect();
    await connection.run("SET threads = 1");
    await connection.run(`COPY (SELECT i::INTEGER AS id, 'n' || i AS name FROM range(2500) t(i)) TO '${join(d, "a.parquet")}' (FORMAT parquet, ROW_GROUP_SIZE 1000)`);
    connection.closeSync();
    instance.closeSync();
    const expected = Array.from({ length: 2500 }, (_, i) => ({ id: i, name: `n${i}` }));
    const source = FileSource.parquet<{ id: number; name: string }>(join(d, "*.parquet"));
    assert.deepEqual((await readAll(source)).all, expected);
    // Row groups of 2048 and 452 rows (DuckDB rounds to its vector size), 1024 rows per poll:
    // some snapshots fall inside the first row group.
    for (const stopAfter of [1, 2, 3, 5, 8]) {
      assert.deepEqual(sorted(await readAcrossRestore(source, stopAfter, 1, 2)), sorted(expected), `stop after ${stopAfter} polls`);
    }
  });

  test("a file that is not Parquet is a bad record naming it", async () => {
    const d = dir({ "x.parquet": "not parquet at all" });
    const read = await readAll(FileSource.parquet(join(d, "x.parquet")));
    assert.deepEqual(read.all, []);
    assert.equal(read.bad.length, 1);
    assert.deepEqual(read.bad[0]!.position, { file: join(d, "x.parquet"), rowGroup: 0, row: 0 });
  });
});
