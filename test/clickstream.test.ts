/**
 * The "your own data" example end to end (examples/clickstream/): gzipped NDJSON (and CSV) click logs →
 * session windows → NDJSON files in hourly buckets, with garbled lines to a dead-letter directory.
 * The oracle is a batch sessionization of the generated clicks (a session ends after 30 minutes
 * without a click). File to file, exactly once:
 * - a failure-free run on worker threads commits exactly the oracle's sessions, and exactly the
 *   garbled lines as dead letters, each with its file and line;
 * - runs with a worker thread ended or an exception thrown at a random click, restarted from their
 *   latest checkpoint, commit the same (3 rounds; EDDY_CS_ROUNDS more, `npm run soak:files`: 20);
 * - `eddy run` killed with SIGKILL and resumed with `--from-checkpoint` commits the same.
 * Only visible part files count: in-progress ones are hidden (a leading dot).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { DeadLetter } from "eddy";
import { runJob } from "eddy/testing";
import { writeClickFiles, type Click } from "../examples/clickstream/generate.ts";
import { SESSION_GAP_MS, type Session } from "../examples/clickstream/sessionize.ts";
import * as clickstreamJob from "./jobs/clickstream.ts";
import { EDDY_BIN, killWhenReady, lateRecordsDropped, prng } from "./fixtures.ts";
import { latestCheckpoint } from "./jobs/checkpointed.ts";

const jobFile = resolve(import.meta.dirname, "jobs/clickstream.ts");

/** Sessions of `clicks` computed in one pass per user: a gap of SESSION_GAP_MS or more starts a new one. */
function batchSessions(clicks: readonly Click[]): string[] {
  const byUser = new Map<string, Click[]>();
  for (const c of clicks) {
    let list = byUser.get(c.user);
    if (list === undefined) byUser.set(c.user, (list = []));
    list.push(c);
  }
  const out: string[] = [];
  for (const [user, list] of byUser) {
    list.sort((a, b) => a.ts - b.ts);
    let current: { start: number; last: number; clicks: number; pages: Set<string> } | undefined;
    const close = (): void => {
      if (current !== undefined) out.push(row({ user, start: current.start, end: current.last + SESSION_GAP_MS, clicks: current.clicks, pages: [...current.pages] }));
    };
    for (const c of list) {
      if (current === undefined || c.ts - current.last >= SESSION_GAP_MS) {
        close();
        current = { start: c.ts, last: c.ts, clicks: 0, pages: new Set() };
      }
      current.last = c.ts;
      current.clicks++;
      current.pages.add(c.url);
    }
    close();
  }
  return out.sort();
}

/** A session as compared: pages as a set (their first-visit order depends on arrival order within a few seconds). */
const row = (s: Session): string => `${s.user}|${s.start}|${s.end}|${s.clicks}|${[...s.pages].sort().join(",")}`;

/** The files under `dir`, while a job may be writing there: one renamed or removed after the listing is left out. */
function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f, { throwIfNoEntry: false })?.isFile() === true);
}

/** Records of the visible (committed) part files under `dir`. */
function committed<T>(dir: string): T[] {
  return files(dir)
    .filter((f) => /(^|\/)part-\d+-\d+\.ndjson$/.test(f))
    .flatMap((f) =>
      readFileSync(f, "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as T),
    );
}

/** Every session bucket is an hour; each session sits in the bucket of the hour its window ended in. */
function assertBuckets(dir: string): void {
  for (const f of files(dir).filter((p) => p.endsWith(".ndjson") && !p.split("/").pop()!.startsWith("."))) {
    const m = /dt=(\d{4}-\d{2}-\d{2})\/hour=(\d{2})\/part-\d+-\d+\.ndjson$/.exec(f);
    assert.ok(m !== null, f);
    for (const s of committed<Session>(f.slice(0, f.lastIndexOf("/")))) {
      const at = new Date(s.end - 1).toISOString();
      assert.equal(`${at.slice(0, 10)}/${at.slice(11, 13)}`, `${m[1]}/${m[2]}`, `${f}: ${JSON.stringify(s)}`);
    }
  }
}

interface Data {
  readonly dir: string;
  readonly clicksDir: string;
  readonly format: "ndjson" | "csv";
  readonly expected: string[];
  readonly garbled: number;
}

function generate(users: number, hours: number, format: "ndjson" | "csv" = "ndjson"): Data {
  const dir = mkdtempSync(join(tmpdir(), "eddy-clickstream-"));
  const clicksDir = join(dir, "clicks");
  const { clicks, garbled } = writeClickFiles(clicksDir, users, hours, 1, format);
  return { dir, clicksDir, format, expected: batchSessions(clicks), garbled };
}

async function run(data: Data, name: string, options: { fault?: object; throttle?: number } = {}) {
  const out = join(data.dir, name);
  process.env.CLICKS_IN = data.clicksDir;
  process.env.CLICKS_FORMAT = data.format;
  process.env.SESSIONS_OUT = out;
  process.env.EDDY_CS_FAULT = options.fault === undefined ? "" : JSON.stringify(options.fault);
  process.env.EDDY_CS_THROTTLE = String(options.throttle ?? 0);
  try {
    const handle = runJob(clickstreamJob, {
      mode: "threads",
      parallelism: 2,
      checkpointing: { intervalMs: 20 },
      checkpointDir: join(data.dir, `${name}-checkpoints`),
      jobId: name,
      restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
    });
    await handle.done;
    return { out, restarts: handle.restarts, late: lateRecordsDropped(handle.metrics()) };
  } finally {
    for (const k of ["CLICKS_IN", "CLICKS_FORMAT", "SESSIONS_OUT", "EDDY_CS_FAULT", "EDDY_CS_THROTTLE"]) delete process.env[k];
  }
}

/**
 * `rounds` runs of `data`, each with a worker thread ended or an exception (alternating) at a
 * random click, restarted from the latest checkpoint: each commits exactly the oracle's sessions.
 */
async function faultRounds(data: Data, rounds: number): Promise<void> {
  const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 100_000);
  const random = prng(seed);
  for (let round = 0; round < rounds; round++) {
    const kind = round % 2 === 0 ? "exit" : "process";
    const atClick = 200 + Math.floor(random() * 1_500);
    const marker = join(data.dir, `fault-${round}`);
    const { out, restarts, late } = await run(data, `faulty-${round}`, { fault: { kind, atClick, marker }, throttle: 100 });
    const at = `seed ${seed}, ${data.format} round ${round} (${kind} at click ${atClick})`;
    assert.ok(existsSync(marker), `${at}: the fault fired`);
    assert.equal(restarts, 1, at);
    assert.equal(late, 0, `${at}: late clicks dropped`);
    assert.deepEqual(committed<Session>(out).map(row).sort(), data.expected, at);
    assert.equal(committed<DeadLetter>(`${out}-dead-letters`).length, data.garbled, at);
  }
}

