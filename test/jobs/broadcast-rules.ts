/**
 * The job of test/broadcast-state.test.ts, in its own module so worker threads can rebuild it:
 * spending-limit rules that change at run time (a broadcast stream of rule versions) applied to a
 * keyed stream of transactions.
 *
 * Deterministic whatever the interleaving of the two inputs: rule versions are kept in broadcast
 * state as a history (each with the event time it is valid from), and a transaction is evaluated
 * in an event-time timer at its own timestamp, with the rule versions valid then. When the timer
 * fires, the watermark (the minimum over both inputs) has passed the transaction's timestamp, so
 * every version valid at that time has arrived. The failure-free output is therefore a function of
 * the input alone, which `expectedAlerts` recomputes from scratch (the oracle).
 *
 * Configuration comes from the environment (read when the job is built): EDDY_BR_RECORDS,
 * EDDY_BR_FAULT (a Fault of test/jobs/checkpointed.ts, fired once per marker file in a map before
 * the keyBy, at its record or the first after the gate opened: kind "process" throws, "exit" ends
 * the worker thread as a kill would), EDDY_BR_GATE (a file the sink creates once it committed two
 * checkpoints), EDDY_BR_PACE_MS (see the transactions' source), EDDY_BR_OUT_DIR (commit into
 * files there, instead of the collect sink).
 */
import {
  defineJob,
  MapStateDescriptor,
  ValueStateDescriptor,
  WatermarkStrategy,
  type KeyedBroadcastProcessFunction,
} from "eddy";
import { committingCollectSink } from "eddy/testing";
import { committingFileSink, type Fault } from "./checkpointed.ts";
import { existsSync } from "node:fs";
import { fireOnce, markingFirstCommit } from "./fault-markers.ts";
import { pacedNumbers } from "./paced-source.ts";

/** The number of transactions, as the job is built (tests set EDDY_BR_RECORDS before running it). */
export const records = (): number => Number(process.env.EDDY_BR_RECORDS ?? 40_000);
export const ACCOUNTS = 37;
export const BASE_TS = 1_700_000_000_000;
/** Transaction i happens at BASE_TS + i * STEP_MS: timestamps are unique, so per-key order is total. */
const STEP_MS = 10;

export interface Tx {
  readonly id: number;
  readonly account: string;
  readonly amount: number;
  readonly ts: number;
}

/** A version of a rule: from `validFrom` on, an account whose spending exceeds `limit` alerts (null: the rule is deleted). */
export interface RuleVersion {
  readonly rule: string;
  readonly version: number;
  readonly validFrom: number;
  readonly limit: number | null;
}

/** One output row per transaction: the account's spending so far and the rules (name@version) it broke. */
export interface Checked {
  readonly id: number;
  readonly account: string;
  readonly spent: number;
  readonly broken: string;
}

export function transaction(id: number): Tx {
  const h = Math.imul(id ^ 0x5bd1e995, 0x27d4eb2d) >>> 0;
  return { id, account: `acct-${h % ACCOUNTS}`, amount: (h >>> 8) % 500, ts: BASE_TS + id * STEP_MS };
}

/** Rule versions over the first 90 % of the transactions' time, in validFrom order; some delete their rule. */
export function ruleVersions(records: number): RuleVersion[] {
  const out: RuleVersion[] = [];
  const versions = new Map<string, number>();
  const n = 60;
  for (let i = 0; i < n; i++) {
    const rule = `r${i % 5}`;
    const version = (versions.get(rule) ?? 0) + 1;
    versions.set(rule, version);
    const deleted = i % 11 === 10;
    out.push({ rule, version, validFrom: BASE_TS + Math.floor((i * records * 0.9) / n) * STEP_MS, limit: deleted ? null : 2_000 + ((i * 7_919) % 40) * 1_000 });
  }
  return out;
}

/** The rule versions valid at `ts` (the latest of each rule with validFrom ≤ ts), and the rules they break at `spent`. */
export function brokenRules(history: Iterable<readonly RuleVersion[]>, ts: number, spent: number): string {
  const broken: string[] = [];
  for (const versions of history) {
    let valid: RuleVersion | undefined;
    for (const v of versions) if (v.validFrom <= ts && (valid === undefined || v.version > valid.version)) valid = v;
    if (valid !== undefined && valid.limit !== null && spent > valid.limit) broken.push(`${valid.rule}@${valid.version}`);
  }
  return broken.sort().join(",");
}

export const ruleHistory = new MapStateDescriptor<string, RuleVersion[]>("rule-history");
const pending = new MapStateDescriptor<number, Tx>("pending");
const spentState = new ValueStateDescriptor<number>("spent");

