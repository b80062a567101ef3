import assert from "node:assert/strict";
import { test } from "node:test";
import { resolveCheckpointConfig } from "../checkpoint/checkpoint-config.ts";
import { CONFIG_KEYS } from "./config.ts";
import { effectiveConfiguration, type ResolvedSettings } from "./effective-config.ts";

const base: ResolvedSettings = {
  given: { "rest.port": "9249", "metrics.enabled": "true" },
  parallelism: undefined,
  maxParallelism: undefined,
  checkpointing: undefined,
  checkpointDir: undefined,
  savepointDir: "/sp",
  restartStrategy: undefined,
  watchdogTimeoutMs: 60_000,
  maxWorkerHeapMb: undefined,
  parallelScavenge: "auto",
  sourceYieldRounds: 16,
  metricsEnabled: false,
  localAggregation: true,
  verifyCopyNone: false,
  autoWatermarkIntervalMs: 200,
};

test("without checkpointing: no checkpoint keys, no restarts; keys given that startJob does not resolve are listed as given, sorted", () => {
  const c = effectiveConfiguration(base);
  assert.deepEqual(c, {
    "execution.watchdog.timeout": "60000ms",
    "metrics.enabled": "false",
    "pipeline.auto-watermark-interval": "200ms",
    "pipeline.local-aggregation": "true",
    "rest.port": "9249",
    "restart-strategy.type": "none",
    "state.backend": "heap",
    "state.savepoints.dir": "/sp",
    "state.verify-copy-none": "false",
    "taskmanager.gc.parallel-scavenge": "auto",
    "taskmanager.scheduling.source-yield-rounds": "16",
  });
  assert.deepEqual(Object.keys(c), Object.keys(c).sort());
});

test("the disk state backend shows with its directory and cache size", () => {
  const c = effectiveConfiguration({ ...base, stateBackend: { kind: "disk", dir: "/state", cacheSize: 5_000, cacheBytes: 2 ** 20, incremental: true, maxChainLength: 7, localRecovery: true } });
  assert.equal(c["state.backend"], "disk");
  assert.equal(c["state.backend.disk.dir"], "/state");
  assert.equal(c["state.backend.disk.cache-size"], "5000");
  assert.equal(c["state.backend.disk.cache-bytes"], "1048576");
  assert.equal(c["state.backend.disk.incremental"], "true");
  assert.equal(c["state.backend.disk.max-chain-length"], "7");
  assert.equal(c["state.backend.disk.local-recovery"], "true");
});

test("the heap backend's incremental checkpoints show when chosen", () => {
  const c = effectiveConfiguration({ ...base, stateBackend: { kind: "heap", incremental: true, maxChainLength: 4 } });
  assert.equal(c["state.backend"], "heap");
  assert.equal(c["state.backend.heap.incremental"], "true");
  assert.equal(c["state.backend.heap.max-chain-length"], "4");
});

test("with checkpointing and a restart strategy: the resolved values, under keys config.ts accepts (or Flink's for parallelism)", () => {
  const c = effectiveConfiguration({
    ...base,
    parallelism: 4,
    maxParallelism: 256,
    checkpointing: resolveCheckpointConfig({ intervalMs: 10_000, mode: "at-least-once" }),
    checkpointDir: "/chk/job",
    restartStrategy: { type: "failure-rate", maxFailures: 3, intervalMs: 60_000, delayMs: 1_000 },
    maxWorkerHeapMb: 512,
  });
  assert.equal(c["execution.checkpointing.interval"], "10000ms");
  assert.equal(c["execution.checkpointing.mode"], "AT_LEAST_ONCE");
  assert.equal(c["state.checkpoints.num-retained"], "3");
  assert.equal(c["state.checkpoints.dir"], "/chk/job");
  assert.equal(c["restart-strategy.failure-rate.max-failures-per-interval"], "3");
  assert.equal(c["taskmanager.memory.task.heap.size"], "512m");
  for (const key of Object.keys(c)) {
    if (key === "parallelism.default" || key === "pipeline.max-parallelism") continue;
    assert.ok(key in CONFIG_KEYS, `${key} is a configuration key`);
  }
});
