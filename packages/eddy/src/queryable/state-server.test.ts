import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { EddyError } from "../core/errors.ts";
import { mapKeyOf, type Key, type MapKey } from "../core/key.ts";
import { silentLogger, type Logger } from "../core/logger.ts";
import { decodeQueryValue, encodeQueryKey, MAX_QUERY_KEY_BYTES, MAX_QUERY_VALUE_BYTES, type StateServerBackend } from "./queryable.ts";
import { MAX_HEADER_BYTES, STATE_SERVER_BOUNDS } from "../http/bounded-server.ts";
import { testEndpointBounds } from "../testing/endpoint-bounds-suite.ts";
import { startStateServer, type StateServer } from "./state-server.ts";

const TOKEN = "t".repeat(64);

/** A backend holding `counts` (keys it owns: strings starting with "a", numbers, bigints, arrays) and `blobs`. */
function fakeBackend(values: ReadonlyMap<MapKey, unknown>): StateServerBackend & { reads: number } {
  const backend = {
    reads: 0,
    read(name: string, key: Key) {
      backend.reads++;
      if (name === "explodes") throw new TypeError("boom");
      if (name !== "counts") throw new EddyError("UNKNOWN_STATE", `no queryable state '${name}' here`);
      if (typeof key === "string" && !key.startsWith("a")) throw new EddyError("NOT_OWNER", `key group of '${key}' is not held here`);
      const mk = mapKeyOf(key);
      return values.has(mk) ? { found: true as const, value: values.get(mk) } : { found: false as const };
    },
  };
  return backend;
}

const VALUES = new Map<MapKey, unknown>([
  ["a1", 41],
  [7, { total: 12n, seen: new Set(["x", "y"]), last: new Date(1_700_000_000_000), byDay: new Map([["mon", 1]]), raw: new Uint8Array([1, 2, 255]) }],
  [123456789012345678901234567890n, "big"],
  [mapKeyOf(["a", 1]), [1, undefined, 3]],
  ["aHuge", "x".repeat(MAX_QUERY_VALUE_BYTES)],
]);

async function withServer(body: (server: StateServer, backend: ReturnType<typeof fakeBackend>) => Promise<void>, options: { maxInFlight?: number; logger?: Logger } = {}): Promise<void> {
  const backend = fakeBackend(VALUES);
  const server = await startStateServer({ token: TOKEN, backend, logger: options.logger ?? silentLogger, ...(options.maxInFlight === undefined ? {} : { maxInFlight: options.maxInFlight }) });
  try {
    await body(server, backend);
  } finally {
    await server.close();
  }
}

async function get(server: StateServer, path: string, init: { token?: string | null; method?: string; body?: string } = {}) {
  const token = init.token === undefined ? TOKEN : init.token;
  const res = await fetch(server.url + path, {
    method: init.method ?? "GET",
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, any> };
}

const read = (server: StateServer, name: string, key: Key | string, raw = false) =>
  get(server, `/v1/state/${encodeURIComponent(name)}?key=${encodeURIComponent(raw ? (key as string) : encodeQueryKey(key as Key))}`);

test("answers found values in the protocol's encodings and absent keys as found: false", async () => {
  await withServer(async (server) => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.deepEqual((await read(server, "counts", "a1")).body, { found: true, value: 41 });
    assert.deepEqual((await read(server, "counts", "a-missing")).body, { found: false });
    const rich = await read(server, "counts", 7);
    assert.equal(rich.status, 200);
    assert.deepEqual(decodeQueryValue(rich.text), { found: true, value: VALUES.get(7) });
    assert.deepEqual(rich.body.value.total, { $bigint: "12" });
    assert.deepEqual(rich.body.value.last, { $date: 1_700_000_000_000 });
    assert.deepEqual((await read(server, "counts", 123456789012345678901234567890n)).body, { found: true, value: "big" });
    assert.deepEqual((await read(server, "counts", ["a", 1])).body, { found: true, value: [1, null, 3] });
  });
});

test("refuses a missing or wrong token with 401 before looking at the request", async () => {
  await withServer(async (server, backend) => {
    for (const token of [null, "wrong", TOKEN + "x"]) {
      const res = await get(server, `/v1/state/counts?key=${encodeURIComponent('"a1"')}`, { token });
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, "UNAUTHORIZED");
    }
    assert.equal((await get(server, "/nowhere", { token: null })).status, 401);
    assert.equal(backend.reads, 0);
  });
});

