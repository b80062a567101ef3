import { test } from "node:test";
import assert from "node:assert/strict";
import { EddyError } from "../core/errors.ts";
import { optionsFromConfig, resolveStateBackend } from "./config.ts";
import { stateBackendSpec, type StateBackendSpec } from "../state/state-backend-spec.ts";

test("configuration keys map onto run options, with units", () => {
  assert.deepEqual(
    optionsFromConfig({
      "execution.checkpointing.interval": "10s",
      "execution.checkpointing.mode": "AT_LEAST_ONCE",
      "execution.checkpointing.timeout": "5min",
      "execution.checkpointing.min-pause": "500ms",
      "execution.checkpointing.max-concurrent-checkpoints": "2",
      "execution.checkpointing.tolerable-failed-checkpoints": "3",
      "state.checkpoints.num-retained": "5",
      "state.checkpoints.dir": "/var/eddy/checkpoints",
      "restart-strategy.type": "fixed-delay",
      "restart-strategy.fixed-delay.attempts": "7",
      "restart-strategy.fixed-delay.delay": "2s",
    }),
    {
      checkpointing: { intervalMs: 10_000, mode: "at-least-once", timeoutMs: 300_000, minPauseMs: 500, maxConcurrent: 2, tolerableFailures: 3, retained: 5 },
      checkpointDir: "/var/eddy/checkpoints",
      restartStrategy: { type: "fixed-delay", attempts: 7, delayMs: 2_000 },
    },
  );
  assert.deepEqual(optionsFromConfig({ "restart-strategy.type": "exponential-delay", "restart-strategy.exponential-delay.max-backoff": "1h" }), {
    restartStrategy: { type: "exponential-delay", initialDelayMs: 1_000, maxDelayMs: 3_600_000 },
  });
  assert.deepEqual(optionsFromConfig({}), {});
  assert.deepEqual(
    optionsFromConfig({
      "execution.watchdog.timeout": "90s",
      "taskmanager.memory.task.heap.size": "2g",
      "execution.checkpointing.interval": "1s",
      "execution.checkpointing.recovery.allow-behind-committed": "TRUE",
    }),
    { watchdogTimeoutMs: 90_000, maxWorkerHeapMb: 2_048, checkpointing: { intervalMs: 1_000, allowRecoveryBehindCommitted: true } },
  );
  assert.deepEqual(optionsFromConfig({ "taskmanager.memory.task.heap.size": "512m" }), { maxWorkerHeapMb: 512 });
  assert.deepEqual(optionsFromConfig({ "pipeline.auto-watermark-interval": "20ms" }), { autoWatermarkIntervalMs: 20 });
  assert.deepEqual(optionsFromConfig({ "pipeline.auto-watermark-interval": "1s" }), { autoWatermarkIntervalMs: 1_000 });
  assert.deepEqual(optionsFromConfig({ "taskmanager.gc.parallel-scavenge": "FALSE" }), { parallelScavenge: "false" });
  assert.deepEqual(optionsFromConfig({ "taskmanager.gc.parallel-scavenge": "auto" }), { parallelScavenge: "auto" });
  assert.deepEqual(optionsFromConfig({ "taskmanager.scheduling.source-yield-rounds": "0" }), { sourceYieldRounds: 0 });
  assert.deepEqual(optionsFromConfig({ "taskmanager.scheduling.source-yield-rounds": "64" }), { sourceYieldRounds: 64 });
});

