/**
 * Timers in the shared files of incremental checkpoints (issue 29; timers.ts): over random
 * registrations, deletions and firings (event and processing time) in random key groups, a chain
 * of a base and deltas gives, for every key group, exactly the timers a full snapshot of the same
 * moment holds — after every delta, with key groups whose timers all went, key groups a middle
 * delta left out, and at another parallelism (key groups read from two chains), where the timers
 * also fire in the same order as after a restore of full snapshots. A delta holds only the keys
 * whose timers changed. Version 1 chains (timers in the task file) still read; unknown kinds and
 * mixed chains are refused.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteReader, ByteWriter } from "../../core/codec/bytes.ts";
import { ManualClock } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import type { Key } from "../../core/key.ts";
import { InternalTimerService, type TimerSnapshot } from "../../runtime/timer-service.ts";
import { encodeSnapshotFile, SnapshotFile, type SectionSource } from "./container.ts";
import { chainKeyGroupReader, chainTimers, SHARED_BASE_KIND, SHARED_BASE_KIND_1, SHARED_DELTA_KIND, SHARED_DELTA_KIND_1 } from "./keyed-chain.ts";
import { readTimers, SHARED_TIMERS_SECTION, type RestoredTimer } from "./timers.ts";
import { prng } from "../../../../../test/fixtures.ts";

const KEY_GROUPS = 8;
const KEYS = 300;
const kgOf = (k: number): number => k % KEY_GROUPS;

/** A timer service over `range` whose mail runs at once; firings are recorded in `fired`. */
function service(range: { start: number; end: number }, fired: string[] = []): { timers: InternalTimerService; clock: ManualClock } {
  const clock = new ManualClock(0);
  const timers = new InternalTimerService({
    clock,
    keyGroupRange: range,
    onTimer: (domain, timestamp, key, _kg, namespace) => void fired.push(`${domain} ${timestamp} ${String(key)} ${namespace}`),
    postMail: (action) => action(),
  });
  return { timers, clock };
}

/** One random change: register or delete a timer of a random key (both domains, a few namespaces), or fire some. */
function change(s: { timers: InternalTimerService; clock: ManualClock }, keys: readonly number[], random: () => number, watermark: { at: number }): void {
  const r = random();
  const k = keys[Math.floor(random() * keys.length)]!;
  const ns = `w${Math.floor(random() * 3)}`;
  const ts = watermark.at + 1 + Math.floor(random() * 200);
  const pts = s.clock.now() + 1 + Math.floor(random() * 200);
  if (r < 0.4) s.timers.registerEventTimeTimer(k, kgOf(k), ns, ts);
  else if (r < 0.55) s.timers.registerProcessingTimeTimer(k, kgOf(k), ns, pts);
  else if (r < 0.75) s.timers.deleteEventTimeTimer(k, kgOf(k), ns, ts);
  else if (r < 0.8) s.timers.deleteProcessingTimeTimer(k, kgOf(k), ns, pts);
  else if (r < 0.9) s.timers.advanceWatermark((watermark.at += Math.floor(random() * 20)));
  else s.clock.advance(Math.floor(random() * 20));
}

/** The shared file of an incremental timer snapshot (only its `timers` sections), parsed back. */
function sharedFile(snapshot: TimerSnapshot, kind: "base" | "delta", range: { start: number; end: number }, name: string): SnapshotFile {
  const sections = [];
  for (let kg = range.start; kg <= range.end; kg++) {
    const out = new ByteWriter(256);
    const wrote = kind === "base" ? snapshot.hasKeyGroup(kg) && (snapshot.writeKeyGroup(kg, out), true) : snapshot.writeKeyGroupChanges(kg, out);
    if (wrote) sections.push({ name: SHARED_TIMERS_SECTION, keyGroup: kg, bytes: new Uint8Array(out.finish()) });
  }
  return SnapshotFile.parse(encodeSnapshotFile(kind === "base" ? SHARED_BASE_KIND : SHARED_DELTA_KIND, {}, sections), { fileName: name });
}

/** Timers as restore reads them, in a canonical order. */
function decoded(kg: number, input: ByteReader | undefined): string[] {
  const out: RestoredTimer[] = [];
  if (input !== undefined) readTimers(kg, input, out);
  if (input !== undefined) assert.equal(input.remaining, 0);
  return out.map((t) => `${t.domain} ${t.timestamp} ${t.seq} ${String(t.key)} ${t.namespace}`).sort();
}

/** What a full snapshot of this moment holds for `kg`. */
function full(timers: InternalTimerService, kg: number): string[] {
  const snapshot = timers.snapshotTimers(); // not incremental: takes no changes
  if (!snapshot.hasKeyGroup(kg)) return [];
  const out = new ByteWriter(256);
  snapshot.writeKeyGroup(kg, out);
  return decoded(kg, new ByteReader(out.finish()));
}

const everyKey = Array.from({ length: KEYS }, (_, i) => i);

