/**
 * The fake broker (fake-broker.ts) served over HTTP on 127.0.0.1, so that jobs on worker threads
 * (and worker threads that exit in the middle of a transaction, leaving it open on the "broker")
 * use one broker, as they would a real one. A test starts it with `serveFakeKafka(broker)` and
 * gives the jobs its `url`; a job makes its client with `remoteFakeKafkaClient(url)`.
 *
 * One POST per call: `{ op, args }` → `{ ok }` or `{ error: { code, message } }`; bytes travel as
 * base64. The url carries a random token (requests without it are refused) and bodies are bounded.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { KafkaClientError, type FetchOptions, type FetchRequest, type Isolation, type KafkaClient, type KafkaErrorCode, type KafkaProducer, type OffsetSpec, type ProducerOptions, type ProducerRecord, type TopicPartition, type TransactionHandle } from "./client.ts";
import type { FakeKafkaBroker } from "./fake-broker.ts";
import { rpcKafkaClient } from "./rpc-client.ts";

const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface FakeKafkaServer {
  /** What `remoteFakeKafkaClient` takes (includes the token). */
  readonly url: string;
  close(): Promise<void>;
}

function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  if (raw instanceof Uint8Array) return { $b: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("base64") };
  return value;
}

function reviver(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === "object" && typeof (value as { $b?: unknown }).$b === "string") return new Uint8Array(Buffer.from((value as { $b: string }).$b, "base64"));
  return value;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Serves `broker` on 127.0.0.1 (an ephemeral port unless `port`). */
export async function serveFakeKafka(broker: FakeKafkaBroker, port = 0): Promise<FakeKafkaServer> {
  const token = randomBytes(12).toString("hex");
  const producers = new Map<number, KafkaProducer>();
  let nextProducer = 1;
  const client = broker.client();
  const call = async (op: string, args: unknown[]): Promise<unknown> => {
    switch (op) {
      case "partitionCount":
        return client.partitionCount(args[0] as string);
      case "listTopics":
        return client.listTopics();
      case "listOffsets":
        return client.listOffsets(args[0] as TopicPartition[], args[1] as OffsetSpec, args[2] as Isolation);
      case "fetch":
        return client.fetch(args[0] as FetchRequest[], args[1] as FetchOptions);
      case "committedOffsets":
        return (await client.committedOffsets(args[0] as string, args[1] as TopicPartition[])).map((o) => o ?? null);
      case "commitOffsets":
        return client.commitOffsets(args[0] as string, args[1] as FetchRequest[]);
      case "commitTransaction":
        return client.commitTransaction(args[0] as TransactionHandle);
      case "producer": {
        const id = nextProducer++;
        producers.set(id, client.producer(args[0] as ProducerOptions));
        return id;
      }
      case "producer.initTransactions":
      case "producer.beginTransaction":
      case "producer.send":
      case "producer.sendOffsetsToTransaction":
      case "producer.commitTransaction":
      case "producer.abortTransaction":
      case "producer.close": {
        const p = producers.get(args[0] as number);
        if (p === undefined) throw new KafkaClientError("CLOSED", `no producer ${String(args[0])}`);
        const method = op.slice("producer.".length);
        if (method === "close") producers.delete(args[0] as number);
        return (p as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!.apply(p, args.slice(1));
      }
      default:
        throw new Error(`unknown operation '${op}'`);
    }
  };
  const server = createServer((req, res) => {
    void (async () => {
      let answer: unknown;
      if (req.method !== "POST" || req.url !== `/${token}`) {
        res.writeHead(404).end();
        return;
      }
      try {
        const { op, args } = JSON.parse(await readBody(req), reviver) as { op: string; args: unknown[] };
        answer = { ok: (await call(op, args)) ?? null };
      } catch (e) {
        answer = { error: { code: e instanceof KafkaClientError ? e.code : "INVALID_TXN_STATE", message: e instanceof Error ? e.message : String(e), client: e instanceof KafkaClientError } };
      }
      const body = JSON.stringify(answer, replacer);
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
    })();
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/${token}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A client of the fake broker served at `url` (serveFakeKafka), usable from any thread or process. */
export function remoteFakeKafkaClient(url: string): KafkaClient {
  let closed = false;
  const rpc = async (op: string, ...args: unknown[]): Promise<unknown> => {
    if (closed) throw new KafkaClientError("CLOSED", "the client is closed");
    let text: string;
    try {
      const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ op, args }, replacer) });
      text = await res.text();
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    } catch (e) {
      throw new KafkaClientError("NETWORK", `the fake broker at ${url.replace(/\/[^/]*$/, "")} did not answer ${op}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const answer = JSON.parse(text, reviver) as { ok?: unknown; error?: { code: KafkaErrorCode; message: string; client: boolean } };
    if (answer.error !== undefined) {
      if (!answer.error.client) throw new Error(answer.error.message);
      throw new KafkaClientError(answer.error.code, answer.error.message);
    }
    return answer.ok;
  };
  return rpcKafkaClient(rpc, (options) => rpc("producer", options), {
    close: async () => {
      closed = true;
    },
  });
}
