/**
 * The Confluent client on worker threads. Its native part (librdkafka's binding) registers as a
 * plain NODE_MODULE and runs its callbacks on the default (main) event loop, so it can be loaded
 * only on a process's main thread: in a worker thread `require` fails ("Module did not
 * self-register"). So, in a worker thread, `confluentKafkaClient` returns a proxy that sends each
 * call to a host on the main thread over BroadcastChannels (structured clone, same process: no
 * socket, nothing leaves the process), where a real client per proxy does the work.
 *
 * The host starts on the main thread when KafkaSource/KafkaSink are built there with
 * `bootstrapServers` (the job is defined on the main thread in every mode) or when
 * `confluentKafkaClient` is called there. A worker's call that no host answers in time fails with
 * NETWORK saying so. When a worker thread exits (normally, by `process.exit`, by a crash or by
 * `terminate`), the host closes the clients it holds for it: it learns of every Worker created
 * after it started through Node's `worker_threads` diagnostics channel and listens for its `exit`
 * (a transactional producer closed there aborts nothing on the broker; the next producer that
 * initializes its id fences it and aborts what it left open). Cost: one structured clone per fetch or send each way, and
 * every thread's Kafka I/O goes through the main thread's event loop (docs/benchmarks.md).
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { BroadcastChannel, isMainThread, threadId, type Worker } from "node:worker_threads";
import { KafkaClientError, type CommittedOffset, type KafkaClient, type KafkaErrorCode, type KafkaProducer, type ProducerOptions } from "./client.ts";
import { rpcKafkaClient } from "./rpc-client.ts";

const HOST = "eddy-kafka-confluent-host";
const replies = (thread: number): string => `eddy-kafka-confluent-reply-${thread}`;

interface Call {
  readonly kind: "call";
  readonly from: number;
  readonly id: number;
  /** The proxy's client (per thread). */
  readonly client: number;
  readonly op: string;
  readonly args: unknown[];
  /** With "open": the connection options. */
}

interface Reply {
  readonly id: number;
  readonly ok?: unknown;
  readonly error?: { readonly code: KafkaErrorCode; readonly message: string; readonly client: boolean };
}

let host: BroadcastChannel | undefined;
/** The host's clients by `<thread>:<client>`. */
const hostClients = new Map<string, { client: KafkaClient; producers: Map<number, KafkaProducer> }>();

/**
 * Closes every client the host holds for worker threads and stops the host (a later client on a
 * worker thread starts it again). A worker thread that ends normally closes its own clients; those
 * of a worker that died (an exit, a crash) are held here until this is called or the process ends,
 * and their connections keep the process alive: call it before a process that ran jobs with
 * `bootstrapServers` on worker threads exits (tests do, in `after`).
 */
export async function closeConfluentHost(): Promise<void> {
  const entries = [...hostClients.values()];
  hostClients.clear();
  host?.close();
  host = undefined;
  if (watchingWorkers !== undefined) unsubscribe("worker_threads", watchingWorkers);
  watchingWorkers = undefined;
  await Promise.allSettled(entries.map(({ client }) => client.close()));
}

/** The diagnostics channel subscriber that closes the clients of workers that exit. */
let watchingWorkers: ((message: unknown) => void) | undefined;

/** Closes the clients the host holds for the worker thread `thread` (it exited). */
export function closeClientsOfThread(thread: number): Promise<unknown> {
  const entries = [...hostClients].filter(([key]) => key.startsWith(`${thread}:`));
  for (const [key] of entries) hostClients.delete(key);
  return Promise.allSettled(entries.map(([, { client }]) => client.close()));
}

/** Hosted clients (tests: those of a worker that exited are closed). */
export function hostedClientCount(): number {
  return hostClients.size;
}

