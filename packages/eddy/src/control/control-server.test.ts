import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EddyError } from "../core/errors.ts";
import { silentLogger } from "../core/logger.ts";
import type { ControlledJob, JobStatus, SavepointResult, StopOptions } from "../coordinator/control.ts";
import { connectJob, listJobs } from "./control-client.ts";
import { REGISTRY_VERSION } from "./control-registry.ts";
import { MAX_BODY_BYTES, MAX_IN_FLIGHT, startControlServer, type ControlServer } from "./control-server.ts";
import { CONTROL_API_BOUNDS, HEADERS_TIMEOUT_MS } from "../http/bounded-server.ts";
import { assertAtDeadline, openProbe, testEndpointBounds } from "../testing/endpoint-bounds-suite.ts";

const SAVEPOINT: SavepointResult = { path: "/savepoints/sp-7", checkpointId: 7, bytes: 1234 };

/** A ControlledJob that records its calls; `savepoint` waits for `gate` when one is set. */
function fakeJob(id = "fake-job") {
  const calls = { savepoints: 0, stops: [] as StopOptions[], cancels: 0 };
  let status: JobStatus = "running";
  let gate: Promise<void> | undefined;
  let failWith: unknown;
  const job: ControlledJob = {
    id,
    name: "Fake Job",
    startedAtMs: 1_700_000_000_000,
    status: () => status,
    async savepoint() {
      calls.savepoints++;
      if (failWith !== undefined) throw failWith;
      await gate;
      return SAVEPOINT;
    },
    async stop(options) {
      calls.stops.push(options);
      status = "stopped";
      return options.savepoint ? SAVEPOINT : undefined;
    },
    cancel() {
      calls.cancels++;
      status = "cancelled";
    },
  };
  return {
    job,
    calls,
    hold: () => {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return release;
    },
    failWith: (e: unknown) => (failWith = e),
  };
}

