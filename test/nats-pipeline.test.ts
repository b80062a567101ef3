/**
 * NATS → job (a keyed running count and sum) → NATS, kill-and-compare, against a real nats-server
 * (test/nats-server.ts): worker exits and exceptions at random records on worker threads at
 * parallelism 2, and a `kill -9` of `eddy run` resumed with `--from-checkpoint`. Each time the
 * output stream holds every result exactly once: compared record for record with the output of
 * the failure-free run (and that with the totals computed here). And connections dropped mid-run
 * (through a proxy) or a server restart, each half a second down, leave the same output.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { runJob } from "eddy/testing";
import { latestCheckpoint } from "./jobs/checkpointed.ts";
import { KEYS, natsPipelineJob, type Total } from "./jobs/nats-pipeline.ts";
import { EDDY_BIN, killWhenReady, prng, withEnv } from "./fixtures.ts";
import { startNats, type NatsServer } from "./nats-server.ts";
import { natsAdmin, until, type NatsAdmin } from "./nats-client.ts";
import { tcpProxy } from "./tcp-proxy.ts";

const jobFile = resolve(import.meta.dirname, "jobs/nats-pipeline.ts");
const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const EVENTS = 10_000;
/**
 * Rounds of the worker-thread test: a worker exit and an exception, each reading the input through
 * ordered consumers and from a work-queue stream with acknowledgements; `npm run soak:nats` runs 20.
 */
const ROUNDS = Number(process.env.EDDY_NATS_ROUNDS ?? 4);

let server: NatsServer;
let admin: NatsAdmin;
/** The failure-free run's output, as sorted JSON lines. */
let oracle: string[];

/** The output stream `name` (subject `name.lower`), created empty. */
async function outputStream(name: string): Promise<string> {
  const subject = name.toLowerCase();
  await admin.addStream(name, [subject]);
  return subject;
}

async function outputOf(stream: string): Promise<string[]> {
  return (await admin.readAll(stream)).map((m) => m.data).sort();
}

before(async () => {
  server = await startNats();
  admin = await natsAdmin(server.url);
  await admin.addStream("NUMBERS", ["numbers"]);
  await admin.publishAll("numbers", Array.from({ length: EVENTS }, (_, i) => String(i + 1)));
  const subject = await outputStream("ORACLE");
  await withEnv({ EDDY_NATS_URL: server.url, EDDY_NATS_OUT: subject, EDDY_NATS_FAULT: "", EDDY_NATS_CHECKPOINTS: "", EDDY_NATS_RELEASE: "" }, () => runJob(natsPipelineJob, { mode: "inline", logger: silent }).done);
  oracle = await outputOf("ORACLE");
});
after(async () => {
  await admin?.close();
  await server?.stop();
});

test("the failure-free run publishes each key's running total once per input record", () => {
  const totals = new Map<number, { count: number; sum: number }>();
  const expected: string[] = [];
  for (let n = 1; n <= EVENTS; n++) {
    const t = totals.get(n % KEYS) ?? { count: 0, sum: 0 };
    const next = { count: t.count + 1, sum: t.sum + n };
    totals.set(n % KEYS, next);
    expected.push(JSON.stringify({ key: n % KEYS, count: next.count, sum: next.sum, n } satisfies Total));
  }
  assert.equal(oracle.length, EVENTS);
  assert.deepEqual(oracle, expected.sort());
});