test("unknown keys and bad values are refused, naming the key", () => {
  const code = (c: string, key: RegExp) => (e: unknown) => e instanceof EddyError && e.code === c && key.test(e.message);
  assert.throws(() => optionsFromConfig({ "execution.checkpointing.intervall": "1s" }), code("UNKNOWN_CONFIG_KEY", /intervall/));
  assert.throws(() => optionsFromConfig({ "execution.checkpointing.interval": "soon" }), code("INVALID_CONFIG", /execution\.checkpointing\.interval.*soon/));
  assert.throws(() => optionsFromConfig({ "execution.checkpointing.mode": "twice" }), code("INVALID_CONFIG", /mode/));
  assert.throws(() => optionsFromConfig({ "execution.checkpointing.timeout": "1s" }), code("INVALID_CONFIG", /need execution\.checkpointing\.interval/));
  assert.throws(() => optionsFromConfig({ "restart-strategy.fixed-delay.attempts": "3" }), code("INVALID_CONFIG", /restart-strategy\.type/));
  assert.throws(() => optionsFromConfig({ "state.checkpoints.num-retained": "-1" }), code("INVALID_CONFIG", /num-retained/));
  assert.throws(() => optionsFromConfig({ "pipeline.auto-watermark-interval": "0ms" }), code("INVALID_CONFIG", /auto-watermark-interval.*positive/));
  assert.throws(() => optionsFromConfig({ "pipeline.auto-watermark-interval": "often" }), code("INVALID_CONFIG", /auto-watermark-interval/));
  assert.throws(() => optionsFromConfig({ "taskmanager.memory.task.heap.size": "512" }), code("INVALID_CONFIG", /heap\.size.*512m or 2g/));
  assert.throws(() => optionsFromConfig({ "execution.watchdog.timeout": "forever" }), code("INVALID_CONFIG", /watchdog/));
  assert.throws(() => optionsFromConfig({ "taskmanager.gc.parallel-scavenge": "off" }), code("INVALID_CONFIG", /parallel-scavenge.*auto, true or false/));
  assert.throws(() => optionsFromConfig({ "taskmanager.scheduling.source-yield-rounds": "-1" }), code("INVALID_CONFIG", /source-yield-rounds.*non-negative integer/));
  assert.throws(
    () => optionsFromConfig({ "execution.checkpointing.interval": "1s", "execution.checkpointing.recovery.allow-behind-committed": "yes" }),
    code("INVALID_CONFIG", /allow-behind-committed/),
  );
});

test("state backend keys: heap or disk, the disk backend's directory and cache size; bad values and disk keys without the disk backend are refused by name", () => {
  const keys = optionsFromConfig({ "state.backend": "disk", "state.backend.disk.dir": "/var/eddy/state", "state.backend.disk.cache-size": "5000" }).stateBackend;
  assert.deepEqual(resolveStateBackend(keys, undefined), { kind: "disk", dir: "/var/eddy/state", cacheSize: 5_000, incremental: true, maxChainLength: 10, localRecovery: false });
  // The keys refine what the job chose; state.backend=heap overrides it.
  const fromJob = { kind: "disk", dir: "/job/state", cacheSize: 10, cacheBytes: 4096, incremental: true, maxChainLength: 4, localRecovery: false } as const;
  assert.deepEqual(resolveStateBackend(optionsFromConfig({ "state.backend.disk.cache-size": "20" }).stateBackend, fromJob), { kind: "disk", dir: "/job/state", cacheSize: 20, cacheBytes: 4096, incremental: true, maxChainLength: 4, localRecovery: false });
  const cacheBytes = (value: string): number | undefined => {
    const spec = resolveStateBackend(optionsFromConfig({ "state.backend.disk.cache-bytes": value }).stateBackend, fromJob);
    return spec?.kind === "disk" ? spec.cacheBytes : undefined;
  };
  for (const [value, bytes] of [["1000", 1000], ["64m", 64 * 2 ** 20], ["2 GB", 2 * 2 ** 30], ["512k", 512 * 1024]] as const) assert.equal(cacheBytes(value), bytes, value);
  assert.deepEqual(
    resolveStateBackend(optionsFromConfig({ "state.backend.disk.incremental": "false", "state.backend.disk.max-chain-length": "0" }).stateBackend, fromJob),
    { kind: "disk", dir: "/job/state", cacheSize: 10, cacheBytes: 4096, incremental: false, maxChainLength: 0, localRecovery: false },
  );
  assert.deepEqual(
    resolveStateBackend(optionsFromConfig({ "state.backend.disk.local-recovery": "true" }).stateBackend, fromJob),
    { kind: "disk", dir: "/job/state", cacheSize: 10, cacheBytes: 4096, incremental: true, maxChainLength: 4, localRecovery: true },
  );
  assert.deepEqual(resolveStateBackend(optionsFromConfig({ "state.backend": "heap" }).stateBackend, fromJob), { kind: "heap" });
  assert.equal(resolveStateBackend(undefined, undefined), undefined);
  const refused = (entries: Record<string, string>, message: RegExp): void =>
    assert.throws(() => resolveStateBackend(optionsFromConfig(entries).stateBackend, undefined), (e: unknown) => e instanceof EddyError && message.test(e.message));
  refused({ "state.backend": "rocksdb" }, /'state\.backend' has the value 'rocksdb'; expected heap or disk/);
  refused({ "state.backend": "disk", "state.backend.disk.cache-size": "0" }, /'state\.backend\.disk\.cache-size' has the value '0'; expected a positive integer/);
  refused({ "state.backend": "disk", "state.backend.disk.cache-size": "many" }, /'state\.backend\.disk\.cache-size' has the value 'many'/);
  refused({ "state.backend": "disk", "state.backend.disk.cache-bytes": "0" }, /'state\.backend\.disk\.cache-bytes' has the value '0'/);
  refused({ "state.backend": "disk", "state.backend.disk.cache-bytes": "lots" }, /'state\.backend\.disk\.cache-bytes' has the value 'lots'/);
  refused({ "state.backend.disk.cache-bytes": "64m" }, /state\.backend\.disk\.\* keys need the disk backend/);
  refused({ "state.backend.disk.dir": "/x" }, /state\.backend\.disk\.\* keys need the disk backend/);
  refused({ "state.backend.disk.incremental": "false" }, /state\.backend\.disk\.\* keys need the disk backend/);
  refused({ "state.backend": "disk", "state.backend.disk.incremental": "yes" }, /'state\.backend\.disk\.incremental' has the value 'yes'; expected true or false/);
  refused({ "state.backend": "disk", "state.backend.disk.max-chain-length": "-1" }, /'state\.backend\.disk\.max-chain-length' has the value '-1'/);
  refused({ "state.backend": "disk", "state.backend.disk.dir": " " }, /'state\.backend\.disk\.dir'/);
  refused({ "state.backend": "disk", "state.backend.disk.local-recovery": "on" }, /'state\.backend\.disk\.local-recovery' has the value 'on'; expected true or false/);
  refused({ "state.backend": "disk", "state.backend.disk.local-recovery": "true", "state.backend.disk.incremental": "false" }, /local-recovery needs incremental checkpoints/);
});

