/** Command-line flags of bench/nexmark.ts and bench/nexmark-one.ts: `--name value`, `--flag`. */

export interface BenchArgs {
  /** "all", one query or a comma-separated list. */
  readonly query: string;
  readonly events: number;
  readonly parallelism: number;
  /** Default: inline at parallelism 1, threads above. */
  readonly mode: "inline" | "threads";
  /** Child processes per query; figures are their medians. */
  readonly rounds: number;
  readonly json: boolean;
  /** Skip the hand-written loop (e.g. when profiling the job alone). */
  readonly noLoop: boolean;
  /**
   * Checkpoint every this long during the job (exactly-once, into a temporary directory), as
   * Flink's published runs do (every 30 s, V2); Eddy's duration syntax (10s, 500ms). Undefined: off.
   */
  readonly checkpointInterval: string | undefined;
  /** Per-record metrics (`--metrics on|off`, default on: the `metrics.enabled` key, docs/metrics.md). */
  readonly metrics: boolean;
  /** `--state-backend heap|disk` (default heap): the keyed state backend (docs/state-backends.md). */
  readonly stateBackend: "heap" | "disk";
  /** `--disk-cache-size N`: keys the disk backend caches per state table (its default when absent). */
  readonly diskCacheSize: number | undefined;
  /** `--disk-cache-bytes SIZE` (e.g. 64m): the disk backend's `state.backend.disk.cache-bytes` (its default when absent). */
  readonly diskCacheBytes: string | undefined;
  /** `--disk-local-recovery`: the disk backend's `state.backend.disk.local-recovery` (its undo sets kept during the run). */
  readonly diskLocalRecovery: boolean;
  /** `--heap-incremental`: the heap backend's `state.backend.heap.incremental` (checkpoints write the keys changed since the previous one). */
  readonly heapIncremental: boolean;
  /** `--local-aggregation on|off` (default on): the `pipeline.local-aggregation` key (docs/design/windows-state.md). */
  readonly localAggregation: boolean;
  /**
   * `--seconds S`: size each query's events so that its job runs about S seconds (from a probe run
   * over `events`), e.g. for checkpoints to complete during the run; undefined: `events` for all.
   */
  readonly seconds: number | undefined;
  /**
   * `--sink digest|discard` (default digest). digest: the sink folds a digest of every field of
   * every row, and the loop the same, so the output is checked against the loop's. discard: the
   * sink and the loop keep a reference to each row without reading it (what Flink's Nexmark
   * runs do: their blackhole sink discards rows unread); only the rows' count is compared.
   */
  readonly sink: "digest" | "discard";
  /** `--source-yield-rounds N`: the `taskmanager.scheduling.source-yield-rounds` key (its default when absent; docs/performance.md). */
  readonly sourceYieldRounds: number | undefined;
}

const FLAGS = new Set(["json", "no-loop", "disk-local-recovery", "heap-incremental"]);

function nonNegative(raw: string): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`--source-yield-rounds must be a non-negative integer, got '${raw}'`);
  return n;
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) throw new RangeError(`unexpected argument '${arg}'`);
    const [name, inline] = arg.slice(2).split("=", 2) as [string, string | undefined];
    if (FLAGS.has(name)) values.set(name, "true");
    else {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new RangeError(`--${name} needs a value`);
      values.set(name, value);
    }
  }
  const known = new Set(["query", "events", "parallelism", "mode", "rounds", "checkpoint-interval", "metrics", "state-backend", "disk-cache-size", "disk-cache-bytes", "local-aggregation", "seconds", "sink", "source-yield-rounds", ...FLAGS]);
  for (const name of values.keys()) if (!known.has(name)) throw new RangeError(`unknown flag --${name}`);
  const count = (name: string, fallback: number): number => {
    const raw = values.get(name);
    const n = raw === undefined ? fallback : Number(raw.replaceAll("_", ""));
    if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`--${name} must be a positive integer, got '${raw}'`);
    return n;
  };
  const parallelism = count("parallelism", 1);
  const mode = values.get("mode") ?? (parallelism > 1 ? "threads" : "inline");
  if (mode !== "inline" && mode !== "threads") throw new RangeError(`--mode must be inline or threads, got '${mode}'`);
  const metrics = values.get("metrics") ?? "on";
  if (metrics !== "on" && metrics !== "off") throw new RangeError(`--metrics must be on or off, got '${metrics}'`);
  const stateBackend = values.get("state-backend") ?? "heap";
  if (stateBackend !== "heap" && stateBackend !== "disk") throw new RangeError(`--state-backend must be heap or disk, got '${stateBackend}'`);
  if (values.has("disk-cache-size") && stateBackend !== "disk") throw new RangeError("--disk-cache-size needs --state-backend disk");
  if (values.has("disk-cache-bytes") && stateBackend !== "disk") throw new RangeError("--disk-cache-bytes needs --state-backend disk");
  if (values.has("disk-local-recovery") && stateBackend !== "disk") throw new RangeError("--disk-local-recovery needs --state-backend disk");
  if (values.has("heap-incremental") && stateBackend !== "heap") throw new RangeError("--heap-incremental needs the heap backend (the disk backend's checkpoints are incremental by default)");
  const sink = values.get("sink") ?? "digest";
  if (sink !== "digest" && sink !== "discard") throw new RangeError(`--sink must be digest or discard, got '${sink}'`);
  const localAggregation = values.get("local-aggregation") ?? "on";
  if (localAggregation !== "on" && localAggregation !== "off") throw new RangeError(`--local-aggregation must be on or off, got '${localAggregation}'`);
  return {
    query: values.get("query") ?? "all",
    events: count("events", 1_000_000),
    parallelism,
    mode,
    rounds: count("rounds", 1),
    json: values.has("json"),
    noLoop: values.has("no-loop"),
    checkpointInterval: values.get("checkpoint-interval"),
    metrics: metrics === "on",
    stateBackend,
    diskCacheSize: values.has("disk-cache-size") ? count("disk-cache-size", 1) : undefined,
    diskCacheBytes: values.get("disk-cache-bytes"),
    diskLocalRecovery: values.has("disk-local-recovery"),
    heapIncremental: values.has("heap-incremental"),
    localAggregation: localAggregation === "on",
    seconds: values.has("seconds") ? count("seconds", 1) : undefined,
    sink,
    sourceYieldRounds: values.has("source-yield-rounds") ? nonNegative(values.get("source-yield-rounds")!) : undefined,
  };
}
