/**
 * Oracle test: random operation sequences on random keys and namespaces, run against the heap
 * backend and against a from-scratch model (plain Maps of (key, namespace) → value with expiry),
 * with and without TTL; and the same against the disk backend with a cache of 2 keys, so nearly
 * every key switch evicts to the store and loads back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { ManualClock } from "../core/clock.ts";
import { mapKeyOf } from "../core/key.ts";
import type { Key } from "../core/key.ts";
import {
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "./descriptors.ts";
import type { StateDescriptorOptions } from "./descriptors.ts";
import { DiskKeyedStateBackend } from "./disk-keyed-state-backend.ts";
import { HeapKeyedStateBackend, VOID_NAMESPACE } from "./heap-keyed-state-backend.ts";
import type { Namespace } from "./heap-keyed-state-backend.ts";

const RANGE = { start: 4, end: 11 };
// 1, 4097 and -4095 share a slot of the tables' entry cache for int keys (state-table.ts).
const KEYS: Key[] = ["a", "b", 1, 2, 4097, -4095, ["a", 1], [1, "a"]];
const NAMESPACES: Namespace[] = [VOID_NAMESPACE, "w1", 7];

function kgOf(key: Key): number {
  const s = String(mapKeyOf(key));
  let h = 7;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
  return RANGE.start + (Math.abs(h) % (RANGE.end - RANGE.start + 1));
}

type Op =
  | { t: "key"; k: number }
  | { t: "ns"; n: number }
  | { t: "advance"; ms: number }
  | { t: "vset"; v: number }
  | { t: "vclear" }
  | { t: "vget" }
  | { t: "ladd"; v: number }
  | { t: "laddAll"; vs: number[] }
  | { t: "lupdate"; vs: number[] }
  | { t: "lclear" }
  | { t: "lget" }
  | { t: "mput"; k: string; v: number }
  | { t: "mremove"; k: string }
  | { t: "mget"; k: string }
  | { t: "mcontains"; k: string }
  | { t: "mentries" }
  | { t: "misEmpty" }
  | { t: "mclear" }
  | { t: "radd"; v: number }
  | { t: "rget" }
  | { t: "rclear" }
  | { t: "check" };

const small = fc.integer({ min: -5, max: 5 });
const mk = fc.constantFrom("x", "y", "z");
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant("key" as const), k: fc.nat({ max: KEYS.length - 1 }) }),
  fc.record({ t: fc.constant("ns" as const), n: fc.nat({ max: NAMESPACES.length - 1 }) }),
  // Multiples of 5 against TTLs of 10..30 hit "expires exactly now" often.
  fc.record({ t: fc.constant("advance" as const), ms: fc.constantFrom(0, 5, 5, 10, 20) }),
  fc.record({ t: fc.constant("vset" as const), v: small }),
  fc.constant({ t: "vclear" as const }),
  fc.constant({ t: "vget" as const }),
  fc.record({ t: fc.constant("ladd" as const), v: small }),
  fc.record({ t: fc.constant("laddAll" as const), vs: fc.array(small, { maxLength: 3 }) }),
  fc.record({ t: fc.constant("lupdate" as const), vs: fc.array(small, { maxLength: 3 }) }),
  fc.constant({ t: "lclear" as const }),
  fc.constant({ t: "lget" as const }),
  fc.record({ t: fc.constant("mput" as const), k: mk, v: small }),
  fc.record({ t: fc.constant("mremove" as const), k: mk }),
  fc.record({ t: fc.constant("mget" as const), k: mk }),
  fc.record({ t: fc.constant("mcontains" as const), k: mk }),
  fc.constant({ t: "mentries" as const }),
  fc.constant({ t: "misEmpty" as const }),
  fc.constant({ t: "mclear" as const }),
  fc.record({ t: fc.constant("radd" as const), v: small }),
  fc.constant({ t: "rget" as const }),
  fc.constant({ t: "rclear" as const }),
  fc.constant({ t: "check" as const }),
);

/** A stored value or element with its expiry (Infinity without TTL). */
interface Timed<T> {
  v: T;
  exp: number;
}

/** The reference: one plain Map per state, from "(key)|(namespace)" to the stored data. */
class Model {
  readonly value = new Map<string, Timed<number>>();
  readonly list = new Map<string, Timed<number>[]>();
  readonly map = new Map<string, Map<string, Timed<number>>>();
  readonly reducing = new Map<string, Timed<number>>();
  constructor(
    readonly ttlMs: number | undefined,
    readonly onRead: boolean,
  ) {}

