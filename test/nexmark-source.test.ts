/**
 * The Nexmark source's split assignment end to end: with blocks handed out on request (the
 * default) and statically, inline and on worker threads, failing once at a random event (an
 * exception, or a worker thread that exits as a kill would) and restarting from the latest
 * checkpoint, or stopping and resuming from it at another parallelism: the committed events and
 * per-second counts equal a batch recomputation from the generator, record for record, and no
 * source subtask's event times went backwards. The seed is printed on failure; EDDY_TEST_SEED
 * replays a run.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { eventTimestamp, nexmarkConfig, nexmarkEvent } from "eddy";
import { runJob, type RunOptions } from "eddy/testing";
import job, { eventLine, type NexmarkJobConfig, type WindowCount } from "./jobs/nexmark-source.ts";
import { committedValues, latestCheckpoint } from "./jobs/checkpointed.ts";
import { prng } from "./fixtures.ts";

const EVENTS = 60_000;
const SPLIT_BLOCK = 1_000;
/** ~2 s a run: checkpoints (every 10 ms) complete throughout, so most failures restore from one. */
const RATE = 30_000;

const root = mkdtempSync(join(tmpdir(), "eddy-nexmark-source-"));
after(() => rmSync(root, { recursive: true, force: true }));

interface Output {
  readonly lines: string[];
  readonly counts: string[];
  readonly disorder: string[];
}

/** The answer computed from the generator alone: every event once, and the counts per type and second. */
function oracle(): Output {
  const config = nexmarkConfig();
  const lines: string[] = [];
  const counts = new Map<string, number>();
  for (let id = 0; id < EVENTS; id++) {
    const timestamp = eventTimestamp(id, config);
    const line = eventLine(nexmarkEvent(id, config), timestamp);
    lines.push(line);
    const key = `${line.slice(0, 1)}:${(Math.floor(timestamp / 1_000) + 1) * 1_000}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return { lines: lines.sort(), counts: [...counts].map(([k, n]) => `${k}:${n}`).sort(), disorder: [] };
}

function committed(outDir: string): Output {
  return {
    lines: committedValues<string>(outDir, "lines").sort(),
    counts: committedValues<WindowCount>(outDir, "counts").map((c) => `${c.type}:${c.end}:${c.count}`).sort(),
    disorder: committedValues<string>(outDir, "disorder"),
  };
}

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

async function run(options: RunOptions, config: NexmarkJobConfig): Promise<{ restarts: number; restoredFrom: readonly (number | null)[] }> {
  process.env.EDDY_NEXMARK_JOB = JSON.stringify(config);
  try {
    const handle = runJob(job, { logger: quiet, ...options });
    await handle.done;
    return { restarts: handle.restarts, restoredFrom: handle.restoredFrom };
  } finally {
    delete process.env.EDDY_NEXMARK_JOB;
  }
}

const expected = oracle();

test("the oracle: every event once, counted per type and second of event time", () => {
  assert.equal(expected.lines.length, EVENTS);
  assert.equal(
    expected.counts.reduce((n, c) => n + Number(c.split(":")[2]), 0),
    EVENTS,
  );
});

test("kill and compare: blocks on request and static, inline and on worker threads, a failure at a random event, the committed output equals the generator's", async () => {
  const seed = Number(process.env.EDDY_TEST_SEED ?? Date.now() % 1_000_000);
  const random = prng(seed);
  const rounds = [
    { assignment: "on-request", mode: "threads", parallelism: 2, kind: "exit" },
    { assignment: "on-request", mode: "threads", parallelism: 2, kind: "process" },
    { assignment: "on-request", mode: "inline", parallelism: 3, kind: "process" },
    { assignment: "static", mode: "threads", parallelism: 2, kind: "exit" },
  ] as const;
  const restoredFrom: (number | null)[] = [];
  for (const [round, { assignment, mode, parallelism, kind }] of rounds.entries()) {
    const dir = mkdtempSync(join(root, "run-"));
    const marker = join(dir, "fault-fired");
    // Within what one subtask emits even when the others take more of the blocks; round 0 late,
    // so at least one round restores from a checkpoint.
    const atEvent = round === 0 ? Math.floor((EVENTS / parallelism) * 0.8) : 1 + Math.floor(random() * (EVENTS / parallelism) * 0.8);
    const at = `seed ${seed}, round ${round}, ${assignment}, ${mode} -p ${parallelism}, '${kind}' at a subtask's event ${atEvent}`;
    const result = await run(
      {
        mode,
        parallelism,
        checkpointing: { intervalMs: 10 },
        checkpointDir: join(dir, "checkpoints"),
        jobId: "nexmark-source",
        restartStrategy: { type: "fixed-delay", attempts: 3, delayMs: 0 },
      },
      { outDir: join(dir, "out"), events: EVENTS, splitBlock: SPLIT_BLOCK, splitAssignment: assignment, ratePerSecond: RATE, fault: { kind, atEvent, marker } },
    );
    assert.ok(existsSync(marker), `${at}: the fault never fired`);
    assert.equal(result.restarts, 1, at);
    const got = committed(join(dir, "out"));
    assert.deepEqual(got.disorder, [], `${at}: a source subtask's event times went backwards`);
    assert.equal(got.lines.length, EVENTS, `${at}: committed events`);
    assert.deepEqual(got.lines, expected.lines, `${at}: committed events differ from the generator's`);
    assert.deepEqual(got.counts, expected.counts, `${at}: committed counts differ from the generator's`);
    restoredFrom.push(result.restoredFrom[0] ?? null);
  }
  assert.ok(restoredFrom.some((id) => id !== null), `seed ${seed}: no round restored from a checkpoint (${JSON.stringify(restoredFrom)})`);
});

test("blocks on request: a checkpoint taken at parallelism 2 resumes at parallelism 3 and 1 with the generator's output", async () => {
  for (const parallelism of [3, 1]) {
    const dir = mkdtempSync(join(root, `rescale-${parallelism}-`));
    const config: NexmarkJobConfig = {
      outDir: join(dir, "out"),
      events: EVENTS,
      splitBlock: SPLIT_BLOCK,
      splitAssignment: "on-request",
      ratePerSecond: RATE,
      fault: { kind: "process", atEvent: Math.floor(EVENTS * 0.3), marker: join(dir, "fault-fired") },
    };
    const checkpoints = join(dir, "checkpoints");
    // Fails once and stays down (no restarts).
    await assert.rejects(
      run({ mode: "threads", parallelism: 2, checkpointing: { intervalMs: 10 }, checkpointDir: checkpoints, jobId: "rescale", restartStrategy: { type: "none" } }, config),
      /injected fault/,
    );
    const from = latestCheckpoint(join(checkpoints, "rescale"));
    assert.ok(from !== undefined, "a checkpoint completed before the failure");
    const { fault: _, ...resumed } = config;
    await run({ mode: parallelism === 1 ? "inline" : "threads", parallelism, checkpointing: { intervalMs: 10 }, checkpointDir: checkpoints, jobId: "rescale", fromCheckpoint: from }, resumed);
    const got = committed(config.outDir);
    assert.deepEqual(got.disorder, [], `2 → ${parallelism}: a source subtask's event times went backwards`);
    assert.deepEqual(got.lines, expected.lines, `2 → ${parallelism}: committed events differ from the generator's`);
    assert.deepEqual(got.counts, expected.counts, `2 → ${parallelism}: committed counts differ from the generator's`);
  }
});