test("clickstream example: committed sessions equal a batch sessionization; garbled lines are dead letters with file and line", async () => {
  const data = generate(300, 3);
  try {
    const { out, late } = await run(data, "failure-free");
    // Files are read in time order (modification order = hour order), so nothing is late.
    assert.equal(late, 0, "late clicks dropped");
    assert.ok(data.expected.length > 500, `${data.expected.length} sessions`);
    assert.deepEqual(committed<Session>(out).map(row).sort(), data.expected);
    assertBuckets(out);
    const dead = committed<DeadLetter>(`${out}-dead-letters`);
    assert.equal(dead.length, data.garbled);
    for (const d of dead) {
      assert.equal(d.error.code, "BAD_RECORD");
      assert.match(String(d.position?.file), /clicks-\d{4}-\d{2}-\d{2}-\d{2}\.ndjson\.gz$/);
      assert.ok(typeof d.position?.line === "number" && d.position.line >= 1);
    }
  } finally {
    rmSync(data.dir, { recursive: true, force: true });
  }
});

test("clickstream example: a worker ended or an exception at a random click, restarted from its checkpoint, commits exactly the same sessions", async () => {
  const data = generate(300, 3);
  try {
    // EDDY_CS_ROUNDS: more rounds (`npm run soak:files` runs 20), kinds alternating.
    await faultRounds(data, Number(process.env.EDDY_CS_ROUNDS ?? 3));
  } finally {
    rmSync(data.dir, { recursive: true, force: true });
  }
});

test("clickstream example, CSV.gz logs: failure-free and with a worker ended or an exception at a random click, committed sessions equal a batch sessionization; garbled rows are dead letters", async () => {
  const data = generate(300, 3, "csv");
  try {
    const clean = await run(data, "csv-failure-free");
    assert.equal(clean.late, 0, "late clicks dropped");
    assert.deepEqual(committed<Session>(clean.out).map(row).sort(), data.expected);
    const dead = committed<DeadLetter>(`${clean.out}-dead-letters`);
    assert.equal(dead.length, data.garbled);
    assert.ok(dead.every((d) => d.error.code === "BAD_RECORD" && /\.csv\.gz$/.test(String(d.position?.file))), JSON.stringify(dead[0]));
    await faultRounds(data, 2);
  } finally {
    rmSync(data.dir, { recursive: true, force: true });
  }
});

for (const format of ["ndjson", "csv"] as const) {
  test(`clickstream example (${format === "csv" ? "CSV.gz" : "NDJSON"} logs): eddy run killed with SIGKILL, resumed with --from-checkpoint, commits exactly the sessions of a batch sessionization`, async () => {
    const data = generate(15_000, 4, format);
    try {
      const out = join(data.dir, "out");
      const checkpoints = join(data.dir, "checkpoints");
      const env = { ...process.env, CLICKS_IN: data.clicksDir, CLICKS_FORMAT: format, SESSIONS_OUT: out, EDDY_CS_FAULT: "", EDDY_CS_THROTTLE: "100" };
      const args = ["run", jobFile, "-p", "2", "-D", "execution.checkpointing.interval=50ms", "--checkpoint-dir", checkpoints, "--job-id", "kill", "--no-progress"];
      const { killed, stderr } = await killWhenReady(args, env, () => files(join(checkpoints, "kill")).some((f) => f.endsWith("_manifest")) && committed(out).length > 0);
      assert.ok(killed, `the job finished before it could be killed; stderr:\n${stderr}`);
      const partial = committed<Session>(out).length;
      assert.ok(partial > 0 && partial < data.expected.length, `partial output before the kill: ${partial} of ${data.expected.length}`);
      const resumed = spawnSync(process.execPath, [EDDY_BIN, ...args, "--from-checkpoint", latestCheckpoint(join(checkpoints, "kill"))!], { encoding: "utf8", env });
      assert.equal(resumed.status, 0, resumed.stderr);
      assert.deepEqual(committed<Session>(out).map(row).sort(), data.expected);
      assert.equal(committed<DeadLetter>(`${out}-dead-letters`).length, data.garbled);
    } finally {
      rmSync(data.dir, { recursive: true, force: true });
    }
  });
}
