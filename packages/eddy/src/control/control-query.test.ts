import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EddyError } from "../core/errors.ts";
import { mapKeyOf, type Key } from "../core/key.ts";
import { silentLogger } from "../core/logger.ts";
import { startControlServer, type ControlServer } from "./control-server.ts";
import { fakeQueryableJob, mapStateBackend } from "../testing/fake-queryable.ts";
import type { QueryLocation } from "../queryable/queryable.ts";
import { locateKey } from "../queryable/state-lookup.ts";
import { startStateServer, type StateServer } from "../queryable/state-server.ts";

const TOKEN = "0123456789abcdef".repeat(4);

/** A location of state "counts" at parallelism 2 whose subtask 0 is `server` and subtask 1 has none yet. */
function location(server: string): QueryLocation {
  return { name: "counts", operatorId: "count-uid", operatorName: "Count", maxParallelism: 128, parallelism: 2, generation: 3, servers: [server, undefined] };
}

/** The first candidate key owned by `subtask` under `loc`. */
function keyOn(loc: QueryLocation, subtask: number, candidates: readonly Key[]): Key {
  const key = candidates.find((k) => locateKey(loc, k).subtask === subtask);
  assert.ok(key !== undefined, `no candidate on subtask ${subtask}`);
  return key;
}

function queryableJob(states: () => QueryLocation[], token = TOKEN) {
  return fakeQueryableJob({ id: "q-job", token, states });
}

async function withQueryableJob(body: (ctx: { control: ControlServer; state: StateServer; loc: QueryLocation; call: (path: string) => Promise<{ status: number; body: any }> }) => Promise<void>): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), "eddy-control-query-"));
  const candidates: Key[] = ["alpha", "beta", "gamma", "delta", "epsilon", 1, 2, 3, 4, 5];
  // The backend needs the location, the location the server's URL: route with a placeholder URL.
  const routing = location("http://placeholder");
  const values = new Map<string | number | bigint, unknown>([[mapKeyOf(keyOn(routing, 0, candidates)), 5], [mapKeyOf(keyOn(routing, 0, [1, 2, 3, 4, 5])), { n: 7n }]]);
  const state = await startStateServer({ token: TOKEN, backend: mapStateBackend({ counts: values }, (key) => locateKey(routing, key).subtask === 0), logger: silentLogger });
  const loc = location(state.url);
  const control = await startControlServer(queryableJob(() => [loc]), { home, logger: silentLogger });
  const call = async (path: string) => {
    const res = await fetch(control.url + path, { headers: { authorization: `Bearer ${readFileSync(control.tokenFile, "utf8")}` } });
    return { status: res.status, body: (await res.json()) as any };
  };
  try {
    await body({ control, state, loc, call });
  } finally {
    await control.close();
    await state.close();
    rmSync(home, { recursive: true, force: true });
  }
}

test("a queryable job's control API uses the job's token and lists where its queryable states live", async () => {
  await withQueryableJob(async ({ control, loc, call }) => {
    assert.equal(readFileSync(control.tokenFile, "utf8"), TOKEN);
    assert.deepEqual(await call("/v1/job/state"), { status: 200, body: { states: [{ ...loc, servers: [loc.servers[0], null] }] } });
    assert.deepEqual((await call("/v1/job/state/counts/location")).body.generation, 3);
    const unknown = await call("/v1/job/state/nope/location");
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, "UNKNOWN_STATE");
    assert.match(unknown.body.error.message, /'nope'.*it has: counts/);
  });
});

test("GET /v1/jobs/<id>/state/<name>/<key> reads from the state server owning the key's key group", async () => {
  await withQueryableJob(async ({ loc, call }) => {
    const stringKey = keyOn(loc, 0, ["alpha", "beta", "gamma", "delta", "epsilon"]) as string;
    const numberKey = keyOn(loc, 0, [1, 2, 3, 4, 5]) as number;
    // A bare segment is a string; a JSON one is JSON ("\"x\"" is the string too).
    assert.deepEqual(await call(`/v1/jobs/q-job/state/counts/${stringKey}`), { status: 200, body: { found: true, value: 5 } });
    assert.deepEqual(await call(`/v1/jobs/q-job/state/counts/${encodeURIComponent(JSON.stringify(stringKey))}`), { status: 200, body: { found: true, value: 5 } });
    assert.deepEqual(await call(`/v1/jobs/q-job/state/counts/${numberKey}`), { status: 200, body: { found: true, value: { n: { $bigint: "7" } } } });
    assert.deepEqual(await call(`/v1/jobs/q-job/state/counts/${keyOn(loc, 0, ["k1", "k2", "k3", "k4", "k5", "k6"])}`), { status: 200, body: { found: false } });
  });
});

test("the read endpoint answers UNKNOWN_JOB, UNKNOWN_STATE, BAD_KEY and NOT_READY clearly", async () => {
  await withQueryableJob(async ({ loc, call }) => {
    const expect = async (path: string, status: number, code: string) => {
      const res = await call(path);
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.equal(res.body.error.code, code);
      return res.body.error.message as string;
    };
    assert.match(await expect("/v1/jobs/other-job/state/counts/alpha", 404, "UNKNOWN_JOB"), /'q-job'.*'other-job'/);
    await expect("/v1/jobs/q-job/state/nope/alpha", 404, "UNKNOWN_STATE");
    assert.match(await expect("/v1/jobs/q-job/state/counts/true", 400, "BAD_KEY"), /quote it/);
    await expect(`/v1/jobs/q-job/state/counts/${"k".repeat(2000)}`, 400, "BAD_KEY");
    await expect("/v1/jobs/q-job/state/counts/%E0%A4%A", 400, "BAD_REQUEST");
    const onSubtask1 = keyOn(loc, 1, ["alpha", "beta", "gamma", "delta", "epsilon"]) as string;
    assert.match(await expect(`/v1/jobs/q-job/state/counts/${onSubtask1}`, 503, "NOT_READY"), /subtask 1 of 'Count'/);
  });
});

test("a state server's error passes through with its status; a server that is gone is 502", async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-control-query-"));
  const routing = location("http://placeholder");
  const state = await startStateServer({ token: TOKEN, backend: { read: () => { throw new EddyError("NOT_OWNER", "moved away"); } }, logger: silentLogger });
  let servers: (string | undefined)[] = [state.url, state.url];
  const control = await startControlServer(queryableJob(() => [{ ...routing, servers }]), { home, logger: silentLogger });
  const call = async (path: string) => {
    const res = await fetch(control.url + path, { headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, body: (await res.json()) as any };
  };
  try {
    assert.deepEqual(await call("/v1/jobs/q-job/state/counts/alpha"), { status: 409, body: { error: { code: "NOT_OWNER", message: "moved away" } } });
    await state.close();
    const gone = await call("/v1/jobs/q-job/state/counts/alpha");
    assert.equal(gone.status, 502);
    assert.equal(gone.body.error.code, "STATE_SERVER_UNREACHABLE");
    servers = ["ftp://elsewhere", "ftp://elsewhere"];
    assert.equal((await call("/v1/jobs/q-job/state/counts/alpha")).status, 502);
  } finally {
    await control.close();
    rmSync(home, { recursive: true, force: true });
  }
});

test("a queryable job with a weak token is refused", async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-control-query-"));
  try {
    await assert.rejects(startControlServer(queryableJob(() => [], "short"), { home, logger: silentLogger }), (e: unknown) => e instanceof EddyError && /32 to 1024/.test(e.message));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