export const checkRules: KeyedBroadcastProcessFunction<string, Tx, RuleVersion, Checked> = {
  processElement(tx, ctx) {
    // Evaluated when event time reaches the transaction: every rule version valid then has arrived.
    ctx.getMapState(pending).put(tx.ts, tx);
    ctx.timerService().registerEventTimeTimer(tx.ts);
  },
  processBroadcastElement(version, ctx) {
    const history = ctx.getBroadcastState(ruleHistory);
    const versions = history.get(version.rule) ?? [];
    if (!versions.some((v) => v.version === version.version)) history.put(version.rule, [...versions, version]);
  },
  onTimer(timestamp, ctx, out) {
    const txs = ctx.getMapState(pending);
    const tx = txs.get(timestamp);
    if (tx === undefined) return;
    txs.remove(timestamp);
    const spent = (ctx.getState(spentState).value() ?? 0) + tx.amount;
    ctx.getState(spentState).update(spent);
    out.collect({ id: tx.id, account: tx.account, spent, broken: brokenRules(ctx.getBroadcastState(ruleHistory).values(), timestamp, spent) });
  },
};

/** The oracle: the output recomputed from the input alone, in id order. */
export function expectedChecks(records: number): Checked[] {
  const history = new Map<string, RuleVersion[]>();
  for (const v of ruleVersions(records)) history.set(v.rule, [...(history.get(v.rule) ?? []), v]);
  const spent = new Map<string, number>();
  const out: Checked[] = [];
  for (let id = 1; id <= records; id++) {
    const tx = transaction(id);
    const s = (spent.get(tx.account) ?? 0) + tx.amount;
    spent.set(tx.account, s);
    out.push({ id, account: tx.account, spent: s, broken: brokenRules(history.values(), tx.ts, s) });
  }
  return out;
}

export const rowsOf = (rows: readonly Checked[]): string[] => rows.map((r) => `${r.id}:${r.account}:${r.spent}:${r.broken}`).sort();

function fault(): Fault | undefined {
  const raw = process.env.EDDY_BR_FAULT;
  return raw === undefined || raw === "" ? undefined : (JSON.parse(raw) as Fault);
}

export const dynamicRulesJob = defineJob("broadcast-rules", (env) => {
  const f = fault();
  const n = records();
  const gate = process.env.EDDY_BR_GATE ?? "";
  const outDir = process.env.EDDY_BR_OUT_DIR ?? "";
  const rules = env
    .fromCollection(ruleVersions(n))
    .setParallelism(1)
    .uid("rule-versions")
    .assignTimestampsAndWatermarks(WatermarkStrategy.forMonotonousTimestamps<RuleVersion>().withTimestampAssigner((v) => v.validFrom))
    .setParallelism(1)
    .broadcast(ruleHistory);
  // Transaction ids in 4 splits; with EDDY_BR_PACE_MS, a reader waits that long after every 50
  // (while the gate file, if any, does not exist): a checkpointed job then runs long enough for
  // checkpoints to complete before a fault or a stop, however loaded the machine.
  const paceMs = Number(process.env.EDDY_BR_PACE_MS ?? 0);
  const ids = pacedNumbers({ records: n, splits: 4, idPrefix: "tx", perPoll: 50, pauseMs: paceMs, inOrder: true, pausing: gate === "" ? undefined : () => !existsSync(gate) });
  const checked = env
    // Timestamps increase within each split and a reader reads its splits in order (also the
    // splits a restore deals it), so no transaction is ever late.
    .fromSource(ids, WatermarkStrategy.forMonotonousTimestamps<number>().withTimestampAssigner((id) => transaction(id).ts), "Transactions")
    .uid("transactions")
    .map((id: number) => {
      // With a gate, the fault waits for it: the first checkpoint may be taken before the rules
      // source got its split, the second (the gate opens when it is committed) never is.
      if (f !== undefined && id >= f.atRecord && (gate === "" || existsSync(gate)) && fireOnce(f.marker)) {
        if (f.kind === "exit") process.exit(3);
        throw new Error(`injected fault at transaction ${id}`);
      }
      return transaction(id);
    })
    .keyBy((tx) => tx.account)
    .connect(rules)
    .process(checkRules)
    .uid("check-rules");
  const sink = outDir === "" ? committingCollectSink<Checked>("checked") : committingFileSink<Checked>(outDir, "checked");
  checked.sinkTo(markingFirstCommit(sink, gate === "" ? undefined : gate, 2), "committed");
});

export default dynamicRulesJob;
