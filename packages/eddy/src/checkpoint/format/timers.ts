/**
 * The timers of a keyed operator subtask as they are persisted (the timer service is
 * runtime/timer-service.ts), per key group:
 *
 *   timers := varuint nEvent, timer × nEvent, varuint nProcessing, timer × nProcessing
 *   timer  := value key, value namespace, f64 timestamp, f64 seq        (value: value-codec.ts)
 *
 * `seq` is the registration order in the run that wrote it; a restore registers timers in
 * (timestamp, seq) order, so timers of equal time fire in the order they would have.
 *
 * Where: a full snapshot (and a savepoint) writes them in the task file, after the key group's
 * state part. An incremental checkpoint of version 2 (keyed-chain.ts) writes them in its shared
 * file, section `timers` per key group: a base has every key group that has timers, in the layout
 * above; a delta has the key groups where a key's timers changed since the previous snapshot of
 * the chain (a registration, a deletion or a firing), with only those keys:
 *
 *   delta  := varuint nChanged, keys (nChanged keys in the default codec, one batch), timers
 *
 * where `timers` holds every pending timer of the changed keys (a changed key with none: its
 * timers all went). Restore (`chainKeyGroupTimers`): a key's timers are those of the last file of
 * the chain that lists the key (a delta that changed it), else the base's.
 */
import { ByteReader, ByteWriter } from "../../core/codec/bytes.ts";
import { defaultCodec } from "../../core/codec/default-codec.ts";
import { decodeValue, encodeValue } from "../../core/codec/value-codec.ts";
import { mapKeyOf, type Key, type MapKey } from "../../core/key.ts";
import type { SectionSource } from "./container.ts";

export type TimerDomain = "event" | "processing";
export type TimerNamespace = string | number;

/** What the layout holds of one timer (runtime/timer-queue.ts's Timer is one, structurally). */
export interface PersistedTimer {
  readonly key: Key;
  readonly namespace: TimerNamespace;
  readonly timestamp: number;
  readonly seq: number;
}

/** A restored timer, as `readTimers` reports it. */
export interface RestoredTimer extends PersistedTimer {
  readonly domain: TimerDomain;
  readonly keyGroup: number;
}

/** The section of a key group's timers in a shared file of version 2 (keyed-chain.ts). */
export const SHARED_TIMERS_SECTION = "timers";

/** Writes one domain's timers (`timers` above is this for event time, then for processing time). */
export function writeTimers(timers: readonly PersistedTimer[], out: ByteWriter): void {
  out.varuint(timers.length);
  for (const t of timers) {
    encodeValue(t.key, out);
    encodeValue(t.namespace, out);
    out.f64(t.timestamp);
    out.f64(t.seq);
  }
}

/** Reads one key group's `timers` into `into`. */
export function readTimers(keyGroup: number, input: ByteReader, into: RestoredTimer[]): void {
  for (const domain of ["event", "processing"] as const) {
    const n = input.varuint();
    for (let i = 0; i < n; i++) {
      const key = decodeValue(input) as Key;
      const namespace = decodeValue(input) as TimerNamespace;
      const timestamp = input.f64();
      const seq = input.f64();
      into.push({ domain, timestamp, seq, key, keyGroup, namespace });
    }
  }
}

/** Writes the changed keys of a delta's `timers` section; the timers of those keys follow (`writeTimers` twice). */
export function writeTimerDeltaHeader(keys: readonly Key[], out: ByteWriter): void {
  out.varuint(keys.length);
  defaultCodec().encode(keys as Key[], out);
}

function readTimerDeltaHeader(input: ByteReader): Key[] {
  const count = input.varuint();
  return defaultCodec().decode(input, count) as Key[];
}

/** Where one file's timers lie in its section: byte ranges per domain, with each timer's key. */
interface TimerRanges {
  readonly bytes: Uint8Array;
  /** Per domain: [start, end) offsets into `bytes`, and the timer's key. */
  readonly event: { start: number; end: number; key: MapKey }[];
  readonly processing: { start: number; end: number; key: MapKey }[];
}

/**
 * The timers of `keyGroup` as a version 2 chain `files` (a base, then deltas; kinds checked by
 * the caller) holds them, in the `timers` layout; undefined when no file of the chain has a
 * `timers` section for the group (no timers). Each timer's bytes are copied, never re-encoded;
 * when the last file with a section for the group is the base, its section is returned as is.
 * `isDelta(i)` says whether `files[i]` is a delta. Throws what the bytes throw (the caller names
 * the file).
 */
export function chainKeyGroupTimers(files: readonly SectionSource[], keyGroup: number, isDelta: (index: number) => boolean, onFault: (file: SectionSource, e: unknown) => Error): ByteReader | undefined {
  const sections = files.map((file) => file.section(SHARED_TIMERS_SECTION, keyGroup));
  let last = -1;
  for (let i = 0; i < sections.length; i++) if (sections[i] !== undefined) last = i;
  if (last < 0) return undefined;
  if (!isDelta(last)) return readerOf(sections[last]!);
  // The last delta that changed each key: that key's timers are that file's.
  const lastChange = new Map<MapKey, number>();
  const parsed: (TimerRanges | undefined)[] = sections.map((bytes, i) => {
    if (bytes === undefined) return undefined;
    const input = readerOf(bytes);
    try {
      if (isDelta(i)) for (const key of readTimerDeltaHeader(input)) lastChange.set(mapKeyOf(key), i);
      const ranges: TimerRanges = { bytes, event: [], processing: [] };
      for (const list of [ranges.event, ranges.processing]) {
        const n = input.varuint();
        input.checkCount(n, 18, "timers"); // two values of at least one byte, two f64
        for (let t = 0; t < n; t++) {
          const start = input.offset;
          const key = mapKeyOf(decodeValue(input) as Key);
          decodeValue(input);
          input.skip(16);
          list.push({ start, end: input.offset, key });
        }
      }
      if (input.remaining !== 0) throw new Error(`${input.remaining} bytes follow the timers`);
      return ranges;
    } catch (e) {
      throw onFault(files[i]!, e);
    }
  });
  const out = new ByteWriter(4096);
  for (const domain of ["event", "processing"] as const) {
    const kept: { bytes: Uint8Array; start: number; end: number }[] = [];
    parsed.forEach((ranges, i) => {
      if (ranges === undefined) return;
      const own = isDelta(i) ? i : undefined;
      for (const r of ranges[domain]) if (lastChange.get(r.key) === own) kept.push({ bytes: ranges.bytes, start: r.start, end: r.end });
    });
    out.varuint(kept.length);
    for (const { bytes, start, end } of kept) out.bytes(bytes.subarray(start, end));
  }
  return new ByteReader(out.finish());
}

function readerOf(bytes: Uint8Array): ByteReader {
  return new ByteReader(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}