test("a chain of timer deltas restores, after every delta and for every key group, the timers of a full snapshot of the same moment", () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const random = prng(seed);
    const range = { start: 0, end: KEY_GROUPS - 1 };
    const s = service(range);
    const watermark = { at: 0 };
    for (let i = 0; i < 2_000; i++) change(s, everyKey, random, watermark);
    const chain: SnapshotFile[] = [sharedFile(s.timers.snapshotTimers(true), "base", range, "base")];
    let emptied = 0;
    let leftOut = 0;
    for (let d = 1; d <= 8; d++) {
      // Few keys change between two snapshots, in few key groups; one key group loses every timer now and then.
      const keys = everyKey.filter((k) => kgOf(k) === d % KEY_GROUPS || kgOf(k) === (d * 3) % KEY_GROUPS).slice(0, 10 + Math.floor(random() * 30));
      for (let i = 0; i < 60; i++) change(s, keys, random, watermark);
      if (d % 3 === 0) {
        const victim = d % KEY_GROUPS;
        const snapshot = s.timers.snapshotTimers();
        const out = new ByteWriter(256);
        snapshot.writeKeyGroup(victim, out);
        for (const t of decoded(victim, new ByteReader(out.finish()))) {
          const [domain, ts, , key, ns] = t.split(" ");
          if (domain === "event") s.timers.deleteEventTimeTimer(Number(key), victim, ns!, Number(ts));
          else s.timers.deleteProcessingTimeTimer(Number(key), victim, ns!, Number(ts));
        }
      }
      chain.push(sharedFile(s.timers.snapshotTimers(true), "delta", range, `delta-${d}`));
      for (let kg = range.start; kg <= range.end; kg++) {
        const expected = full(s.timers, kg);
        assert.deepEqual(decoded(kg, chainTimers(chain, kg)), expected, `seed ${seed}, delta ${d}, key group ${kg}`);
        let last = -1;
        chain.forEach((f, i) => void (f.section(SHARED_TIMERS_SECTION, kg) !== undefined && (last = i)));
        if (expected.length === 0 && last > 0) emptied++; // a delta says "none now", over timers an earlier file had
        if (expected.length > 0 && last < chain.length - 1 && last >= 0) leftOut++; // a later delta has no section: the earlier one counts
      }
    }
    assert.ok(emptied > 0, `seed ${seed}: a key group whose timers all went`);
    assert.ok(leftOut > 0, `seed ${seed}: a key group a later delta left out`);
  }
});

test("a delta's timers section holds only the keys whose timers changed (registered, deleted or fired), and none when nothing changed", () => {
  const range = { start: 0, end: KEY_GROUPS - 1 };
  const s = service(range);
  for (const k of everyKey) s.timers.registerEventTimeTimer(k, kgOf(k), "w", 1_000 + k);
  const base = sharedFile(s.timers.snapshotTimers(true), "base", range, "base");
  // A duplicate registration changes nothing.
  for (const k of everyKey) s.timers.registerEventTimeTimer(k, kgOf(k), "w", 1_000 + k);
  const none = sharedFile(s.timers.snapshotTimers(true), "delta", range, "none");
  assert.equal(none.sections.length, 0);
  s.timers.registerEventTimeTimer(8, kgOf(8), "w", 5_000); // key 8: a second timer
  s.timers.deleteEventTimeTimer(17, kgOf(17), "w", 1_017); // key 17: none left
  s.timers.advanceWatermark(1_002); // keys 0, 1, 2 fire
  const delta = sharedFile(s.timers.snapshotTimers(true), "delta", range, "delta");
  assert.deepEqual(delta.sections.map((x) => x.keyGroup).sort(), [0, 1, 2]);
  const baseBytes = base.sections.reduce((n, x) => n + x.length, 0);
  const deltaBytes = delta.sections.reduce((n, x) => n + x.length, 0);
  assert.ok(deltaBytes * 20 < baseBytes, `a delta of 5 keys is ${deltaBytes} B, the base of ${KEYS} keys ${baseBytes} B`);
  for (let kg = range.start; kg <= range.end; kg++) assert.deepEqual(decoded(kg, chainTimers([base, none, delta], kg)), full(s.timers, kg), `key group ${kg}`);
});

test("timers registered and gone between two snapshots, and deletes of timers that never were, put nothing in the delta", () => {
  const range = { start: 0, end: KEY_GROUPS - 1 };
  const s = service(range);
  for (const k of everyKey) s.timers.registerEventTimeTimer(k, kgOf(k), "w", 1_000 + k);
  const base = sharedFile(s.timers.snapshotTimers(true), "base", range, "base");
  s.timers.registerEventTimeTimer(3, kgOf(3), "w", 500); // registered, then fired below
  s.timers.registerProcessingTimeTimer(4, kgOf(4), "p", 50); // registered, then deleted
  s.timers.deleteProcessingTimeTimer(4, kgOf(4), "p", 50);
  s.timers.deleteEventTimeTimer(5, kgOf(5), "w", 9_999); // no such timer
  s.timers.advanceWatermark(999); // fires key 3's new timer only
  const none = sharedFile(s.timers.snapshotTimers(true), "delta", range, "none");
  assert.equal(none.sections.length, 0);
  // A timer registered before the last snapshot and fired after it does count, as does one
  // registered since and still pending.
  s.timers.registerEventTimeTimer(6, kgOf(6), "w", 7_000);
  s.timers.advanceWatermark(1_000); // key 0's timer, held by the base
  const delta = sharedFile(s.timers.snapshotTimers(true), "delta", range, "delta");
  assert.deepEqual(delta.sections.map((x) => x.keyGroup).sort(), [kgOf(0), kgOf(6)].sort());
  for (let kg = range.start; kg <= range.end; kg++) assert.deepEqual(decoded(kg, chainTimers([base, none, delta], kg)), full(s.timers, kg), `key group ${kg}`);
});

