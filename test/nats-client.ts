/** The tests' own NATS client (the bare @nats-io packages): streams made, messages published and read back, without Eddy. */
import { after, before } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { startNats, type NatsServer } from "./nats-server.ts";

export interface NatsAdmin {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  /** Creates a stream (memory-light file storage) on `subjects`; `duplicateWindowMs` default 10 minutes. */
  addStream(name: string, subjects: readonly string[], extra?: Partial<StreamConfig>): Promise<void>;
  /** Publishes the payloads in order (at most 256 unacknowledged at once); resolves when all are stored. */
  publishAll(subject: string | ((i: number) => string), payloads: readonly (string | Uint8Array)[], headers?: (i: number) => Record<string, string>): Promise<void>;
  /** Every message of the stream in sequence order: subject, data as text, sequence, the Nats-Msg-Id header. */
  readAll(stream: string): Promise<{ subject: string; data: string; seq: number; msgId: string | undefined }[]>;
  /** The stream's message count. */
  count(stream: string): Promise<number>;
  close(): Promise<void>;
}

export async function natsAdmin(url: string): Promise<NatsAdmin> {
  const nc = await connect({ servers: url });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const { headers: makeHeaders } = await import("@nats-io/transport-node");
  return {
    nc,
    jsm,
    async addStream(name, subjects, extra = {}) {
      await jsm.streams.add({ name, subjects: [...subjects], duplicate_window: 600_000_000_000, ...extra });
    },
    async publishAll(subject, payloads, headers) {
      const inFlight = new Set<Promise<unknown>>();
      for (let i = 0; i < payloads.length; i++) {
        let h;
        if (headers !== undefined) {
          h = makeHeaders();
          for (const [k, v] of Object.entries(headers(i))) h.set(k, v);
        }
        const p = js.publish(typeof subject === "string" ? subject : subject(i), payloads[i]!, h === undefined ? {} : { headers: h });
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p)).catch(() => {});
        if (inFlight.size >= 256) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
    },
    async readAll(stream) {
      const info = await jsm.streams.info(stream);
      const out: { subject: string; data: string; seq: number; msgId: string | undefined }[] = [];
      if (info.state.messages === 0) return out;
      const consumer = await js.consumers.get(stream, { deliver_policy: "all" as never });
      while (out.length < info.state.messages) {
        const batch = await consumer.fetch({ max_messages: 5_000, expires: 2_000 });
        let got = 0;
        for await (const m of batch) {
          got++;
          out.push({ subject: m.subject, data: m.string(), seq: m.seq, msgId: m.headers?.get("Nats-Msg-Id") || undefined });
        }
        if (got === 0) break;
      }
      return out;
    },
    async count(stream) {
      return (await jsm.streams.info(stream)).state.messages;
    },
    close: () => nc.close(),
  };
}

/** A nats-server and an admin client for the tests of one file: started before them, stopped after. */
export function natsForTests(): { readonly server: NatsServer; readonly admin: NatsAdmin } {
  let server: NatsServer | undefined;
  let admin: NatsAdmin | undefined;
  before(async () => {
    server = await startNats();
    admin = await natsAdmin(server.url);
  });
  after(async () => {
    await admin?.close();
    await server?.stop();
  });
  return {
    get server() {
      return server!;
    },
    get admin() {
      return admin!;
    },
  };
}

/** Polls until `check` holds, for at most 20 s (e.g. acknowledgements: plain publishes on another connection). */
export async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within 20 s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