  exp(now: number): number {
    return this.ttlMs === undefined ? Number.POSITIVE_INFINITY : now + this.ttlMs;
  }

  /** Reads a single value, dropping it when expired and refreshing it when configured. */
  readOne(store: Map<string, Timed<number>>, id: string, now: number, refresh: boolean): number | undefined {
    const cell = store.get(id);
    if (cell === undefined) return undefined;
    if (cell.exp <= now) {
      store.delete(id);
      return undefined;
    }
    if (refresh && this.onRead) cell.exp = this.exp(now);
    return cell.v;
  }

  liveList(id: string, now: number): Timed<number>[] {
    const live = (this.list.get(id) ?? []).filter((e) => e.exp > now);
    if (live.length === 0) this.list.delete(id);
    else this.list.set(id, live);
    return live;
  }

  liveMap(id: string, now: number): Map<string, Timed<number>> {
    const m = this.map.get(id) ?? new Map<string, Timed<number>>();
    for (const [k, e] of m) if (e.exp <= now) m.delete(k);
    if (m.size === 0) this.map.delete(id);
    return m;
  }
}

const idOf = (key: Key, ns: Namespace): string => `${String(mapKeyOf(key))}|${typeof ns}:${ns}`;

/** Makes the backend under test (the heap backend, or the disk backend: disk-state-model.test.ts). */
type MakeBackend = (options: { keyGroupRange: { start: number; end: number }; clock: ManualClock }) => HeapKeyedStateBackend;

function run(ttlMs: number | undefined, onRead: boolean, ops: Op[], make: MakeBackend = (o) => new HeapKeyedStateBackend(o)): void {
  const clock = new ManualClock(0);
  const b = make({ keyGroupRange: RANGE, clock });
  const opts: StateDescriptorOptions =
    ttlMs === undefined ? {} : { ttl: { ttlMs, updateType: onRead ? "onReadAndWrite" : "onCreateAndWrite" } };
  const vs = b.getState(new ValueStateDescriptor<number>("value", opts));
  const ls = b.getListState(new ListStateDescriptor<number>("list", opts));
  const ms = b.getMapState(new MapStateDescriptor<string, number>("map", opts));
  const rs = b.getReducingState(new ReducingStateDescriptor<number>("reducing", (x, y) => x + y, opts));
  const handles = [vs, ls, ms, rs];
  const model = new Model(ttlMs, onRead);
  let key: Key = KEYS[0]!;
  let ns: Namespace = VOID_NAMESPACE;
  b.setCurrentKey(key, kgOf(key));

  for (const op of ops) {
    const now = clock.now();
    const id = idOf(key, ns);
    switch (op.t) {
      case "key":
        key = KEYS[op.k]!;
        b.setCurrentKey(key, kgOf(key));
        break;
      case "ns":
        ns = NAMESPACES[op.n]!;
        for (const h of handles) h.setCurrentNamespace(ns);
        break;
      case "advance":
        clock.advance(op.ms);
        break;
      case "vset":
        vs.update(op.v);
        model.value.set(id, { v: op.v, exp: model.exp(now) });
        break;
      case "vclear":
        vs.clear();
        model.value.delete(id);
        break;
      case "vget":
        assert.equal(vs.value(), model.readOne(model.value, id, now, true));
        break;
      case "ladd":
      case "laddAll": {
        const added = op.t === "ladd" ? [op.v] : op.vs;
        if (op.t === "ladd") ls.add(op.v);
        else ls.addAll(op.vs);
        const live = model.liveList(id, now);
        if (added.length > 0) model.list.set(id, [...live, ...added.map((v) => ({ v, exp: model.exp(now) }))]);
        break;
      }
      case "lupdate":
        ls.update(op.vs);
        if (op.vs.length === 0) model.list.delete(id);
        else model.list.set(id, op.vs.map((v) => ({ v, exp: model.exp(now) })));
        break;
      case "lclear":
        ls.clear();
        model.list.delete(id);
        break;
      case "lget": {
        const live = model.liveList(id, now);
        if (onRead) for (const e of live) e.exp = model.exp(now);
        assert.deepEqual(ls.get(), live.map((e) => e.v));
        break;
      }
      case "mput": {
        ms.put(op.k, op.v);
        const m = model.liveMap(id, now);
        m.set(op.k, { v: op.v, exp: model.exp(now) });
        model.map.set(id, m);
        break;
      }
      case "mremove": {
        ms.remove(op.k);
        const m = model.liveMap(id, now);
        m.delete(op.k);
        if (m.size === 0) model.map.delete(id);
        break;
      }
      case "mget":
      case "mcontains": {
        const e = model.liveMap(id, now).get(op.k);
        if (e !== undefined && onRead) e.exp = model.exp(now);
        if (op.t === "mget") assert.equal(ms.get(op.k), e?.v);
        else assert.equal(ms.contains(op.k), e !== undefined);
        break;
      }
      case "mentries": {
        const m = model.liveMap(id, now);
        if (onRead) for (const e of m.values()) e.exp = model.exp(now);
        assert.deepEqual([...ms.entries()], [...m].map(([k, e]) => [k, e.v]));
        break;
      }
      case "misEmpty":
        assert.equal(ms.isEmpty(), model.liveMap(id, now).size === 0);
        break;
      case "mclear":
        ms.clear();
        model.map.delete(id);
        break;
      case "radd": {
        rs.add(op.v);
        const prev = model.readOne(model.reducing, id, now, false);
        model.reducing.set(id, { v: prev === undefined ? op.v : prev + op.v, exp: model.exp(now) });
        break;
      }
      case "rget":
        assert.equal(rs.get(), model.readOne(model.reducing, id, now, true));
        break;
      case "rclear":
        rs.clear();
        model.reducing.delete(id);
        break;
      case "check":
        checkSnapshot(b, model, now);
        break;
    }
  }
  checkSnapshot(b, model, clock.now());
  (b as { dispose?(): void }).dispose?.();
}

