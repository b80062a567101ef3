/**
 * The CDC source's split enumerator (on the coordinator). At the first start it checks the server
 * (wal_level), resolves the tables and their keys, creates the publication and the slot if asked
 * to, and cuts each table into snapshot splits: primary-key ranges of about `splitRows` rows, of
 * even width for a key of one integer column (as Flink CDC splits evenly distributed numeric
 * keys), else (text, uuid, composite keys) between boundaries read from the table in one ordered
 * pass (every `splitRows`-th key, where Flink CDC queries each chunk's end in turn). The job's
 * slot is created BEFORE any snapshot split's own
 * exported snapshot, so the stream from the slot's position covers every change after every
 * split's snapshot.
 *
 * Snapshot splits go to readers on request (pull-based). A reader that finishes one reports it
 * (a source event with its parts); once every split is reported, the stream split (with every
 * part) goes to the next reader that asks: one reader streams.
 *
 * Checkpointed state: whether the setup ran, the tables, the slot's start, the splits not handed
 * out, the reports received, whether the stream split was handed out. A report that arrives after
 * the enumerator's snapshot is in the reporting reader's state, and sent again after a restore.
 */
import { EddyError } from "../../core/errors.ts";
import type { SplitEnumerator, SplitEnumeratorContext } from "../source.ts";
import { ident, literal, openCdcClient, type CdcClient } from "./cdc-connection.ts";
import type { CdcConfig } from "./cdc-options.ts";
import { CDC_SPLIT_VERSION, keyOrderSql, parseCdcSplit, type CdcSplit, type CdcTable, type KeyColumn, type KeyType, type KeyValue, type SnapshotPart, type SnapshotSplit, type StreamSplit } from "./cdc-splits.ts";
import { describePgError } from "./pg-client.ts";

export interface CdcEnumeratorState {
  readonly v: 1;
  readonly prepared: boolean;
  readonly tables: readonly CdcTable[];
  /** The slot's position when the job started: where the stream begins. */
  readonly startLsn: string;
  readonly pending: readonly SnapshotSplit[];
  readonly splitIds: readonly string[];
  readonly finished: Readonly<Record<string, { readonly table: string; readonly parts: readonly SnapshotPart[] }>>;
  readonly streamAssigned: boolean;
  /** The stream split a failed reader gave back, not assigned again yet. */
  readonly returned?: StreamSplit;
}

const KEY_TYPES = new Map<number, KeyType>([
  [20, "integer"],
  [21, "integer"],
  [23, "integer"],
  [25, "text"],
  [1043, "text"],
  [2950, "uuid"],
]);

const setupError = (message: string, cause?: unknown): EddyError => new EddyError("POSTGRES_CDC_SETUP_FAILED", `PostgresCdcSource: ${message}`, { cause });

interface ResolvedTable extends CdcTable {
  /** The rows (the planner's estimate, or counted when there is none). */
  readonly rows: number;
  /** A single integer key's range. */
  readonly min: string | null;
  readonly max: string | null;
}

async function resolveTable(client: CdcClient, schema: string, table: string, splitRows: number): Promise<ResolvedTable & { boundaries: KeyValue[] | undefined }> {
  const found = await client.query(
    `SELECT c.oid::text, a.attname, a.atttypid::text, c.reltuples::bigint::text
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
       LEFT JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) ON true
       LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
      WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')
      ORDER BY k.ord`,
    [schema, table],
  );
  const name = `${schema}.${table}`;
  if (found.rows.length === 0) throw setupError(`table ${name} does not exist (or is not a table)`);
  if (found.rows[0]![1] === null) {
    throw setupError(
      `table ${name} has no primary key; the source needs one to split the snapshot and to match each change to the snapshot range that covers it (a table without one has no order in which a change can be placed before or after a snapshot's cursor). Add a primary key (ALTER TABLE ${name} ADD PRIMARY KEY (...))`,
    );
  }
  const columns: KeyColumn[] = found.rows.map(([, attname, typeOid]) => {
    const type = KEY_TYPES.get(Number(typeOid));
    if (type === undefined) throw setupError(`table ${name}: the primary key column ${attname} is of a type this version does not split by (supported: smallint, integer, bigint, text, varchar, uuid)`);
    return { name: attname!, type };
  });
  const resolved: CdcTable = { name, schema, table, key: columns[0]!.name, keyType: columns[0]!.type, ...(columns.length > 1 ? { keyColumns: columns } : {}) };
  let rows = Number(found.rows[0]![3]);
  let min: string | null = null;
  let max: string | null = null;
  const from = `${ident(schema)}.${ident(table)}`;
  if (columns.length === 1 && columns[0]!.type === "integer") {
    const key = ident(columns[0]!.name);
    const r = await client.query(`SELECT min(${key})::text, max(${key})::text${rows < 0 ? ", count(*)::text" : ""} FROM ${from}`);
    [min, max] = r.rows[0] as [string | null, string | null];
    if (rows < 0) rows = Number(r.rows[0]![2]);
    return { ...resolved, rows, min, max, boundaries: undefined };
  }
  if (rows < 0) rows = Number((await client.query(`SELECT count(*)::text FROM ${from}`)).rows[0]![0]);
  if (rows <= splitRows) return { ...resolved, rows, min, max, boundaries: [] };
  // Every splitRows-th key in key order (the last row's excluded: no empty last range), in one
  // ordered pass over the key columns. Only a cut: the ranges cover every key whatever they are.
  const order = keyOrderSql(columns);
  const names = columns.map((c) => ident(c.name));
  const r = await client.query(
    `SELECT ${names.map((n) => `${n}::text`).join(", ")} FROM (SELECT ${names.join(", ")}, row_number() OVER (ORDER BY ${order}) AS rn, count(*) OVER () AS total FROM ${from}) s
      WHERE rn % $1 = 0 AND rn < total ORDER BY rn`,
    [splitRows],
  );
  const boundaries = r.rows.map((row): KeyValue => (columns.length === 1 ? row[0]! : row.map((v) => v!)));
  return { ...resolved, rows, min, max, boundaries };
}

