/**
 * The contract of the job's HTTP endpoints under abuse (http/bounded-server.ts), as one suite
 * that the control API's and the state servers' tests run: connections beyond the cap refused at
 * once, connections that make no progress closed at their deadlines, request line and headers
 * bounded by MAX_HEADER_BYTES. It talks raw TCP, so it sees what a hostile client sees.
 * Not exported from `eddy/testing`: only Eddy's own tests use it.
 */
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { DEADLINE_CHECK_INTERVAL_MS, MAX_HEADER_BYTES, type HttpBounds } from "../http/bounded-server.ts";

export interface EndpointUnderTest {
  readonly url: string;
  /** Headers an answered request needs (the token). */
  readonly headers: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

export interface EndpointBoundsCase {
  /** What the test names call it ("the control API"). */
  readonly name: string;
  /** The bounds it runs with; the suite shortens their deadlines and keeps the connection cap. */
  readonly bounds: HttpBounds;
  start(bounds: HttpBounds): Promise<EndpointUnderTest>;
  /** A GET path the endpoint answers 200. */
  readonly okPath: string;
  /** A POST path that reads a body; omitted for an endpoint that takes no bodies. */
  readonly bodyPath?: string;
}

/** Deadlines short enough for a test, long enough to tell "at the deadline" from "at once". */
const SHORT = { headersTimeoutMs: 400, requestTimeoutMs: 800 };
/** How late a deadline may be seen on a busy machine. */
const SLACK_MS = 1_000;

export function testEndpointBounds(c: EndpointBoundsCase): void {
  const withEndpoint = async (bounds: HttpBounds, body: (endpoint: EndpointUnderTest) => Promise<void>): Promise<void> => {
    const endpoint = await c.start(bounds);
    try {
      await body(endpoint);
    } finally {
      await endpoint.close();
    }
  };
  const short: HttpBounds = { ...c.bounds, ...SHORT };

  test(`${c.name} closes a connection that sends nothing at its header deadline, unanswered`, async () => {
    await withEndpoint(short, async (endpoint) => {
      const probe = await openProbe(endpoint.url);
      const closedAfterMs = await probe.closedWithin(SHORT.headersTimeoutMs + SLACK_MS);
      assertAtDeadline(closedAfterMs, SHORT.headersTimeoutMs, SLACK_MS);
      assert.equal(probe.received(), "");
    });
  });

  test(`${c.name} answers 408 to headers trickled in past the header deadline, counted from the connection's opening`, async () => {
    await withEndpoint(short, async (endpoint) => {
      const probe = await openProbe(endpoint.url);
      probe.socket.write(`GET ${c.okPath} HTTP/1.1\r\nHost: eddy\r\n`);
      const trickle = setInterval(() => probe.socket.writable && probe.socket.write("X-Slow: 1\r\n"), 40);
      try {
        assertAtDeadline(await probe.closedWithin(SHORT.headersTimeoutMs + SLACK_MS), SHORT.headersTimeoutMs, SLACK_MS);
      } finally {
        clearInterval(trickle);
      }
      assert.match(probe.received(), /^HTTP\/1\.1 408 .*"code":"REQUEST_TIMEOUT"/s);
    });
  });

  test(`${c.name} closes a kept-alive connection at the header deadline after its answer, idle or trickling blank lines`, async () => {
    await withEndpoint(short, async (endpoint) => {
      const [idle, trickling] = await Promise.all([openProbe(endpoint.url), openProbe(endpoint.url)]);
      const request = requestText("GET", c.okPath, endpoint.headers);
      assert.equal(await idle.exchange(request), 200);
      const idleAnsweredMs = idle.elapsedMs();
      assert.equal(await trickling.exchange(request), 200);
      const tricklingAnsweredMs = trickling.elapsedMs();
      const trickle = setInterval(() => trickling.socket.writable && trickling.socket.write("\r\n"), 40);
      try {
        const [idleClosedMs, tricklingClosedMs] = await Promise.all([idle.closedWithin(10_000), trickling.closedWithin(10_000)]);
        assertAtDeadline(idleClosedMs === undefined ? undefined : idleClosedMs - idleAnsweredMs, SHORT.headersTimeoutMs, SLACK_MS);
        assertAtDeadline(tricklingClosedMs === undefined ? undefined : tricklingClosedMs - tricklingAnsweredMs, SHORT.headersTimeoutMs, SLACK_MS);
      } finally {
        clearInterval(trickle);
      }
    });
  });

  if (c.bodyPath !== undefined) {
    const bodyPath = c.bodyPath;
    test(`${c.name} answers 408 to a request whose body is not in by the request deadline`, async () => {
      await withEndpoint(short, async (endpoint) => {
        const probe = await openProbe(endpoint.url);
        probe.socket.write(requestText("POST", bodyPath, { ...endpoint.headers, "Content-Type": "application/json", "Content-Length": "100" }) + "{");
        const deadlineMs = SHORT.requestTimeoutMs + DEADLINE_CHECK_INTERVAL_MS;
        assertAtDeadline(await probe.closedWithin(deadlineMs + SLACK_MS), SHORT.requestTimeoutMs, DEADLINE_CHECK_INTERVAL_MS + SLACK_MS);
        assert.match(probe.received(), /^HTTP\/1\.1 408 .*"code":"REQUEST_TIMEOUT"/s);
      });
    });
  }

  test(`${c.name} answers 431 to a request line and headers over ${MAX_HEADER_BYTES} bytes, and serves them just under`, async () => {
    await withEndpoint(c.bounds, async (endpoint) => {
      const padded = (totalBytes: number): string => {
        const request = requestText("GET", c.okPath, endpoint.headers);
        const pad = "X-Pad: \r\n";
        return requestText("GET", c.okPath, { ...endpoint.headers, "X-Pad": "p".repeat(totalBytes - request.length - pad.length) });
      };
      const under = await openProbe(endpoint.url);
      assert.equal(await under.exchange(padded(MAX_HEADER_BYTES - 256)), 200);
      under.socket.destroy();
      const over = await openProbe(endpoint.url);
      assert.equal(await over.exchange(padded(9_000)), 431);
      assert.match(over.received(), /"code":"HEADERS_TOO_LARGE"/);
      assert.notEqual(await over.closedWithin(SLACK_MS), undefined, "and closes the connection");
    });
  });

  test(`${c.name} refuses connections beyond ${c.bounds.maxConnections} at once; the admitted ones still answer; a closed one makes room`, async () => {
    await withEndpoint(c.bounds, async (endpoint) => {
      const request = requestText("GET", c.okPath, endpoint.headers);
      const admitted = await Promise.all(Array.from({ length: c.bounds.maxConnections }, () => openProbe(endpoint.url)));
      try {
        // Answered, so accepted before the one below; one at a time, within the requests in flight.
        await answerEach(admitted, request);
        const refused = await openProbe(endpoint.url);
        assert.notEqual(await refused.closedWithin(SLACK_MS), undefined, "one more is closed at once");
        assert.equal(refused.received(), "", "without an answer");
        await answerEach(admitted, request);

        admitted.pop()!.socket.destroy();
        // The server sees the close a moment later; until then a newcomer is still refused.
        let newcomer: number | undefined;
        for (let attempt = 0; attempt < 50 && newcomer === undefined; attempt++) {
          const probe = await openProbe(endpoint.url);
          newcomer = await probe.exchange(request).catch(() => undefined);
          probe.socket.destroy();
          if (newcomer === undefined) await delay(20);
        }
        assert.equal(newcomer, 200, "a connection is admitted once one has closed");
      } finally {
        for (const p of admitted) p.socket.destroy();
      }
    });
  });
}

/** Each probe in turn gets a 200 for `request`. */
async function answerEach(probes: readonly Probe[], request: string): Promise<void> {
  for (const [i, probe] of probes.entries()) assert.equal(await probe.exchange(request), 200, `connection ${i}`);
}

/** `elapsedMs` is the deadline (not earlier, bar timer jitter) plus at most `lateMs`. */
export function assertAtDeadline(elapsedMs: number | undefined, deadlineMs: number, lateMs: number): void {
  assert.notEqual(elapsedMs, undefined, `still open ${deadlineMs + lateMs} ms after the deadline's start`);
  assert.ok(elapsedMs! >= deadlineMs - 50 && elapsedMs! <= deadlineMs + lateMs, `closed after ${Math.round(elapsedMs!)} ms; deadline ${deadlineMs} ms`);
}

export function requestText(method: string, path: string, headers: Readonly<Record<string, string>>): string {
  return `${method} ${path} HTTP/1.1\r\nHost: eddy\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("")}\r\n`;
}

/** A raw client connection that records what it received and when the server closed it. */
export interface Probe {
  readonly socket: Socket;
  /** Everything received so far. */
  received(): string;
  /** Milliseconds since the connection opened. */
  elapsedMs(): number;
  /** Resolves with the ms from opening to the server's close, or undefined if it is still open after `waitMs`. */
  closedWithin(waitMs: number): Promise<number | undefined>;
  /** Sends `text` and resolves with the status of the answer after those received so far; rejects if closed first. */
  exchange(text: string): Promise<number>;
}

export function openProbe(url: string): Promise<Probe> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let openedAt = 0;
    let received = "";
    /** Where the next answer starts in `received`. */
    let consumed = 0;
    let closedAt: number | undefined;
    const waiters = new Set<() => void>();
    const wake = (): void => {
      for (const w of [...waiters]) w();
    };
    socket.on("data", (d: Buffer) => {
      received += d.toString("latin1");
      wake();
    });
    socket.on("close", () => {
      closedAt = performance.now();
      wake();
    });
    // A refused or cut connection may end in a reset: that is a close, seen above.
    socket.on("error", () => undefined);
    /** Waits until `ready()` holds or the socket closed; false if it closed first or `waitMs` passed. */
    const until = (ready: () => boolean, waitMs: number): Promise<boolean> =>
      new Promise((done) => {
        const check = (): void => {
          if (ready()) finish(true);
          else if (closedAt !== undefined) finish(false);
        };
        const timer = setTimeout(() => finish(ready()), waitMs);
        const finish = (result: boolean): void => {
          clearTimeout(timer);
          waiters.delete(check);
          done(result);
        };
        waiters.add(check);
        check();
      });
    const probe: Probe = {
      socket,
      received: () => received,
      elapsedMs: () => performance.now() - openedAt,
      closedWithin: async (waitMs) => ((await until(() => closedAt !== undefined, waitMs)) ? closedAt! - openedAt : undefined),
      exchange: async (text) => {
        socket.write(text);
        const complete = (): number | undefined => {
          const headEnd = received.indexOf("\r\n\r\n", consumed);
          if (headEnd < 0) return undefined;
          const length = Number(/\r\ncontent-length: *(\d+)/i.exec(received.slice(consumed, headEnd))?.[1] ?? 0);
          return received.length >= headEnd + 4 + length ? headEnd + 4 + length : undefined;
        };
        if (!(await until(() => complete() !== undefined, 10_000))) throw new Error(`no answer; received ${JSON.stringify(received.slice(consumed, consumed + 200))}`);
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received.slice(consumed))?.[1]);
        consumed = complete()!;
        return status;
      },
    };
    socket.once("connect", () => {
      openedAt = performance.now();
      resolve(probe);
    });
    socket.once("error", reject);
  });
}