test(`worker threads, parallelism 2, ${ROUNDS} rounds of a worker exit or an exception at a random record, reading through ordered consumers or a work queue with acknowledgements: the output stream equals the failure-free run's, record for record`, async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-nats-"));
  try {
    const seed = Number(process.env.EDDY_NATS_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    const kinds = ["exit", "process"] as const;
    for (let round = 0; round < ROUNDS; round++) {
      const stream = `ROUND_${round}`;
      const subject = await outputStream(stream);
      const atRecord = 1 + Math.floor(random() * EVENTS * 0.9);
      const fault = { kind: kinds[round % kinds.length]!, atRecord, marker: join(dir, `fault-${round}`) };
      const input = Math.floor(round / 2) % 2 === 0 ? "ordered" : "work-queue";
      const source = input === "work-queue" ? await workQueueInput(`WQ_ROUND_${round}`) : { EDDY_NATS_IN: "", EDDY_NATS_ACK: "" };
      const label = `seed ${seed}, round ${round}, ${input}, ${fault.kind} at ${atRecord}`;
      const jobId = `round-${round}`;
      const handle = await withEnv(
        { EDDY_NATS_URL: server.url, EDDY_NATS_OUT: subject, EDDY_NATS_FAULT: JSON.stringify(fault), EDDY_NATS_CHECKPOINTS: join(dir, "checkpoints", jobId), EDDY_NATS_RELEASE: "", ...source },
        async () => {
          const h = runJob(natsPipelineJob, {
            mode: "threads",
            parallelism: 2,
            checkpointing: { intervalMs: 20 },
            checkpointDir: join(dir, "checkpoints"),
            jobId,
            restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
            logger: silent,
          });
          await h.done;
          return h;
        },
      );
      assert.ok(handle.checkpoints().length > 0, `${label}: checkpoints completed`);
      assert.ok(existsSync(fault.marker), `${label}: the fault fired`);
      const out = await outputOf(stream);
      assert.equal(out.length, EVENTS, `${label}: one message per result`);
      assert.deepEqual(out, oracle, `${label}: the output equals the failure-free run's`);
      if (input === "work-queue") await until(`${label}: the work queue empty`, async () => (await admin.count(`WQ_ROUND_${round}`)) === 0);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const input of ["ordered", "work-queue"] as const) {
test(`eddy run killed with SIGKILL, resumed with --from-checkpoint${input === "work-queue" ? ", reading a work-queue stream with acknowledgements" : ""}: the output stream equals the failure-free run's, record for record`, async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-nats-kill-"));
  try {
    const out = input === "ordered" ? "KILLED" : "KILLED_WQ";
    const subject = await outputStream(out);
    const checkpoints = join(dir, "checkpoints");
    const release = join(dir, "release");
    const source: Record<string, string> = { EDDY_NATS_IN: "", EDDY_NATS_ACK: "" };
    if (input === "work-queue") Object.assign(source, await workQueueInput("WQ_NUMBERS"));
    const env = { ...process.env, EDDY_NATS_URL: server.url, EDDY_NATS_OUT: subject, EDDY_NATS_FAULT: "", EDDY_NATS_CHECKPOINTS: "", EDDY_NATS_RELEASE: release, ...source };
    const args = ["run", jobFile, "-p", "2", "-D", "execution.checkpointing.interval=50ms", "--checkpoint-dir", checkpoints, "--job-id", "kill", "--no-progress"];
    let published = 0;
    const { killed, stderr } = await killWhenReady(args, env, () => {
      const latest = latestCheckpoint(join(checkpoints, "kill"));
      // Polled synchronously: the count is refreshed in the background.
      void admin.count(out).then((n) => (published = n), () => {});
      return latest !== undefined && Number(/chk-(\d+)$/.exec(latest)![1]) >= 3 && published > 0;
    });
    assert.ok(killed, `the job finished before it could be killed; stderr:\n${stderr}`);
    const before = await admin.count(out);
    assert.ok(before > 0 && before < EVENTS, `partial output before the kill: ${before}`);
    if (input === "work-queue") {
      const left = await admin.count("WQ_NUMBERS");
      assert.ok(left > 0 && left < EVENTS, `completed checkpoints acknowledged part of the input, and only part: ${left} left`);
    }
    const from = latestCheckpoint(join(checkpoints, "kill"))!;
    writeFileSync(release, "");
    const resumed = spawnSync(process.execPath, [EDDY_BIN, ...args, "--from-checkpoint", from], { encoding: "utf8", env });
    assert.equal(resumed.status, 0, resumed.stderr);
    const output = await outputOf(out);
    assert.equal(output.length, EVENTS, "one message per result over both runs");
    assert.deepEqual(output, oracle);
    // The job's final checkpoint acknowledged the rest: the work queue is empty.
    if (input === "work-queue") await until("the work queue empty", async () => (await admin.count("WQ_NUMBERS")) === 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
}

/** The input numbers again, in a work-queue stream `name` (it removes each message once acknowledged), and the job's environment to read it with acknowledgements. */
async function workQueueInput(name: string): Promise<Record<string, string>> {
  await admin.addStream(name, [name.toLowerCase()], { retention: "workqueue" });
  await admin.publishAll(name.toLowerCase(), Array.from({ length: EVENTS }, (_, i) => String(i + 1)));
  return { EDDY_NATS_IN: name, EDDY_NATS_ACK: `${name.toLowerCase()}-job` };
}

for (const [outage, input] of [["the connections drop", "ordered"], ["the server restarts", "ordered"], ["the connections drop", "work-queue"]] as const) {
test(`${outage} mid-run (down for half a second)${input === "work-queue" ? ", reading a work-queue stream with acknowledgements" : ""}: the clients reconnect, fetches, consumers and publishes are retried, and the output equals the failure-free run's`, async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-nats-outage-"));
  // The job reaches the server through a proxy whose connections the test cuts.
  const proxy = await tcpProxy(server.port);
  try {
    const stream = `${outage === "the connections drop" ? "DROPPED" : "RESTARTED"}${input === "work-queue" ? "_WQ" : ""}`;
    const subject = await outputStream(stream);
    const source = input === "work-queue" ? await workQueueInput("WQ_DROPPED") : { EDDY_NATS_IN: "", EDDY_NATS_ACK: "" };
    const release = join(dir, "release");
    // The environment stays set while the job runs: worker threads read it when they (re)build the job.
    await withEnv({ EDDY_NATS_URL: `nats://127.0.0.1:${proxy.port}`, EDDY_NATS_OUT: subject, EDDY_NATS_FAULT: "", EDDY_NATS_CHECKPOINTS: "", EDDY_NATS_RELEASE: release, ...source }, async () => {
      const run = runJob(natsPipelineJob, {
        mode: "threads",
        parallelism: 2,
        checkpointing: { intervalMs: 50 },
        checkpointDir: join(dir, "checkpoints"),
        jobId: stream,
        restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 100 },
        logger: silent,
      });
      const done = run.done.then(
        () => undefined,
        (e: unknown) => e,
      );
      // Held back (1 ms per record) until some output is stored, then the outage, then full speed.
      const deadline = Date.now() + 30_000;
      while ((await admin.count(stream)) < 200) {
        assert.ok(Date.now() < deadline, "no output within 30 s");
        await new Promise((r) => setTimeout(r, 20));
      }
      if (outage === "the connections drop") await proxy.drop(500);
      else await server.restart(500);
      writeFileSync(release, "");
      assert.equal(await done, undefined, "the job ends normally");
    });
    const out = await outputOf(stream);
    if (out.length !== EVENTS) {
      const have = new Set(out.map((l) => (JSON.parse(l) as Total).n));
      const missing = oracle.map((l) => (JSON.parse(l) as Total).n).filter((n) => !have.has(n)).sort((a, b) => a - b);
      const info = await admin.jsm.streams.info(stream);
      assert.fail(`${out.length} messages, not ${EVENTS} (stream: ${JSON.stringify(info.state)}): missing n ${JSON.stringify(missing.slice(0, 50))}`);
    }
    assert.deepEqual(out, oracle);
    if (input === "work-queue") await until("the work queue empty", async () => (await admin.count("WQ_DROPPED")) === 0);
  } finally {
    await proxy.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
}