/** Starts the host on the main thread (once); `make` builds a real client from connection options. */
export function ensureConfluentHost(make: (options: unknown) => KafkaClient): void {
  if (!isMainThread || host !== undefined) return;
  const clients = hostClients;
  const out = new Map<number, BroadcastChannel>();
  const channel = new BroadcastChannel(HOST);
  host = channel;
  channel.unref();
  watchingWorkers = (message) => {
    const worker = (message as { worker?: Worker }).worker;
    if (worker === undefined) return;
    const thread = worker.threadId; // -1 once it exited: read it now
    worker.once("exit", () => void closeClientsOfThread(thread));
  };
  subscribe("worker_threads", watchingWorkers);
  const reply = (to: number, r: Reply): void => {
    let c = out.get(to);
    if (c === undefined) {
      c = new BroadcastChannel(replies(to));
      c.unref();
      out.set(to, c);
    }
    c.postMessage(r);
  };
  const run = async (m: Call): Promise<unknown> => {
    const key = `${m.from}:${m.client}`;
    if (m.op === "open") {
      clients.set(key, { client: make(m.args[0]), producers: new Map() });
      return null;
    }
    const entry = clients.get(key);
    if (entry === undefined) throw new KafkaClientError("CLOSED", `no Kafka client ${key} on the main thread (closed, or opened before a restart)`);
    const { client, producers } = entry;
    if (m.op === "close") {
      clients.delete(key);
      await client.close();
      return null;
    }
    if (m.op === "producer") {
      producers.set(m.args[0] as number, client.producer(m.args[1] as ProducerOptions));
      return null;
    }
    if (m.op.startsWith("producer.")) {
      const p = producers.get(m.args[0] as number);
      if (p === undefined) throw new KafkaClientError("CLOSED", `no producer ${String(m.args[0])}`);
      const method = m.op.slice("producer.".length);
      if (method === "close") producers.delete(m.args[0] as number);
      return (p as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!.apply(p, m.args.slice(1));
    }
    const f = (client as unknown as Record<string, (...a: unknown[]) => unknown>)[m.op];
    if (typeof f !== "function" || !["partitionCount", "listTopics", "listOffsets", "fetch", "committedOffsets", "commitOffsets", "commitTransaction"].includes(m.op)) throw new Error(`unknown operation '${m.op}'`);
    const r = await f.apply(client, m.args);
    return m.op === "committedOffsets" ? (r as (CommittedOffset | undefined)[]).map((o) => o ?? null) : r;
  };
  channel.onmessage = (event: unknown) => {
    const m = (event as { data: Call }).data;
    if (m?.kind !== "call") return;
    run(m).then(
      (ok) => reply(m.from, { id: m.id, ok: ok ?? null }),
      (e: unknown) => reply(m.from, { id: m.id, error: { code: e instanceof KafkaClientError ? e.code : "INVALID_TXN_STATE", message: e instanceof Error ? e.message : String(e), client: e instanceof KafkaClientError } }),
    );
  };
}

let proxyChannels: { out: BroadcastChannel; pending: Map<number, { resolve(v: unknown): void; reject(e: unknown): void; timer: ReturnType<typeof setTimeout> }> } | undefined;
let nextId = 1;
let nextClient = 1;

function proxyRpc(client: number, op: string, args: unknown[], timeoutMs: number): Promise<unknown> {
  if (proxyChannels === undefined) {
    const pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void; timer: ReturnType<typeof setTimeout> }>();
    const inbox = new BroadcastChannel(replies(threadId));
    inbox.unref();
    inbox.onmessage = (event: unknown) => {
      const r = (event as { data: Reply }).data;
      const p = pending.get(r.id);
      if (p === undefined) return;
      pending.delete(r.id);
      clearTimeout(p.timer);
      if (r.error === undefined) p.resolve(r.ok);
      else p.reject(r.error.client ? new KafkaClientError(r.error.code, r.error.message) : new Error(r.error.message));
    };
    const out = new BroadcastChannel(HOST);
    out.unref();
    proxyChannels = { out, pending };
  }
  const { out, pending } = proxyChannels;
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new KafkaClientError("NETWORK", `the Confluent Kafka client host on the main thread did not answer ${op} within ${timeoutMs} ms (is eddy-kafka's KafkaSource/KafkaSink built with \`bootstrapServers\` on the main thread, where the job is defined?)`));
    }, timeoutMs);
    pending.set(id, { resolve, reject, timer });
    out.postMessage({ kind: "call", from: threadId, id, client, op, args } satisfies Call);
  });
}

/** A KafkaClient in a worker thread whose calls run on the main thread's host. */
export function threadProxyClient(options: unknown, requestTimeoutMs: number): KafkaClient {
  const cid = nextClient++;
  // Generous: a fetch waits up to its maxWaitMs on the broker, a commit up to the request timeout.
  const timeout = requestTimeoutMs + 30_000;
  const opened = proxyRpc(cid, "open", [options], timeout);
  opened.catch(() => {});
  let closed = false;
  const rpc = async (op: string, ...args: unknown[]): Promise<unknown> => {
    if (closed) throw new KafkaClientError("CLOSED", "the Kafka client is closed");
    await opened;
    return proxyRpc(cid, op, args, timeout);
  };
  let nextProducer = 1;
  return rpcKafkaClient(
    rpc,
    async (po) => {
      const pid = nextProducer++;
      await rpc("producer", pid, po);
      return pid;
    },
    {
      transactionsSurviveRestart: false,
      close: async () => {
        if (closed) return;
        await rpc("close").catch(() => {});
        closed = true;
      },
    },
  );
}
