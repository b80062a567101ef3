/**
 * The append mode's two-phase commit with PostgreSQL's prepared transactions (Flink's
 * JdbcXaSinkFunction, with `PREPARE TRANSACTION` in place of XA): names, the committer, and the
 * recovery decision after a restore.
 *
 * A transaction's name (gid) is `eddy:<job>:<hash>:<subtask>:<seq>:<epoch>`:
 * - `<job>` a slug of the job name (for people reading pg_prepared_xacts), `<hash>` a hash of the
 *   job name, the sink's operator name and its table: the sink's prefix;
 * - `<seq>` the number of the barrier the writer prepared it at, counted on from the restored
 *   checkpoint, so "newer than the checkpoint" is `seq > restored seq`;
 * - `<epoch>` random per writer instance, so a name is never reused after a restore from an older
 *   checkpoint (a committer must never commit a transaction another attempt prepared under the
 *   same name).
 *
 * Invariants: a gid is committed only by the committer, for a committable of a completed
 * checkpoint; a gid is rolled back only by a restored writer, and only when it is newer than the
 * checkpoint restored (so no completed checkpoint holds it) or on a fresh start (none does).
 */
import { createHash } from "node:crypto";
import { EddyError } from "../../core/errors.ts";
import type { Committer } from "../sink.ts";
import type { PgPool } from "./pg-client.ts";

/** The committable: one prepared transaction. Version 1. */
export interface PreparedTransaction {
  readonly v: 1;
  readonly gid: string;
}

/** The writer state: the last barrier number of an (old or current) subtask. Version 1. */
export interface AppendWriterState {
  readonly v: 1;
  readonly subtask: number;
  /** The `seq` of the transaction prepared at the checkpoint's barrier (-1: none yet). */
  readonly seq: number;
}

/** The prefix of every gid of one sink (all its subtasks). */
export function gidPrefix(jobName: string, operatorName: string, table: string): string {
  const slug = jobName.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 40) || "job";
  const hash = createHash("sha256").update(`${jobName}\0${operatorName}\0${table}`).digest("hex").slice(0, 12);
  return `eddy:${slug}:${hash}:`;
}

export const gidOf = (prefix: string, subtask: number, seq: number, epoch: string): string => `${prefix}${subtask}:${seq}:${epoch}`;

/** The subtask and seq of a gid of this prefix, or undefined for anyone else's. */
export function parseGid(prefix: string, gid: string): { subtask: number; seq: number } | undefined {
  if (!gid.startsWith(prefix)) return undefined;
  const m = /^(\d+):(\d+):[0-9a-f]+$/.exec(gid.slice(prefix.length));
  return m === null ? undefined : { subtask: Number(m[1]), seq: Number(m[2]) };
}

/**
 * Which of the sink's prepared transactions (`gids`) a writer of subtask `subtask` rolls back
 * when it starts: on a fresh start (`restored` undefined) every one of its subtask (left by an
 * earlier run of the job: no checkpoint of this run holds them); after a restore, for every
 * subtask whose state it received, those newer than that subtask's barrier in the checkpoint.
 * The older ones are held by the checkpoint, and the committer commits them.
 */
export function transactionsToRollBack(prefix: string, gids: readonly string[], subtask: number, restored: readonly AppendWriterState[] | undefined): string[] {
  const out: string[] = [];
  for (const gid of gids) {
    const g = parseGid(prefix, gid);
    if (g === undefined) continue;
    if (restored === undefined) {
      if (g.subtask === subtask) out.push(gid);
    } else if (restored.some((s) => s.subtask === g.subtask && g.seq > s.seq)) {
      out.push(gid);
    }
  }
  return out;
}

export function readWriterState(x: unknown): AppendWriterState {
  const s = x as Partial<AppendWriterState> | null;
  if (s === null || typeof s !== "object" || s.v !== 1 || !Number.isSafeInteger(s.subtask) || s.subtask! < 0 || !Number.isSafeInteger(s.seq) || s.seq! < -1) {
    throw new EddyError("POSTGRES_SINK_FAILED", `PostgresSink: the writer state in the restored checkpoint is not valid (${JSON.stringify(x)?.slice(0, 200)})`);
  }
  return { v: 1, subtask: s.subtask!, seq: s.seq! };
}

function readCommittable(x: unknown): PreparedTransaction {
  const c = x as Partial<PreparedTransaction> | null;
  if (c === null || typeof c !== "object" || c.v !== 1 || typeof c.gid !== "string" || !/^eddy:[a-z0-9-]+:[0-9a-f]+:\d+:\d+:[0-9a-f]+$/.test(c.gid)) {
    throw new EddyError("POSTGRES_SINK_FAILED", `PostgresSink: a committable in the checkpoint is not valid (${JSON.stringify(x)?.slice(0, 200)})`);
  }
  return { v: 1, gid: c.gid };
}

/** The sink's transactions prepared in the current database whose gid starts with `prefix`. */
export async function preparedTransactions(pool: PgPool, prefix: string): Promise<string[]> {
  const r = await pool.query("SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)", [prefix]);
  return r.rows.map((row) => String(row.gid));
}

/** A gid as an SQL literal (gids are made of [a-z0-9:-], checked when read: quoting is for safety). */
const literal = (gid: string): string => `'${gid.replaceAll("'", "''")}'`;

/** `COMMIT PREPARED` or `ROLLBACK PREPARED` each of `gids` still prepared; one already gone is done. */
export async function finishPrepared(pool: PgPool, gids: readonly string[], how: "COMMIT" | "ROLLBACK"): Promise<void> {
  if (gids.length === 0) return;
  const present = await pool.query("SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid = ANY($1)", [gids]);
  for (const row of present.rows) {
    try {
      await pool.query(`${how} PREPARED ${literal(String(row.gid))}`);
    } catch (e) {
      // 42704: finished meanwhile (by the committer of a concurrent attempt): nothing left to do.
      if ((e as { code?: unknown }).code !== "42704") throw e;
    }
  }
}

/**
 * Commits the prepared transactions of completed checkpoints. Idempotent: a gid no longer in
 * pg_prepared_xacts was committed before (this checkpoint's commit, repeated after a restore).
 * Failures reject and are retried by the sink operator (Sink.commitRetry).
 */
export class PreparedTransactionCommitter implements Committer<unknown> {
  readonly #pool: () => PgPool;

  constructor(pool: () => PgPool) {
    this.#pool = pool;
  }

  async commit(committables: readonly unknown[]): Promise<void> {
    await finishPrepared(this.#pool(), committables.map((c) => readCommittable(c).gid), "COMMIT");
  }
}