test("at another parallelism, key groups come from two chains, and the restored timers fire in the order a restore of full snapshots gives", () => {
  const random = prng(7);
  const halves = [
    { start: 0, end: 3 },
    { start: 4, end: 7 },
  ];
  const chains: SnapshotFile[][] = [];
  const fulls: Map<number, Uint8Array>[] = [];
  for (const range of halves) {
    const s = service(range);
    const keys = everyKey.filter((k) => kgOf(k) >= range.start && kgOf(k) <= range.end);
    const watermark = { at: 0 };
    for (let i = 0; i < 1_000; i++) change(s, keys, random, watermark);
    const chain = [sharedFile(s.timers.snapshotTimers(true), "base", range, `base-${range.start}`)];
    for (let d = 1; d <= 4; d++) {
      for (let i = 0; i < 50; i++) change(s, keys.slice(0, 20), random, watermark);
      chain.push(sharedFile(s.timers.snapshotTimers(true), "delta", range, `delta-${range.start}-${d}`));
    }
    chains.push(chain);
    const snapshot = s.timers.snapshotTimers();
    const groups = new Map<number, Uint8Array>();
    for (let kg = range.start; kg <= range.end; kg++) {
      const out = new ByteWriter(256);
      snapshot.writeKeyGroup(kg, out);
      groups.set(kg, new Uint8Array(out.finish()));
    }
    fulls.push(groups);
  }
  // The new subtask owns key groups 2-5: two of each old subtask.
  const range = { start: 2, end: 5 };
  const restore = (read: (kg: number) => ByteReader | undefined): string[] => {
    const fired: string[] = [];
    const s = service(range, fired);
    const timers: RestoredTimer[] = [];
    for (let kg = range.start; kg <= range.end; kg++) {
      const input = read(kg);
      if (input !== undefined) readTimers(kg, input, timers);
    }
    s.timers.restoreTimers(timers);
    s.timers.advanceWatermark(Number.MAX_SAFE_INTEGER);
    s.clock.advance(1_000_000);
    return fired;
  };
  const old = (kg: number): number => (kg <= 3 ? 0 : 1);
  const expected = restore((kg) => new ByteReader(fulls[old(kg)]!.get(kg)!.slice().buffer));
  assert.ok(expected.length > 50, `${expected.length} timers fire`);
  assert.deepEqual(restore((kg) => chainTimers(chains[old(kg)]!, kg)), expected);
});

test("a version 1 chain (timers in the task file) still reads its timers from there; a mixed chain and an unknown kind are refused", () => {
  const empty = (kind: string, name: string): SnapshotFile => SnapshotFile.parse(encodeSnapshotFile(kind, {}, []), { fileName: name });
  const s = service({ start: 0, end: 0 });
  s.timers.registerEventTimeTimer(0 as Key, 0, "w", 42);
  const out = new ByteWriter(64);
  s.timers.snapshotTimers().writeKeyGroup(0, out);
  const timerBytes = new Uint8Array(out.finish());
  const v1 = [empty(SHARED_BASE_KIND_1, "v1-base"), empty(SHARED_DELTA_KIND_1, "v1-delta")];
  const input = chainKeyGroupReader(v1, 0, () => undefined, timerBytes);
  assert.equal(input.varuint(), 0, "no state");
  assert.deepEqual(decoded(0, input), ["event 42 0 0 w"]);
  // Version 2: the task file's bytes are not the timers' source any more.
  const v2: SectionSource[] = [empty(SHARED_BASE_KIND, "v2-base")];
  const input2 = chainKeyGroupReader(v2, 0, () => undefined, timerBytes);
  assert.equal(input2.varuint(), 0);
  assert.deepEqual(decoded(0, input2), []);
  assert.throws(
    () => chainKeyGroupReader([empty(SHARED_BASE_KIND_1, "old-base"), empty(SHARED_DELTA_KIND, "new-delta")], 0, () => undefined, undefined),
    (e: unknown) => e instanceof EddyError && e.code === "CHECKPOINT_CORRUPT" && /new-delta/.test(e.message),
  );
  assert.throws(
    () => chainTimers([empty("keyed-base-3", "future-base")], 0),
    (e: unknown) => e instanceof EddyError && e.code === "CHECKPOINT_UNSUPPORTED" && /future-base/.test(e.message) && /keyed-base-3/.test(e.message),
  );
});