test("heap backend keys: state.backend.heap.incremental and max-chain-length, over what the job chose; refused with the disk backend and when bad", () => {
  assert.deepEqual(resolveStateBackend(optionsFromConfig({ "state.backend.heap.incremental": "true" }).stateBackend, undefined), { kind: "heap", incremental: true });
  assert.deepEqual(
    resolveStateBackend(optionsFromConfig({ "state.backend": "heap", "state.backend.heap.incremental": "true", "state.backend.heap.max-chain-length": "3" }).stateBackend, undefined),
    { kind: "heap", incremental: true, maxChainLength: 3 },
  );
  const fromJob = { kind: "heap", incremental: true, maxChainLength: 5 } as const;
  assert.deepEqual(resolveStateBackend(optionsFromConfig({ "state.backend.heap.incremental": "false" }).stateBackend, fromJob), { kind: "heap", incremental: false, maxChainLength: 5 });
  assert.deepEqual(resolveStateBackend(optionsFromConfig({ "state.backend.heap.max-chain-length": "0" }).stateBackend, fromJob), { kind: "heap", incremental: true, maxChainLength: 0 });
  const refused = (entries: Record<string, string>, fromJobSpec: StateBackendSpec | undefined, message: RegExp): void =>
    assert.throws(() => resolveStateBackend(optionsFromConfig(entries).stateBackend, fromJobSpec), (e: unknown) => e instanceof EddyError && message.test(e.message));
  refused({ "state.backend": "disk", "state.backend.heap.incremental": "true" }, undefined, /state\.backend\.heap\.\* keys need the heap backend/);
  refused({ "state.backend.heap.incremental": "true" }, { kind: "disk", dir: "/d", cacheSize: 1, incremental: true, maxChainLength: 1, localRecovery: false }, /need the heap backend/);
  refused({ "state.backend.heap.incremental": "on" }, undefined, /'state\.backend\.heap\.incremental' has the value 'on'; expected true or false/);
  refused({ "state.backend.heap.max-chain-length": "-2" }, undefined, /'state\.backend\.heap\.max-chain-length' has the value '-2'/);
  assert.throws(() => stateBackendSpec("heap", { cacheSize: 4 }), (e: unknown) => e instanceof EddyError && /unknown option 'cacheSize' of the heap state backend/.test(e.message));
  assert.throws(() => stateBackendSpec("heap", { maxChainLength: 1.5 }), (e: unknown) => e instanceof EddyError && /max-chain-length must be a non-negative integer/.test(e.message));
});
