/** Driving a source's enumerator and reader by hand in tests (test/nats-connector.test.ts, test/nats-acks.test.ts). */
import assert from "node:assert/strict";
import type { Source, SourceReader } from "eddy";
import { readerOutputOf, sourceReaderContext } from "eddy/testing";

/** The splits the source's enumerator hands to reader 0 of 1. */
export function splitsOf<S>(source: Source<unknown, S>): S[] {
  const splits: S[] = [];
  const enumerator = source.createEnumerator({ parallelism: 1, assignSplits: (_i, s) => void splits.push(...s), signalNoMoreSplits() {}, failJob: (e) => assert.fail(String(e)) });
  enumerator.addReader(0);
  return splits;
}

/** Polls `reader` until it ends (or `limit` records were emitted); returns what it emitted. */
export async function drive<T, S>(reader: SourceReader<T, S>, limit = Infinity): Promise<{ values: T[]; timestamps: (number | undefined)[] }> {
  const values: T[] = [];
  const timestamps: (number | undefined)[] = [];
  const output = readerOutputOf<T>({
    collect: (v, ts) => void (values.push(v), timestamps.push(ts)),
    reportBadRecord: (bad) => assert.fail(`bad record ${JSON.stringify(bad.position)}`),
  });
  const deadline = Date.now() + 30_000;
  while (values.length < limit) {
    const status = reader.pollNext(output);
    if (status === "end") break;
    if (status === "nothing") await reader.isAvailable();
    assert.ok(Date.now() < deadline, `the reader did not end within 30 s (${values.length} records)`);
  }
  return { values, timestamps };
}

export function openReader<T, S>(source: Source<T, S>, splits: readonly S[], context = sourceReaderContext({ subtaskIndex: 0, parallelism: 1 })): SourceReader<T, S> {
  const reader = source.createReader(context);
  reader.start?.();
  reader.addSplits(splits);
  reader.notifyNoMoreSplits();
  return reader;
}