/** entries() of every key group, and numKeys without TTL, agree with the model's visible data. */
function checkSnapshot(b: HeapKeyedStateBackend, model: Model, now: number): void {
  const visible = {
    value: new Map([...model.value].filter(([, e]) => e.exp > now).map(([id, e]) => [id, e.v])),
    reducing: new Map([...model.reducing].filter(([, e]) => e.exp > now).map(([id, e]) => [id, e.v])),
    list: new Map(
      [...model.list]
        .map(([id, l]) => [id, l.filter((e) => e.exp > now).map((e) => e.v)] as const)
        .filter(([, l]) => l.length > 0),
    ),
    map: new Map(
      [...model.map]
        .map(([id, m]) => [id, [...m].filter(([, e]) => e.exp > now).map(([k, e]) => [k, e.v])] as const)
        .filter(([, m]) => m.length > 0),
    ),
  };
  for (const name of ["value", "reducing", "list", "map"] as const) {
    const got = new Map<string, unknown>();
    for (let kg = RANGE.start; kg <= RANGE.end; kg++) {
      for (const e of b.entries(name, kg)) {
        assert.equal(kgOf(e.key), kg, "an entry is stored in its key's group");
        got.set(idOf(e.key, e.namespace), e.value instanceof Map ? [...e.value] : e.value);
      }
    }
    assert.deepEqual(got, visible[name], `entries of '${name}'`);
    if (model.ttlMs === undefined) {
      const keys = new Set([...visible[name].keys()].map((id) => id.slice(0, id.lastIndexOf("|"))));
      assert.equal(b.numKeys(name), keys.size, `numKeys of '${name}'`);
    }
  }
}

test("random operations agree with a reference model (no TTL)", () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 150, size: "max" }), (ops) => run(undefined, false, ops)),
    { numRuns: 200 },
  );
});

test("random operations agree with a reference model (TTL, both update types)", () => {
  fc.assert(
    fc.property(fc.constantFrom(10, 15, 20), fc.boolean(), fc.array(opArb, { maxLength: 150, size: "max" }), (ttlMs, onRead, ops) =>
      run(ttlMs, onRead, ops),
    ),
    { numRuns: 400 },
  );
});

const diskRoot = mkdtempSync(join(tmpdir(), "eddy-disk-model-"));
after(() => rmSync(diskRoot, { recursive: true, force: true }));
let diskRuns = 0;
const disk: MakeBackend = (o) => new DiskKeyedStateBackend({ ...o, storeDir: join(diskRoot, String(diskRuns++)), cacheSize: 2 });

test("disk backend (cache of 2 keys): random operations agree with the same reference model (no TTL)", () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 150, size: "max" }), (ops) => run(undefined, false, ops, disk)),
    { numRuns: 100 },
  );
});

test("disk backend (cache of 2 keys): random operations agree with the same reference model (TTL, both update types)", () => {
  fc.assert(
    fc.property(fc.constantFrom(10, 15, 20), fc.boolean(), fc.array(opArb, { maxLength: 150, size: "max" }), (ttlMs, onRead, ops) =>
      run(ttlMs, onRead, ops, disk),
    ),
    { numRuns: 200 },
  );
});
