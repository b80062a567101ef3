/**
 * Broadcast state end to end (issue 31): spending-limit rules that change at run time, broadcast
 * to a keyed stream of transactions (test/jobs/broadcast-rules.ts), checked against a from-scratch
 * recomputation (the oracle) inline and on worker threads; read-only enforcement and
 * applyToKeyedState in a running job; a savepoint taken at parallelism 2 restored at 1 and 3, where
 * every new subtask has the whole broadcast state (the rules source has finished by then, so the
 * restored state is all the rules a subtask knows) and the committed output over both runs equals
 * the failure-free one; and a job whose worker is killed, restarting from its checkpoints.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  defineJob,
  EddyError,
  MapStateDescriptor,
  ValueStateDescriptor,
  type BroadcastContext,
  type BroadcastProcessFunction,
  type BroadcastReadOnlyContext,
  type Collector,
  type KeyedBroadcastProcessFunction,
  type SavepointResult,
} from "eddy";
import { collectSink, runJob, type JobHandle, type RunOptions } from "eddy/testing";
import { openSavepoint } from "eddy/savepoint";
import { assignToKeyGroup, defaultMaxParallelism, keyGroupRangeForOperator } from "../packages/eddy/src/internal.ts";
import * as rules from "./jobs/broadcast-rules.ts";
import { committedValues, latestCheckpoint, type Fault } from "./jobs/checkpointed.ts";

const RECORDS = 20_000;

interface JobEnv {
  readonly fault?: Fault;
  /** Commit into files under this directory (they outlive the run) instead of the collect sink. */
  readonly outDir?: string;
  /** The gate file of broadcast-rules.ts: created when two checkpoints are committed; the fault waits for it. */
  readonly gate?: string;
  /** Pace the transactions' source (ms after every 50 per reader; only while the gate is closed, with a gate). */
  readonly paceMs?: number;
}

/** Runs the job with `env` (the job reads it when built, on every worker); `during` runs while it does. */
async function run(options: RunOptions, env: JobEnv = {}, during?: (handle: JobHandle) => Promise<void>): Promise<JobHandle> {
  process.env.EDDY_BR_RECORDS = String(RECORDS);
  process.env.EDDY_BR_FAULT = env.fault === undefined ? "" : JSON.stringify(env.fault);
  process.env.EDDY_BR_OUT_DIR = env.outDir ?? "";
  process.env.EDDY_BR_GATE = env.gate ?? "";
  process.env.EDDY_BR_PACE_MS = String(env.paceMs ?? 0);
  try {
    const handle = runJob(rules.dynamicRulesJob, options);
    await Promise.all([handle.done, during?.(handle)]);
    return handle;
  } finally {
    for (const name of ["EDDY_BR_RECORDS", "EDDY_BR_FAULT", "EDDY_BR_OUT_DIR", "EDDY_BR_GATE", "EDDY_BR_PACE_MS"]) delete process.env[name];
  }
}

const checkedBy = async (options: RunOptions): Promise<string[]> => rules.rowsOf((await run(options)).collected<rules.Checked>("checked"));

const expected = rules.rowsOf(rules.expectedChecks(RECORDS));

test("rules broadcast to a keyed stream give the oracle's output, inline at parallelism 1 and on threads at 3", async () => {
  // The oracle itself must be sensitive to the rules: some transactions break some, not all do.
  const broken = rules.expectedChecks(RECORDS).filter((c) => c.broken !== "");
  assert.ok(broken.length > RECORDS / 10 && broken.length < RECORDS, `${broken.length} transactions break a rule`);
  assert.ok(new Set(broken.map((c) => c.broken)).size > 5, "several rule versions apply");
  assert.deepEqual(await checkedBy({ mode: "inline", parallelism: 1 }), expected);
  assert.deepEqual(await checkedBy({ mode: "threads", parallelism: 3 }), expected);
});

interface Event {
  readonly key: string;
  readonly n: number;
}

