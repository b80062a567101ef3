import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EddyError } from "../core/errors.ts";
import { mapKeyOf, type Key, type MapKey } from "../core/key.ts";
import { silentLogger } from "../core/logger.ts";
import { startControlServer } from "../control/control-server.ts";
import type { QueryLocation } from "../queryable/queryable.ts";
import { locateKey } from "../queryable/state-lookup.ts";
import { startStateServer, type StateServer } from "../queryable/state-server.ts";
import { fakeQueryableJob, mapStateBackend } from "../testing/fake-queryable.ts";
import { createQueryClient, type QueryClient } from "./index.ts";

const TOKEN = "f".repeat(64);
const JOB = "counting";
const KEYS: Key[] = Array.from({ length: 40 }, (_, i) => (i % 3 === 0 ? i : i % 3 === 1 ? `user-${i}` : [`u${i}`, BigInt(i)]));
/** Every key but the multiples of 5 holds a count; values carry a Map and a bigint to check decoding. */
const VALUES = new Map<MapKey, unknown>(KEYS.filter((_, i) => i % 5 !== 0).map((k, i) => [mapKeyOf(k), { count: i, big: BigInt(i) * 10n ** 20n, tags: new Map([["k", i]]) }]));
const ROUTING: QueryLocation = { name: "counts", operatorId: "count", operatorName: "Count", maxParallelism: 128, parallelism: 2, generation: 1, servers: [] };

/** A worker: the state server of `subtask`, answering NOT_OWNER for keys of the other one. */
async function worker(subtask: number): Promise<StateServer & { served: Key[] }> {
  const backend = mapStateBackend({ counts: VALUES }, (key) => locateKey(ROUTING, key).subtask === subtask);
  return Object.assign(await startStateServer({ token: TOKEN, logger: silentLogger, backend }), { served: backend.served });
}

interface Fixture {
  readonly client: QueryClient;
  readonly workers: readonly (StateServer & { served: Key[] })[];
  /** What the job's control API answers as the location of "counts"; set it to move things. */
  table: QueryLocation;
  /** Answers given before `table`, one per lookup. */
  readonly earlier: QueryLocation[];
  lookups: number;
}

async function withJob(body: (f: Fixture) => Promise<void>): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), "eddy-query-client-"));
  const workers = [await worker(0), await worker(1)];
  const f: Fixture = { client: createQueryClient({ home, timeoutMs: 2_000 }), workers, table: { ...ROUTING, servers: workers.map((w) => w.url) }, earlier: [], lookups: 0 };
  const job = fakeQueryableJob({
    id: JOB,
    token: TOKEN,
    states: () => {
      f.lookups++;
      return [f.earlier.shift() ?? f.table];
    },
  });
  const control = await startControlServer(job, { home, logger: silentLogger });
  try {
    await body(f);
  } finally {
    f.client.close();
    await control.close();
    await Promise.all(workers.map((w) => w.close()));
    rmSync(home, { recursive: true, force: true });
  }
}

const expected = (k: Key): unknown => VALUES.get(mapKeyOf(k));

test("get routes each key to the state server owning its key group, decodes values, and answers absent keys undefined", async () => {
  await withJob(async (f) => {
    for (const key of KEYS) assert.deepEqual(await f.client.get(JOB, "counts", key), expected(key), `key ${String(key)}`);
    assert.equal(await f.client.get(JOB, "counts", 0), undefined);
    const [w0, w1] = f.workers;
    assert.ok(w0!.served.length > 0 && w1!.served.length > 0, "both workers served keys");
    assert.ok(w0!.served.every((k) => locateKey(ROUTING, k).subtask === 0));
    assert.ok(w1!.served.every((k) => locateKey(ROUTING, k).subtask === 1));
    assert.equal(f.lookups, 1, "the location is asked once and cached");
  });
});

test("getMany answers in the keys' order across both servers, absent keys as undefined", async () => {
  await withJob(async (f) => {
    const keys = [...KEYS].reverse();
    assert.deepEqual(await f.client.getMany(JOB, "counts", keys), keys.map(expected));
    assert.deepEqual(await f.client.getMany(JOB, "counts", []), []);
    assert.equal(f.workers[0]!.served.length + f.workers[1]!.served.length, keys.length);
  });
});

test("a stale location (the server answers NOT_OWNER) is refreshed once, shared by a batch, and the reads retried", async () => {
  await withJob(async (f) => {
    const [w0, w1] = f.workers;
    // The first answer has the workers swapped (as before a restart); the job then says generation 2.
    f.earlier.push({ ...ROUTING, servers: [w1!.url, w0!.url] });
    f.table = { ...ROUTING, generation: 2, servers: [w0!.url, w1!.url] };
    assert.deepEqual(await f.client.getMany(JOB, "counts", KEYS), KEYS.map(expected));
    assert.equal(f.lookups, 2, "one lookup, one refresh for the whole batch");
    for (const key of KEYS) assert.deepEqual(await f.client.get(JOB, "counts", key), expected(key));
    assert.equal(f.lookups, 2, "the refreshed location stays cached");
  });
});

test("a read that stays stale after one refresh fails with the server's code", async () => {
  await withJob(async (f) => {
    const [w0, w1] = f.workers;
    f.table = { ...f.table, servers: [w1!.url, w0!.url] };
    const key = KEYS.find((k) => locateKey(ROUTING, k).subtask === 0)!;
    await assert.rejects(f.client.get(JOB, "counts", key), (e: unknown) => e instanceof EddyError && e.code === "NOT_OWNER");
    assert.equal(f.lookups, 2);
  });
});

test("a state server that went away makes the client ask for the location again", async () => {
  await withJob(async (f) => {
    const key = KEYS.find((k) => locateKey(ROUTING, k).subtask === 1 && VALUES.has(mapKeyOf(k)))!;
    assert.deepEqual(await f.client.get(JOB, "counts", key), expected(key));
    const replacement = await worker(1);
    try {
      await f.workers[1]!.close();
      f.table = { ...f.table, generation: 2, servers: [f.workers[0]!.url, replacement.url] };
      assert.deepEqual(await f.client.get(JOB, "counts", key), expected(key));
      assert.equal(replacement.served.length, 1);
      assert.equal(f.lookups, 2);
    } finally {
      await replacement.close();
    }
  });
});

test("unknown jobs, unknown states, bad keys and a closed client are distinct errors", async () => {
  await withJob(async (f) => {
    const code = (c: string) => (e: unknown) => e instanceof EddyError && e.code === c;
    await assert.rejects(f.client.get("no-such-job", "counts", "k"), code("UNKNOWN_JOB"));
    await assert.rejects(f.client.get(JOB, "nope", "k"), (e: unknown) => e instanceof EddyError && e.code === "UNKNOWN_STATE" && /it has: counts/.test(e.message));
    await assert.rejects(f.client.get(JOB, "counts", {} as unknown as Key), code("BAD_KEY"));
    await assert.rejects(f.client.get(JOB, "counts", "x".repeat(2000)), code("BAD_KEY"));
    await assert.rejects(f.client.getMany(JOB, "counts", ["ok", null as unknown as Key]), code("BAD_KEY"));
    f.client.close();
    f.client.close();
    await assert.rejects(f.client.get(JOB, "counts", "k"), code("CLIENT_CLOSED"));
  });
});

test("only the latest consistency is offered", () => {
  assert.throws(() => createQueryClient({ consistency: "checkpoint" as "latest" }), (e: unknown) => e instanceof EddyError && e.code === "UNSUPPORTED_CONSISTENCY");
});