/**
 * The snapshot splits of a table: a single integer key in ranges of about `splitRows` rows (if
 * the keys are dense); other keys between `boundaries` (keys in key order); one split when the
 * table is small.
 */
export function snapshotSplitsOf(table: CdcTable, rows: number, min: string | null, max: string | null, splitRows: number, boundaries?: readonly KeyValue[]): SnapshotSplit[] {
  const split = (i: number, after: KeyValue | null, upTo: KeyValue | null): SnapshotSplit => ({ v: CDC_SPLIT_VERSION, kind: "snapshot", splitId: `${table.name}#${i}`, table, after, upTo, cursor: null, parts: [] });
  if (boundaries !== undefined && boundaries.length > 0) {
    return [...boundaries, null].map((upTo, i) => split(i, i === 0 ? null : boundaries[i - 1]!, upTo));
  }
  if (table.keyType !== "integer" || table.keyColumns !== undefined || min === null || max === null || rows <= splitRows) return [split(0, null, null)];  const lo = BigInt(min);
  const hi = BigInt(max);
  const n = BigInt(Math.ceil(rows / splitRows));
  const width = (hi - lo + 1n + n - 1n) / n;
  const splits: SnapshotSplit[] = [];
  for (let i = 0n; i < n; i++) {
    const after = i === 0n ? null : String(lo + i * width - 1n);
    const upTo = i === n - 1n ? null : String(lo + (i + 1n) * width - 1n);
    splits.push(split(Number(i), after, upTo));
  }
  return splits;
}

async function prepare(config: CdcConfig): Promise<{ tables: CdcTable[]; startLsn: string; splits: SnapshotSplit[] }> {
  let client: CdcClient | undefined;
  let replication: CdcClient | undefined;
  try {
    client = await openCdcClient(config.connection, false);
    const [walLevel] = (await client.query("SHOW wal_level")).rows[0]!;
    if (walLevel !== "logical") throw setupError(`the server has wal_level = ${walLevel}; logical replication needs wal_level = logical (postgresql.conf, then restart the server)`);
    const tables: CdcTable[] = [];
    const splits: SnapshotSplit[] = [];
    for (const t of config.tables) {
      const resolved = await resolveTable(client, t.schema, t.table, config.splitRows);
      const { rows, min, max, boundaries, ...table } = resolved;
      tables.push(table);
      if (config.snapshot === "initial") splits.push(...snapshotSplitsOf(table, rows, min, max, config.splitRows, boundaries));
    }
    const quotedTables = tables.map((t) => `${ident(t.schema)}.${ident(t.table)}`).join(", ");
    const pub = await client.query("SELECT 1 FROM pg_publication WHERE pubname = $1", [config.publication]);
    if (pub.rows.length === 0) {
      if (!config.createPublication) throw setupError(`the publication ${config.publication} does not exist (createPublication is false): CREATE PUBLICATION ${ident(config.publication)} FOR TABLE ${quotedTables}`);
      await client.query(`CREATE PUBLICATION ${ident(config.publication)} FOR TABLE ${quotedTables}`);
    } else {
      const listed = new Set((await client.query("SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = $1", [config.publication])).rows.map((r) => r[0]));
      const missing = tables.filter((t) => !listed.has(t.name)).map((t) => t.name);
      if (missing.length > 0) throw setupError(`the publication ${config.publication} does not list ${missing.join(", ")}: ALTER PUBLICATION ${ident(config.publication)} ADD TABLE ...`);
    }
    const slot = await client.query("SELECT confirmed_flush_lsn::text, plugin FROM pg_replication_slots WHERE slot_name = $1", [config.slot]);
    let startLsn: string;
    if (slot.rows.length > 0) {
      const [lsn, plugin] = slot.rows[0]!;
      if (plugin !== "pgoutput") throw setupError(`the slot ${config.slot} uses the output plugin ${plugin}; the source reads pgoutput`);
      startLsn = lsn!;
    } else {
      if (!config.createSlot) throw setupError(`the replication slot ${config.slot} does not exist (createSlot is false)`);
      replication = await openCdcClient(config.connection, true);
      const created = await replication.query(`CREATE_REPLICATION_SLOT ${ident(config.slot)} LOGICAL pgoutput (SNAPSHOT 'nothing')`);
      startLsn = created.rows[0]![1]!;
    }
    return { tables, startLsn, splits };
  } catch (e) {
    if (e instanceof EddyError) throw e;
    throw setupError(`could not prepare reading (${describePgError(e)}); needs wal_level = logical, a free replication slot and WAL sender (max_replication_slots, max_wal_senders), and a user with REPLICATION`, e);
  } finally {
    await client?.end();
    await replication?.end();
  }
}