test("in a running job, broadcast state is read-only on the keyed side: the job fails with BROADCAST_STATE_READ_ONLY", async () => {
  const seen = new MapStateDescriptor<string, number>("seen");
  const job = defineJob("broadcast-read-only", (env) => {
    const control = env.fromElements("x").broadcast(seen);
    env
      .fromElements<Event>({ key: "a", n: 1 })
      .keyBy((e) => e.key)
      .connect(control)
      .process({
        processElement(e, ctx) {
          (ctx.getBroadcastState(seen) as unknown as { put(k: string, v: number): void }).put(e.key, e.n);
        },
        processBroadcastElement(word, ctx) {
          ctx.getBroadcastState(seen).put(word, 0);
        },
      })
      .uid("writes-on-the-wrong-side")
      .sinkTo(collectSink("never"));
  });
  await assert.rejects(runJob(job, { mode: "inline" }).done, (e) => e instanceof EddyError && e.code === "BROADCAST_STATE_READ_ONLY" && /read-only/.test(e.message));
});

test("applyToKeyedState in a running job visits, on each subtask, exactly the keys that subtask holds state for", async () => {
  const total = new ValueStateDescriptor<number>("total");
  const audits = new MapStateDescriptor<string, number>("audits");
  const keys = Array.from({ length: 60 }, (_, i) => `k${i}`);
  type Out = { kind: "seen"; key: string; subtask: number } | { kind: "visited"; audit: string; key: string; total: number; subtask: number };
  const fn: KeyedBroadcastProcessFunction<string, Event, string, Out> & { subtask: number } = {
    subtask: -1,
    open(ctx) {
      this.subtask = ctx.subtaskIndex;
    },
    processElement(e, ctx, out: Collector<Out>) {
      const state = ctx.getState(total);
      state.update((state.value() ?? 0) + e.n);
      out.collect({ kind: "seen", key: e.key, subtask: this.subtask });
    },
    processBroadcastElement(audit, ctx, out) {
      ctx.getBroadcastState(audits).put(audit, 1);
      ctx.applyToKeyedState(total, (key, state) => out.collect({ kind: "visited", audit, key, total: state.value()!, subtask: this.subtask }));
    },
  };
  const job = defineJob("broadcast-apply-to-keyed-state", (env) => {
    const control = env.fromElements("audit-1", "audit-2").broadcast(audits);
    env
      .fromCollection(keys.flatMap((key, i) => Array.from({ length: 1 + (i % 3) }, (_, n) => ({ key, n: n + 1 }))))
      .keyBy((e) => e.key)
      .connect(control)
      .process(fn)
      .uid("audit")
      .sinkTo(collectSink("out"));
  });
  // Inline: the job is defined here, and worker threads rebuild a job from its module.
  const handle = runJob(job, { mode: "inline", parallelism: 3 });
  await handle.done;
  const out = handle.collected<Out>("out");
  const maxParallelism = defaultMaxParallelism(3);
  const owner = (key: string): number => {
    const kg = assignToKeyGroup(key, maxParallelism);
    return [0, 1, 2].find((s) => {
      const r = keyGroupRangeForOperator(maxParallelism, 3, s);
      return kg >= r.start && kg <= r.end;
    })!;
  };
  const visited = out.filter((o): o is Extract<Out, { kind: "visited" }> => o.kind === "visited");
  assert.deepEqual(new Set(out.filter((o) => o.kind === "seen").map((o) => o.key)), new Set(keys));
  for (const v of visited) {
    assert.equal(v.subtask, owner(v.key), `${v.key} is visited by the subtask owning its key group`);
    assert.ok(v.total >= 1);
  }
  // Each audit reaches every subtask, and each subtask visits its own keys: no key twice per audit.
  // (Which keys an audit finds depends on when it arrives, so the set varies from run to run; the
  // harness test in broadcast-process-operator.test.ts checks the exact set.)
  for (const audit of ["audit-1", "audit-2"]) {
    const keysVisited = visited.filter((v) => v.audit === audit).map((v) => v.key);
    assert.equal(new Set(keysVisited).size, keysVisited.length, `${audit} visits each key once`);
  }
});

