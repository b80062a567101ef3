/**
 * A small customer service over HTTP on loopback, for the async enrichment example and its tests:
 * `GET /customers/:id` answers `{ id, name, tier }` as JSON. It behaves like a real dependency
 * on a bad day, on purpose and deterministically: the first request for some ids fails with 500,
 * some answers are slow, and some ids hang (answered only after `hangMs`, longer than any sane
 * timeout). It binds to 127.0.0.1 only, on a port the system picks.
 */
import { Agent, createServer, get, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface Customer {
  readonly id: number;
  readonly name: string;
  readonly tier: "gold" | "silver" | "bronze";
}

const TIERS = ["gold", "silver", "bronze"] as const;

/** What the service answers for `id` (the oracle of the tests). */
export function customer(id: number): Customer {
  return { id, name: `customer-${id}`, tier: TIERS[id % TIERS.length]! };
}

export interface CustomerServiceOptions {
  /** The first request for an id that is a multiple of this fails with 500 (0: never). */
  readonly failFirstEvery?: number;
  /** Ids that are multiples of this are answered after `slowMs` (0: never). */
  readonly slowEvery?: number;
  readonly slowMs?: number;
  /** Ids answered only after `hangMs` (default 30 s): requests a client should time out. */
  readonly hangIds?: readonly number[];
  readonly hangMs?: number;
}

export interface CustomerService {
  /** e.g. `http://127.0.0.1:40123` */
  readonly url: string;
  /** Requests answered or pending so far, by status ("200", "500") and "hung". */
  readonly stats: Record<string, number>;
  close(): Promise<void>;
}

export async function startCustomerService(options: CustomerServiceOptions = {}): Promise<CustomerService> {
  const { failFirstEvery = 0, slowEvery = 0, slowMs = 0, hangMs = 30_000 } = options;
  const hang = new Set(options.hangIds ?? []);
  const failedOnce = new Set<number>();
  const stats: Record<string, number> = {};
  const count = (what: string): void => void (stats[what] = (stats[what] ?? 0) + 1);
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (ms: number, action: () => void): void => {
    const t = setTimeout(() => {
      timers.delete(t);
      action();
    }, ms);
    t.unref();
    timers.add(t);
  };
  const answer = (res: ServerResponse, status: number, body: unknown): void => {
    count(String(status));
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const match = /^\/customers\/(\d+)$/.exec(req.url ?? "");
    if (req.method !== "GET" || match === null) return answer(res, 404, { error: "not found" });
    const id = Number(match[1]);
    if (failFirstEvery > 0 && id % failFirstEvery === 0 && !failedOnce.has(id)) {
      failedOnce.add(id);
      return answer(res, 500, { error: "temporarily unavailable" });
    }
    if (hang.has(id)) {
      count("hung");
      return later(hangMs, () => answer(res, 200, customer(id)));
    }
    if (slowEvery > 0 && id % slowEvery === 0) return later(slowMs, () => answer(res, 200, customer(id)));
    answer(res, 200, customer(id));
  });
  const sockets = new Set<Socket>();
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  // The service never keeps a process alive on its own (a job run by `eddy run` ends when it is done).
  server.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An HTTP error answer (the status says whether trying again may help: 5xx). */
export class HttpError extends Error {
  readonly status: number;
  constructor(status: number, url: string) {
    super(`GET ${url} answered ${status}`);
    this.name = "HttpError";
    this.status = status;
  }
}

/** GETs `url` through `agent` and parses the JSON answer; rejects with HttpError unless 200. */
export function getJson<T>(agent: Agent, url: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    get(url, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        if (res.statusCode !== 200) return reject(new HttpError(res.statusCode ?? 0, url));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as T);
        } catch (e) {
          reject(e);
        }
      });
    }).on("error", reject);
  });
}

/** A keep-alive agent for one subtask's requests (create it in the async function's open()). */
export const keepAliveAgent = (maxSockets: number): Agent => new Agent({ keepAlive: true, maxSockets });