export function cdcEnumerator(context: SplitEnumeratorContext<CdcSplit>, config: CdcConfig, restored?: CdcEnumeratorState): SplitEnumerator<CdcSplit> {
  let state = {
    prepared: restored?.prepared ?? false,
    tables: restored?.tables ?? [],
    startLsn: restored?.startLsn ?? "0/0",
    pending: [...(restored?.pending ?? [])],
    splitIds: restored?.splitIds ?? [],
    finished: { ...(restored?.finished ?? {}) } as Record<string, { table: string; parts: readonly SnapshotPart[] }>,
    streamAssigned: restored?.streamAssigned ?? false,
  };
  const waiting: number[] = [];
  /** The stream split as a failed reader gave it back: assigned again as it is (its position kept). */
  let returned: StreamSplit | undefined = restored?.returned;
  let closed = false;

  const streamSplit = (): StreamSplit => {
    const parts: Record<string, SnapshotPart[]> = {};
    for (const f of Object.values(state.finished)) (parts[f.table] ??= []).push(...f.parts);
    return { v: CDC_SPLIT_VERSION, kind: "stream", splitId: "stream", tables: state.tables, lsn: state.startLsn, parts, schemas: {} };
  };

  const serve = (): void => {
    if (!state.prepared) return;
    while (waiting.length > 0) {
      const split = state.pending.shift();
      if (split !== undefined) {
        context.assignSplits(waiting.shift()!, [split]);
        continue;
      }
      if (returned !== undefined) {
        context.assignSplits(waiting.shift()!, [returned]);
        returned = undefined;
        continue;
      }
      if (!state.streamAssigned && state.splitIds.every((id) => state.finished[id] !== undefined)) {
        state.streamAssigned = true;
        context.assignSplits(waiting.shift()!, [streamSplit()]);
        continue;
      }
      // Splits are being read, or the stream is running: nothing for the others (the source is continuous).
      return;
    }
  };

  return {
    start() {
      if (state.prepared) return;
      prepare(config).then(
        ({ tables, startLsn, splits }) => {
          if (closed) return;
          state = { ...state, prepared: true, tables, startLsn, pending: splits, splitIds: splits.map((s) => s.splitId) };
          serve();
        },
        (e: unknown) => {
          if (!closed) context.failJob(e);
        },
      );
    },
    addReader() {
      // Readers ask for splits themselves.
    },
    handleSplitRequest(subtaskIndex) {
      if (!waiting.includes(subtaskIndex)) waiting.push(subtaskIndex);
      serve();
    },
    handleSourceEvent(_subtaskIndex, event) {
      const report = parseCdcSplit(event);
      if (report.kind !== "finished") return;
      state.finished[report.splitId] ??= { table: report.table, parts: report.parts };
      serve();
    },
    addSplitsBack(splits) {
      for (const s of splits) {
        const split = parseCdcSplit(s);
        if (split.kind === "snapshot") state.pending.unshift(split);
        else if (split.kind === "stream") returned = split;
      }
      serve();
    },
    snapshotState: (): CdcEnumeratorState => ({ v: 1, ...state, pending: [...state.pending], finished: { ...state.finished }, ...(returned === undefined ? {} : { returned }) }),
    close() {
      closed = true;
    },
  };
}

export function parseCdcEnumeratorState(value: unknown): CdcEnumeratorState {
  const s = value as Partial<CdcEnumeratorState> | null;
  if (
    s === null ||
    typeof s !== "object" ||
    s.v !== 1 ||
    typeof s.prepared !== "boolean" ||
    !Array.isArray(s.tables) ||
    typeof s.startLsn !== "string" ||
    !Array.isArray(s.pending) ||
    !Array.isArray(s.splitIds) ||
    typeof s.finished !== "object" ||
    s.finished === null ||
    typeof s.streamAssigned !== "boolean"
  ) {
    throw new EddyError("CHECKPOINT_CORRUPT", `the PostgreSQL CDC source's enumerator state in the checkpoint is not one this version reads: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  if (s.returned !== undefined && parseCdcSplit(s.returned).kind !== "stream") throw new EddyError("CHECKPOINT_CORRUPT", "the PostgreSQL CDC enumerator state holds a returned split that is not the stream split");
  for (const p of s.pending) if (parseCdcSplit(p).kind !== "snapshot") throw new EddyError("CHECKPOINT_CORRUPT", "the PostgreSQL CDC enumerator state holds a pending split that is not a snapshot split");
  return s as CdcEnumeratorState;
}

/** The literal for a replication command's publication_names option. */
export function publicationNames(publication: string): string {
  return literal(ident(publication));
}