test("broadcast(...) takes MapStateDescriptors with distinct names and no TTL, codec or queryable name (INVALID_BROADCAST_STATE)", () => {
  const invalid = (descriptors: unknown[], message: RegExp): void => {
    const job = defineJob("invalid-broadcast", (env) => {
      (env.fromElements(1).broadcast as (...d: unknown[]) => unknown)(...descriptors);
    });
    assert.throws(() => runJob(job, { mode: "inline" }), (e) => e instanceof EddyError && e.code === "INVALID_BROADCAST_STATE" && message.test(e.message));
  };
  invalid([new ValueStateDescriptor<number>("v")], /takes MapStateDescriptors.*ValueStateDescriptor/);
  invalid([new MapStateDescriptor("a"), new MapStateDescriptor("a")], /'a' is declared twice/);
  invalid([new MapStateDescriptor("t", { ttl: { ttlMs: 1 } })], /'t' has a TTL/);
  invalid([new MapStateDescriptor("c", { codec: { id: "x", version: 1 } })], /'c' has a codec/);
  invalid([new MapStateDescriptor("q").setQueryable("q")], /'q' is queryable/);
  // Without descriptors, broadcast() is the plain broadcast partitioner, as before.
  const plain = defineJob("plain-broadcast", (env) => {
    env.fromElements(1, 2).broadcast().map((n: number) => n * 10).setParallelism(2).sinkTo(collectSink("plain"));
  });
  const handle = runJob(plain, { mode: "inline" });
  return handle.done.then(() => assert.deepEqual(handle.collected<number>("plain").sort(), [10, 10, 20, 20]));
});

test("nonKeyed.connect(broadcast) with a BroadcastProcessFunction: every subtask gets every broadcast record and its own copy of the state", async () => {
  const words = new MapStateDescriptor<string, number>("words");
  type Out = { kind: "broadcast"; word: string; size: number } | { kind: "record"; n: number; known: boolean };
  const job = defineJob("non-keyed-broadcast", (env) => {
    const control = env.fromElements("a", "b", "c").broadcast(words);
    env
      .fromSequence(1, 100)
      .connect(control)
      .process<Out>({
        processElement(n, ctx, out) {
          out.collect({ kind: "record", n, known: ctx.getBroadcastState(words).contains("a") });
        },
        processBroadcastElement(word, ctx, out) {
          const state = ctx.getBroadcastState(words);
          state.put(word, state.size);
          out.collect({ kind: "broadcast", word, size: state.size });
        },
      })
      .uid("non-keyed")
      .sinkTo(collectSink("out"));
  });
  const handle = runJob(job, { mode: "inline", parallelism: 2 });
  await handle.done;
  const out = handle.collected<Out>("out");
  assert.deepEqual(out.flatMap((o) => (o.kind === "record" ? [o.n] : [])).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i + 1));
  const seen = out.flatMap((o) => (o.kind === "broadcast" ? [`${o.word}:${o.size}`] : [])).sort();
  // Each of the 2 subtasks saw a, b, c in order (one source subtask), its state growing to 3.
  assert.deepEqual(seen, ["a:1", "a:1", "b:2", "b:2", "c:3", "c:3"]);
});