/** A temporary EDDY home, removed after `body`. */
async function withHome(body: (home: string) => Promise<void>): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), "eddy-control-"));
  try {
    await body(home);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** A control server for `job` in a temporary home, closed after `body`. */
async function withServer(job: ControlledJob, body: (server: ControlServer, home: string) => Promise<void>): Promise<void> {
  await withHome(async (home) => {
    const server = await startControlServer(job, { home, logger: silentLogger });
    try {
      await body(server, home);
    } finally {
      await server.close();
    }
  });
}

async function call(server: ControlServer, method: string, path: string, init: { body?: string; token?: string | null } = {}) {
  const token = init.token === undefined ? readFileSync(server.tokenFile, "utf8") : init.token;
  const res = await fetch(server.url + path, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  return { status: res.status, contentType: res.headers.get("content-type"), body: (await res.json()) as Record<string, any> };
}

/** Posts `bytes` of body in chunks without a Content-Length; resolves with the status. */
function chunkedPost(server: ControlServer, path: string, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(server.url + path, { method: "POST", headers: { authorization: `Bearer ${readFileSync(server.tokenFile, "utf8")}` } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("error", reject);
    for (let sent = 0; sent < bytes; sent += 1024) req.write(" ".repeat(1024));
    req.end();
  });
}

function deadPid(): number {
  return spawnSync(process.execPath, ["-e", ""]).pid!;
}

test("serves the job's info, keeps the registry entry and token in 0600 files, and removes them at close", async () => {
  await withHome(async (home) => {
    const { job } = fakeJob();
    const server = await startControlServer(job, { home, logger: silentLogger });
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(statSync(join(home, "jobs")).mode & 0o777, 0o700);
    assert.equal(statSync(server.tokenFile).mode & 0o777, 0o600);
    assert.equal(statSync(server.registryFile).mode & 0o777, 0o600);
    assert.equal(server.registryFile, join(home, "jobs", "fake-job.json"));
    assert.match(readFileSync(server.tokenFile, "utf8"), /^[0-9a-f]{64}$/);
    assert.deepEqual(JSON.parse(readFileSync(server.registryFile, "utf8")), {
      version: REGISTRY_VERSION,
      id: "fake-job",
      name: "Fake Job",
      pid: process.pid,
      url: server.url,
      tokenFile: server.tokenFile,
      startedAtMs: job.startedAtMs,
    });

    const info = await call(server, "GET", "/v1/job");
    assert.equal(info.status, 200);
    assert.match(info.contentType ?? "", /^application\/json/);
    assert.deepEqual(info.body, { id: "fake-job", name: "Fake Job", status: "running", pid: process.pid, startedAtMs: job.startedAtMs });

    await server.close();
    await server.close();
    assert.equal(existsSync(server.registryFile), false);
    assert.equal(existsSync(server.tokenFile), false);
    await assert.rejects(fetch(server.url + "/v1/job"));
  });
});

test("listens on the port it is given (rest.port), and /metrics is 404 for a job that offers no metrics", async () => {
  // A port free a moment ago (another process could take it in between: then this test fails loudly).
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  await withHome(async (home) => {
    const server = await startControlServer(fakeJob().job, { home, logger: silentLogger, port });
    try {
      assert.equal(server.url, `http://127.0.0.1:${port}`);
      const answer = await call(server, "GET", "/metrics");
      assert.equal(answer.status, 404);
      assert.equal(answer.body.error.code, "NOT_FOUND");
    } finally {
      await server.close();
    }
  });
});

test("refuses a request without the bearer token or with a wrong one (401)", async () => {
  const { job, calls } = fakeJob();
  await withServer(job, async (server) => {
    for (const token of [null, "", "0".repeat(64), readFileSync(server.tokenFile, "utf8") + "0"]) {
      const res = await call(server, "POST", "/v1/job/cancel", { token, body: "{}" });
      assert.equal(res.status, 401, `token ${JSON.stringify(token)}`);
      assert.equal(res.body.error.code, "UNAUTHORIZED");
    }
    assert.equal(calls.cancels, 0);
  });
});

test("savepoint answers the job's result and refuses a client-supplied directory; stop passes savepoint and drain; cancel is 202", async () => {
  const { job, calls } = fakeJob();
  await withServer(job, async (server) => {
    assert.deepEqual(await call(server, "POST", "/v1/job/savepoint", { body: "{}" }), { status: 200, contentType: "application/json; charset=utf-8", body: SAVEPOINT });
    const withDir = await call(server, "POST", "/v1/job/savepoint", { body: JSON.stringify({ dir: "/etc" }) });
    assert.equal(withDir.status, 400);
    assert.match(withDir.body.error.message, /unknown field 'dir'/);
    assert.equal(calls.savepoints, 1);

    const stopped = await call(server, "POST", "/v1/job/stop", { body: JSON.stringify({ savepoint: true, drain: true }) });
    assert.deepEqual(stopped, { status: 200, contentType: "application/json; charset=utf-8", body: { savepoint: SAVEPOINT } });
    const plain = await call(server, "POST", "/v1/job/stop", { body: JSON.stringify({ savepoint: false }) });
    assert.deepEqual(plain.body, { savepoint: null });
    assert.deepEqual(calls.stops, [
      { savepoint: true, drain: true },
      { savepoint: false, drain: false },
    ]);

    const cancelled = await call(server, "POST", "/v1/job/cancel");
    assert.equal(cancelled.status, 202);
    assert.deepEqual(cancelled.body, {});
    assert.equal(calls.cancels, 1);
  });
});

test("answers 404, 405, 413 and 400 for unknown paths, wrong methods, oversized bodies, bad JSON and wrong field types", async () => {
  const { job, calls } = fakeJob();
  await withServer(job, async (server) => {
    const cases: [string, string, string | undefined, number, string][] = [
      ["GET", "/v1/jobs", undefined, 404, "NOT_FOUND"],
      ["GET", "/v1/job/savepoint", undefined, 405, "METHOD_NOT_ALLOWED"],
      ["POST", "/v1/job", "{}", 405, "METHOD_NOT_ALLOWED"],
      ["POST", "/v1/job/stop", JSON.stringify({ savepoint: true, pad: "x".repeat(MAX_BODY_BYTES) }), 413, "BODY_TOO_LARGE"],
      ["POST", "/v1/job/stop", "{savepoint: true", 400, "BAD_REQUEST"],
      ["POST", "/v1/job/stop", "[true]", 400, "BAD_REQUEST"],
      ["POST", "/v1/job/stop", JSON.stringify({ savepoint: "yes" }), 400, "BAD_REQUEST"],
      ["POST", "/v1/job/stop", JSON.stringify({ drain: true }), 400, "BAD_REQUEST"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const res = await call(server, method, path, { body });
      assert.equal(res.status, status, `${method} ${path} ${body?.slice(0, 40)}`);
      assert.equal(res.body.error.code, code);
      assert.ok(res.body.error.message.length > 0);
    }
    assert.equal(await chunkedPost(server, "/v1/job/stop", MAX_BODY_BYTES * 4), 413, "a chunked body is cut off at the limit");
    const wrongType = await call(server, "POST", "/v1/job/stop", { body: JSON.stringify({ savepoint: "yes" }) });
    assert.equal(wrongType.body.error.message, "field 'savepoint' must be a boolean, got string");
    assert.deepEqual(calls.stops, []);
  });
});

test("a failure of the job is 409 for a request that does not fit the job, 500 otherwise, and the client throws it as EddyError", async () => {
  const fake = fakeJob();
  await withServer(fake.job, async (server, home) => {
    fake.failWith(new EddyError("SAVEPOINT_NEEDS_CHECKPOINTING", "the job runs without checkpointing"));
    const conflict = await call(server, "POST", "/v1/job/savepoint", { body: "{}" });
    assert.deepEqual(conflict.body, { error: { code: "SAVEPOINT_NEEDS_CHECKPOINTING", message: "the job runs without checkpointing" } });
    assert.equal(conflict.status, 409);
    const client = await connectJob("fake-job", home);
    await assert.rejects(client.savepoint(), (e: unknown) => e instanceof EddyError && e.code === "SAVEPOINT_NEEDS_CHECKPOINTING" && e.message === "the job runs without checkpointing");

    fake.failWith(new Error("disk on fire"));
    const internal = await call(server, "POST", "/v1/job/savepoint", { body: "{}" });
    assert.equal(internal.status, 500);
    assert.deepEqual(internal.body.error, { code: "INTERNAL", message: "Error: disk on fire" });
  });
});

test(`more than ${MAX_IN_FLIGHT} requests in flight get 503`, async () => {
  const fake = fakeJob();
  const release = fake.hold();
  await withServer(fake.job, async (server) => {
    const pending = Array.from({ length: MAX_IN_FLIGHT }, () => call(server, "POST", "/v1/job/savepoint", { body: "{}" }));
    while (fake.calls.savepoints < MAX_IN_FLIGHT) await new Promise((r) => setImmediate(r));
    const busy = await call(server, "GET", "/v1/job");
    assert.equal(busy.status, 503);
    assert.equal(busy.body.error.code, "BUSY");
    release();
    for (const res of await Promise.all(pending)) assert.equal(res.status, 200);
    assert.equal((await call(server, "GET", "/v1/job")).status, 200);
  });
});

test("a job id held by a live job is refused with JOB_ID_IN_USE; an entry of a process that is gone is replaced", async () => {
  await withHome(async (home) => {
    const server = await startControlServer(fakeJob().job, { home, logger: silentLogger });
    try {
      // The same id again in this process.
      await assert.rejects(startControlServer(fakeJob().job, { home, logger: silentLogger }), (e: unknown) => {
        return e instanceof EddyError && e.code === "JOB_ID_IN_USE" && /--job-id/.test(e.message);
      });
      assert.equal(JSON.parse(readFileSync(server.registryFile, "utf8")).url, server.url, "the first server's entry stays");
    } finally {
      await server.close();
    }

    // Two servers started at once for one id: one wins.
    const both = await Promise.allSettled([startControlServer(fakeJob().job, { home, logger: silentLogger }), startControlServer(fakeJob().job, { home, logger: silentLogger })]);
    assert.deepEqual(both.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
    for (const r of both) if (r.status === "fulfilled") await r.value.close();

    // Another live process holds the id (the test runner, our parent).
    const jobs = join(home, "jobs");
    const entry = (pid: number, tokenFile: string) =>
      JSON.stringify({ version: REGISTRY_VERSION, id: "fake-job", name: "other", pid, url: "http://127.0.0.1:9", tokenFile, startedAtMs: 1 });
    writeFileSync(join(jobs, "fake-job.json"), entry(process.ppid, join(jobs, `fake-job.${process.ppid}.token`)));
    await assert.rejects(startControlServer(fakeJob().job, { home, logger: silentLogger }), { code: "JOB_ID_IN_USE" });

    // That process is gone: its entry and token file are replaced.
    const dead = deadPid();
    const staleToken = join(jobs, `fake-job.${dead}.token`);
    writeFileSync(staleToken, "stale");
    writeFileSync(join(jobs, "fake-job.json"), entry(dead, staleToken));
    const replaced = await startControlServer(fakeJob().job, { home, logger: silentLogger });
    try {
      assert.equal(JSON.parse(readFileSync(replaced.registryFile, "utf8")).pid, process.pid);
      assert.equal(existsSync(staleToken), false);
      assert.equal((await call(replaced, "GET", "/v1/job")).status, 200);
    } finally {
      await replaced.close();
    }
  });
});

test("refuses a job id that is not a file-safe name", async () => {
  await withHome(async (home) => {
    for (const id of ["../escape", "a/b", "", ".hidden"]) {
      await assert.rejects(startControlServer(fakeJob(id).job, { home, logger: silentLogger }), { code: "INVALID_JOB_ID" });
    }
  });
});

test("the client lists running and gone jobs, calls a job with its token, and names the running ids for an unknown one", async () => {
  await withHome(async (home) => {
    const a = fakeJob("job-a");
    const b = fakeJob("job-b");
    const serverA = await startControlServer(a.job, { home, logger: silentLogger });
    const serverB = await startControlServer(b.job, { home, logger: silentLogger });
    try {
      const dead = deadPid();
      mkdirSync(join(home, "jobs"), { recursive: true });
      writeFileSync(
        join(home, "jobs", "old.json"),
        JSON.stringify({ version: REGISTRY_VERSION, id: "old", name: "Old", pid: dead, url: "http://127.0.0.1:9", tokenFile: join(home, "jobs", `old.${dead}.token`), startedAtMs: 0 }),
      );
      writeFileSync(join(home, "jobs", "not-an-entry.json"), "{");
      b.job.cancel();

      const listed = await listJobs(home);
      assert.deepEqual(
        listed.map((j) => [j.id, j.status, j.alive]),
        [
          ["old", "gone", false],
          ["job-a", "running", true],
          ["job-b", "cancelled", true],
        ],
      );
      assert.equal(listed[1]!.url, serverA.url);

      const client = await connectJob("job-a", home);
      assert.equal((await client.info()).name, "Fake Job");
      assert.deepEqual(await client.savepoint(), SAVEPOINT);
      assert.deepEqual(await client.stop({ savepoint: true, drain: false }), SAVEPOINT);
      assert.equal(await client.stop({ savepoint: false, drain: false }), undefined);
      await client.cancel();
      assert.deepEqual(a.calls.stops, [
        { savepoint: true, drain: false },
        { savepoint: false, drain: false },
      ]);
      assert.equal(a.calls.cancels, 1);

      await assert.rejects(connectJob("nope", home), (e: unknown) => {
        return e instanceof EddyError && e.code === "UNKNOWN_JOB" && e.message === "no running job with id 'nope'; running: job-a, job-b";
      });
      await assert.rejects(connectJob("old", home), /no running job with id 'old' \(it ran as pid \d+, which is gone\)/);
    } finally {
      await serverA.close();
      await serverB.close();
    }
  });
});

testEndpointBounds({
  name: "the control API",
  bounds: CONTROL_API_BOUNDS,
  start: async (bounds) => {
    const home = mkdtempSync(join(tmpdir(), "eddy-control-bounds-"));
    const server = await startControlServer(fakeJob().job, { home, logger: silentLogger, bounds });
    return {
      url: server.url,
      headers: { authorization: `Bearer ${readFileSync(server.tokenFile, "utf8")}` },
      close: async () => {
        await server.close();
        rmSync(home, { recursive: true, force: true });
      },
    };
  },
  okPath: "/v1/job",
  bodyPath: "/v1/job/stop",
});

test(`with its documented bounds, the control API closes a connection that sends nothing ${HEADERS_TIMEOUT_MS} ms after it opened`, async () => {
  await withServer(fakeJob().job, async (server) => {
    const probe = await openProbe(server.url);
    assertAtDeadline(await probe.closedWithin(HEADERS_TIMEOUT_MS + 1_000), HEADERS_TIMEOUT_MS, 1_000);
    assert.equal(probe.received(), "");
  });
});