test("answers bad keys 400 BAD_KEY, unknown states and paths 404, other owners 409, other methods 405, bodies 400", async () => {
  await withServer(async (server, backend) => {
    const expect = async (res: Promise<{ status: number; body: Record<string, any> }>, status: number, code: string, message?: RegExp) => {
      const { status: s, body } = await res;
      assert.equal(s, status, JSON.stringify(body));
      assert.equal(body.error.code, code);
      if (message !== undefined) assert.match(body.error.message, message);
    };
    await expect(read(server, "counts", "a1", true), 400, "BAD_KEY", /not JSON/);
    await expect(read(server, "counts", "true", true), 400, "BAD_KEY");
    await expect(read(server, "counts", '{"a":1}', true), 400, "BAD_KEY");
    await expect(read(server, "counts", "[]", true), 400, "BAD_KEY");
    await expect(get(server, "/v1/state/counts"), 400, "BAD_KEY", /missing parameter 'key'/);
    await expect(get(server, "/v1/state/counts?key=1&key=2"), 400, "BAD_KEY");
    await expect(get(server, "/v1/state/counts?key=1&path=/etc"), 400, "BAD_REQUEST", /unknown parameter 'path'/);
    await expect(read(server, "counts", "a".repeat(MAX_QUERY_KEY_BYTES)), 400, "BAD_KEY", /more than 1024/);
    // Multi-byte characters count as bytes.
    await expect(read(server, "counts", "é".repeat(MAX_QUERY_KEY_BYTES / 2)), 400, "BAD_KEY", /more than 1024/);
    await expect(read(server, "nope", "a1"), 404, "UNKNOWN_STATE", /'nope'/);
    await expect(read(server, "counts", "b1"), 409, "NOT_OWNER");
    await expect(get(server, "/v1/state"), 404, "NOT_FOUND");
    await expect(get(server, "/v1/state/counts/extra?key=1"), 404, "NOT_FOUND");
    await expect(get(server, "/v1/state/%E0%A4%A?key=1"), 400, "BAD_REQUEST");
    await expect(get(server, "/v1/state/counts?key=1", { method: "POST", body: "{}" }), 405, "METHOD_NOT_ALLOWED");
    await expect(get(server, "/v1/state/counts?key=1", { method: "DELETE" }), 405, "METHOD_NOT_ALLOWED");
    const readsBefore = backend.reads;
    // A URL far over the header bound is refused by the parser, still with a JSON answer.
    const long = await fetch(`${server.url}/v1/state/counts?key=${"1".repeat(MAX_HEADER_BYTES)}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(long.status, 431);
    assert.equal(((await long.json()) as { error: { code: string } }).error.code, "HEADERS_TOO_LARGE");
    assert.equal(backend.reads, readsBefore);
  });
});

test("a GET with a body is refused 400 without reading it", async () => {
  await withServer(async (server) => {
    const status = await rawRequest(server, `GET /v1/state/counts?key=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 5\r\n\r\nhello`);
    assert.match(status, /^HTTP\/1\.1 400 /);
  });
});

test("a value over MAX_QUERY_VALUE_BYTES of JSON is 413 VALUE_TOO_LARGE; a failing backend is 500 and logged", async () => {
  const logged: string[] = [];
  const logger: Logger = { ...silentLogger, error: (m) => void logged.push(m) };
  await withServer(
    async (server) => {
      const huge = await read(server, "counts", "aHuge");
      assert.equal(huge.status, 413);
      assert.equal(huge.body.error.code, "VALUE_TOO_LARGE");
      const failing = await read(server, "explodes", "a1");
      assert.equal(failing.status, 500);
      assert.match(failing.body.error.message, /boom/);
      assert.deepEqual(logged, ["queryable state read failed"]);
    },
    { logger },
  );
});

/** Sends `text` on a fresh connection; resolves with the first line of the answer. */
function rawRequest(server: StateServer, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(server.url);
    const socket = connect(Number(port), "127.0.0.1", () => socket.write(text));
    let got = "";
    socket.on("data", (d: Buffer) => {
      got += d.toString();
      if (got.includes("\r\n")) {
        socket.destroy();
        resolve(got.split("\r\n")[0]!);
      }
    });
    socket.on("error", reject);
  });
}

test("a flood gets 503 BUSY beyond maxInFlight reads per turn of the event loop, and is served again after", async () => {
  await withServer(
    async (server) => {
      const { port } = new URL(server.url);
      const sockets: Socket[] = await Promise.all(
        Array.from({ length: 12 }, () => new Promise<Socket>((resolve, reject) => { const s = connect(Number(port), "127.0.0.1", () => resolve(s)); s.on("error", reject); })),
      );
      await delay(50); // every connection accepted, so the requests arrive together
      const statuses = sockets.map(
        (s) =>
          new Promise<number>((resolve) => {
            let got = "";
            s.on("data", (d: Buffer) => {
              got += d.toString();
              const m = /^HTTP\/1\.1 (\d+)/.exec(got);
              if (m !== null) {
                s.destroy();
                resolve(Number(m[1]));
              }
            });
          }),
      );
      const request = `GET /v1/state/counts?key=${encodeURIComponent('"a1"')} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`;
      for (const s of sockets) s.write(request);
      const answered = await Promise.all(statuses);
      assert.equal(answered.filter((s) => s === 200).length, 2, answered.join(","));
      assert.equal(answered.filter((s) => s === 503).length, 10, answered.join(","));
      assert.equal((await read(server, "counts", "a1")).status, 200);
    },
    { maxInFlight: 2 },
  );
});

test("close ends listening and may be called twice", async () => {
  const server = await startStateServer({ token: TOKEN, backend: fakeBackend(VALUES), logger: silentLogger });
  assert.equal((await read(server, "counts", "a1")).status, 200);
  await Promise.all([server.close(), server.close()]);
  await server.close();
  await assert.rejects(read(server, "counts", "a1"));
});

testEndpointBounds({
  name: "a state server",
  bounds: STATE_SERVER_BOUNDS,
  start: async (bounds) => {
    const server = await startStateServer({ token: TOKEN, backend: fakeBackend(VALUES), logger: silentLogger, bounds });
    return { url: server.url, headers: { authorization: `Bearer ${TOKEN}` }, close: () => server.close() };
  },
  okPath: `/v1/state/counts?key=${encodeURIComponent('"a1"')}`,
});