test("a broadcast process function may be given as a factory: one instance per subtask (#private fields work)", async () => {
  const words = new MapStateDescriptor<string, number>("words");
  let made = 0;
  class Counting implements BroadcastProcessFunction<number, string, string> {
    readonly #instance = ++made;
    #records = 0;
    processElement(n: number, ctx: BroadcastReadOnlyContext, out: Collector<string>): void {
      if (++this.#records === 50) out.collect(`instance ${this.#instance}: 50 records, knows ${[...ctx.getBroadcastState(words).keys()].sort().join("")}`);
    }
    processBroadcastElement(word: string, ctx: BroadcastContext): void {
      ctx.getBroadcastState(words).put(word, 1);
    }
  }
  const job = defineJob("broadcast-factory", (env) => {
    const control = env.fromElements("a").broadcast(words);
    env.fromSequence(1, 100).connect(control).process<string>(() => new Counting()).sinkTo(collectSink("out"));
  });
  const handle = runJob(job, { mode: "inline", parallelism: 2 });
  await handle.done;
  assert.equal(made, 2, "the factory ran once per subtask");
  assert.equal(new Set(handle.collected<string>("out").map((line) => line.split(":")[0])).size, 2, "two instances, each with its own fields");
});

/** Every rule version, by rule, in version order: what each subtask's broadcast state ends up holding. */
function allRuleVersions(): Map<unknown, unknown> {
  const all = new Map<unknown, unknown>();
  for (const v of rules.ruleVersions(RECORDS)) all.set(v.rule, [...((all.get(v.rule) as rules.RuleVersion[] | undefined) ?? []), v]);
  return all;
}

const byVersion = (map: Map<unknown, unknown>): Map<unknown, unknown> =>
  new Map([...map].map(([k, v]) => [k, [...(v as rules.RuleVersion[])].sort((a, b) => a.version - b.version)]));

test("a savepoint taken at parallelism 2 restores at 1 and 3: every new subtask has the whole broadcast state, and the output is the failure-free one", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-broadcast-rescale-"));
  try {
    const first = join(dir, "out-first");
    let savepoint: SavepointResult | undefined;
    const handle = await run(
      { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 10 }, checkpointDir: join(dir, "checkpoints"), jobId: "broadcast-rescale" },
      // Paced: ~4 s of input per reader, so the job is still running when a checkpoint committed
      // output and when the savepoint completes, also on a loaded machine (checkpoints took 1-5 s
      // with a load of 14 on 2 cores).
      { outDir: first, paceMs: 20 },
      async (h) => {
        // Stop once a checkpoint committed some output: the savepoint is then mid-stream.
        while (committedValues(first, "checked").length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        savepoint = await h.stop({ savepoint: true, dir: join(dir, "savepoints") });
      },
    );
    assert.equal(handle.status(), "stopped");
    assert.ok(savepoint !== undefined);
    const before = committedValues<rules.Checked>(first, "checked").length;
    assert.ok(before > 0 && before < RECORDS, `stopped part way (${before} of ${RECORDS} committed)`);
    // The rules source emits its 60 records in its first poll, before the first checkpoint
    // completed: the savepoint holds every rule version, which is all a restored subtask will
    // ever know of the rules (the restored rules source has nothing left to emit).
    const written = (await openSavepoint(savepoint.path)).broadcastState("check-rules", rules.ruleHistory.name);
    assert.equal(written.length, 2, "both old subtasks wrote the broadcast state");
    for (const map of written) assert.deepEqual(byVersion(map), allRuleVersions(), "each old subtask wrote every rule version");

    for (const parallelism of [1, 3]) {
      const out = join(dir, `out-${parallelism}`);
      cpSync(first, out, { recursive: true });
      const checkpoints = join(dir, `checkpoints-${parallelism}`);
      const jobId = `broadcast-rescaled-${parallelism}`;
      await run(
        { mode: parallelism === 1 ? "inline" : "threads", parallelism, checkpointing: { intervalMs: 10, retained: 1_000 }, checkpointDir: checkpoints, jobId, fromSavepoint: savepoint.path },
        { outDir: out },
      );
      assert.deepEqual(rules.rowsOf(committedValues<rules.Checked>(out, "checked")), expected, `2 → ${parallelism}`);
      // The restored run's last checkpoint: each of its subtasks holds every rule version.
      const maps = (await openSavepoint(latestCheckpoint(join(checkpoints, jobId))!)).broadcastState("check-rules", rules.ruleHistory.name);
      assert.equal(maps.length, parallelism);
      for (const map of maps) assert.deepEqual(byVersion(map), allRuleVersions(), `every subtask of ${parallelism} has every rule version`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a worker killed after checkpoints completed restarts from the latest, broadcast state included, and commits exactly the failure-free output", async () => {
  const dir = mkdtempSync(join(tmpdir(), "eddy-broadcast-kill-"));
  try {
    const fault: Fault = { kind: "exit", atRecord: Math.floor(RECORDS * 0.3), marker: join(dir, "fault") };
    const handle = await run(
      { mode: "threads", parallelism: 2, checkpointing: { intervalMs: 10 }, checkpointDir: join(dir, "checkpoints"), jobId: "broadcast-kill", restartStrategy: { type: "fixed-delay", attempts: 2, delayMs: 0 } },
      { fault, gate: join(dir, "gate"), paceMs: 5 },
    );
    assert.equal(handle.restarts, 1);
    assert.ok(handle.restoredFrom[0] !== null, "restored from a checkpoint, not from scratch");
    assert.deepEqual(rules.rowsOf(handle.collected<rules.Checked>("checked")), expected);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
