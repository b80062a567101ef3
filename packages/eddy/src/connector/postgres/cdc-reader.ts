/**
 * The CDC source's reader: reads the snapshot splits it is given one after the other, then (in
 * one reader of the job) the stream split. All I/O is asynchronous; `pollNext` only emits what has
 * arrived and says "nothing" (with `isAvailable`) while waiting.
 *
 * Snapshot split: a temporary replication slot exports a snapshot and gives its consistent point
 * L; a REPEATABLE READ transaction imports the snapshot (SET TRANSACTION SNAPSHOT) and the slot's
 * connection is closed (the temporary slot goes with it). The split's key range is read in key
 * order, `fetchRows` at a time; a fetch is emitted whole in one `pollNext`, so the split's cursor
 * (the last key emitted) is the position a checkpoint holds. After a restore the rest of the range
 * is read under a new snapshot: a new part with its own L (cdc-splits.ts).
 *
 * Stream split: START_REPLICATION of the job's slot from the split's LSN; changes are emitted as
 * they arrive (a transaction may span checkpoints: the split then records how many of its changes
 * were passed on, and a restore skips those). The slot's confirmed position is sent to the server
 * only in `notifyCheckpointComplete`, for the position of that checkpoint: the server keeps every
 * change Eddy has not durably processed.
 */
import { EddyError } from "../../core/errors.ts";
import { alwaysAvailable, type InputStatus, type ReaderOutput, type SourceReader, type SourceReaderContext } from "../source.ts";
import { ident, literal, openCdcClient, type CdcClient } from "./cdc-connection.ts";
import { publicationNames } from "./cdc-enumerator.ts";
import { KIND_OF, type CdcConfig, type ChangeOp, type ChangeRecord } from "./cdc-options.ts";
import {
  CDC_SPLIT_VERSION,
  inRange,
  keyColumnsOf,
  keyCondition,
  keyOf,
  keyOrderSql,
  keyText,
  parseCdcSplit,
  sameKey,
  type CdcSplit,
  type CdcTable,
  type ColumnSchema,
  type FinishedSplit,
  type KeyValue,
  type SnapshotPart,
  type SnapshotSplit,
  type StreamSplit,
} from "./cdc-splits.ts";
import { valueParser, type ValueParser } from "./cdc-values.ts";
import { describePgError } from "./pg-client.ts";
import { decodePgOutput, decodeReplicationMessage, formatLsn, parseLsn, standbyStatusUpdate, type Relation, type TupleText } from "./pgoutput.ts";

/** Replication messages held before the socket is paused. */
const MAX_QUEUED = 16_384;
/** Replication messages handled per pollNext at most. */
const MAX_PER_POLL = 4_096;

const streamError = (message: string, cause?: unknown): EddyError => new EddyError("POSTGRES_CDC_STREAM_FAILED", `PostgresCdcSource: ${message}${cause === undefined ? "" : `: ${describePgError(cause)}`}`, { cause });

/** A split being read: what the reader drives. */
interface Cursor {
  poll(output: ReaderOutput<ChangeRecord>): InputStatus | "done";
  available(): Promise<void>;
  snapshot(checkpointId: number): CdcSplit;
  notifyCheckpointComplete?(checkpointId: number): void;
  close(): void;
}

/** A promise to park on, and its resolver. */
class Signal {
  #wake: (() => void) | undefined;
  #promise: Promise<void> = alwaysAvailable();
  wait(): Promise<void> {
    if (this.#wake === undefined) this.#promise = new Promise<void>((resolve) => (this.#wake = resolve));
    return this.#promise;
  }
  fire(): void {
    const w = this.#wake;
    this.#wake = undefined;
    this.#promise = alwaysAvailable();
    w?.();
  }
}

function parsersOf(types: readonly number[], config: CdcConfig): ValueParser[] {
  return types.map((t) => valueParser(t, config.numeric));
}

function rowOf(names: readonly string[], parsers: readonly ValueParser[], values: TupleText, only?: ReadonlySet<number>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (let i = 0; i < names.length; i++) {
    if (only !== undefined && !only.has(i)) continue;
    const v = values[i];
    if (v === undefined) continue;
    row[names[i]!] = v === null ? null : parsers[i]!(v);
  }
  return row;
}

class SnapshotCursor implements Cursor {
  readonly #split: SnapshotSplit;
  readonly #config: CdcConfig;
  readonly #signal = new Signal();
  /** Where this attempt started (the split's cursor when it was given to the reader). */
  readonly #attemptAfter: KeyValue | null;
  #cursor: KeyValue | null;
  #lsn: string | undefined;
  #snapshotTime = 0;
  #client: CdcClient | undefined;
  /** Fetched and not emitted yet, oldest first: one is emitted while the next is on its way. */
  readonly #batches: { rows: (string | null)[][]; names: string[]; parsers: ValueParser[]; keyIndexes: number[] }[] = [];
  /** The last key fetched (where the next query starts); `#cursor` is the last emitted. */
  #fetched: KeyValue | null;
  #fetching = false;
  #exhausted = false;
  #failure: unknown;
  #closed = false;

  constructor(split: SnapshotSplit, config: CdcConfig) {
    this.#split = split;
    this.#config = config;
    this.#cursor = split.cursor ?? split.after;
    this.#attemptAfter = this.#cursor;
    this.#fetched = this.#cursor;
    void this.#open();
  }

  get #table(): CdcTable {
    return this.#split.table;
  }

  async #open(): Promise<void> {
    let replication: CdcClient | undefined;
    try {
      replication = await openCdcClient(this.#config.connection, true);
      const slot = `eddy_snap_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
      const created = await replication.query(`CREATE_REPLICATION_SLOT ${ident(slot)} TEMPORARY LOGICAL pgoutput (SNAPSHOT 'export')`);
      const [, consistentPoint, snapshotName] = created.rows[0]!;
      this.#snapshotTime = Date.now();
      const client = await openCdcClient(this.#config.connection, false);
      // Closed meanwhile (a cancel, a restart): nothing to read.
      if (this.#closed) return void (await client.end());
      this.#client = client;
      await this.#client.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
      await this.#client.query(`SET TRANSACTION SNAPSHOT ${literal(snapshotName!)}`);
      this.#lsn = consistentPoint!;
      this.#fetch();
    } catch (e) {
      this.#fail(streamError(`could not open the snapshot of ${this.#split.splitId}`, e));
    } finally {
      // The temporary slot goes with its connection; the imported snapshot stays with the transaction.
      await replication?.end();
    }
  }

  #fail(e: unknown): void {
    this.#failure ??= e;
    this.#signal.fire();
  }

  #fetch(): void {
    if (this.#closed || this.#client === undefined) return;
    this.#fetching = true;
    const t = this.#table;
    const columns = keyColumnsOf(t);
    // In key order; a composite key compares as a row value: (a, b) > ($1, $2).
    const conditions: string[] = [];
    const values: unknown[] = [];
    const from = this.#fetched;
    if (from !== null) conditions.push(keyCondition(columns, ">", from, values));
    if (this.#split.upTo !== null) conditions.push(keyCondition(columns, "<=", this.#split.upTo, values));
    const sql = `SELECT * FROM ${ident(t.schema)}.${ident(t.table)}${conditions.length > 0 ? ` WHERE ${conditions.join(" AND ")}` : ""} ORDER BY ${keyOrderSql(columns)} LIMIT ${this.#config.fetchRows}`;
    this.#client.query(sql, values).then(
      (r) => {
        this.#fetching = false;
        const names = r.fields.map((f) => f.name);
        const keyIndexes = columns.map((c) => names.indexOf(c.name));
        this.#batches.push({ rows: r.rows, names, parsers: parsersOf(r.fields.map((f) => f.dataTypeID), this.#config), keyIndexes });
        if (r.rows.length > 0) this.#fetched = keyOf(r.rows[r.rows.length - 1]!, keyIndexes)!;
        if (r.rows.length < this.#config.fetchRows) this.#exhausted = true;
        else if (this.#batches.length < 2) this.#fetch();
        this.#signal.fire();
      },
      (e: unknown) => this.#fail(streamError(`the snapshot query of ${this.#split.splitId} failed`, e)),
    );
  }

  poll(output: ReaderOutput<ChangeRecord>): InputStatus | "done" {
    if (this.#failure !== undefined) throw this.#failure;
    const batch = this.#batches.shift();
    if (batch === undefined) return this.#exhausted && !this.#fetching ? "done" : "nothing";
    const lsn = this.#lsn!;
    for (const values of batch.rows) {
      let row: Record<string, unknown>;
      try {
        row = rowOf(batch.names, batch.parsers, values);
      } catch (e) {
        output.reportBadRecord({ raw: JSON.stringify(values).slice(0, 65_536), error: e, position: { table: this.#table.name, key: keyText(keyOf(values, batch.keyIndexes)!), lsn, snapshot: "true" } });
        continue;
      }
      output.collect({ op: "insert", kind: "+I", table: this.#table.name, row, lsn, commitTime: this.#snapshotTime, snapshot: true }, this.#snapshotTime);
    }
    if (batch.rows.length > 0) this.#cursor = keyOf(batch.rows[batch.rows.length - 1]!, batch.keyIndexes)!;
    if (this.#exhausted && this.#batches.length === 0) {
      void this.#client?.query("COMMIT").catch(() => {});
      return "done";
    }
    if (!this.#fetching && !this.#exhausted) this.#fetch();
    return this.#batches.length > 0 ? "more" : "nothing";
  }

  available(): Promise<void> {
    return this.#failure !== undefined || this.#batches.length > 0 ? alwaysAvailable() : this.#signal.wait();
  }

  /** The parts read so far: the earlier attempts', and this attempt's (attemptAfter, upTo]. */
  parts(upTo: KeyValue | null): SnapshotPart[] {
    const parts = [...this.#split.parts];
    const empty = upTo !== null && sameKey(upTo, this.#attemptAfter);
    if (this.#lsn !== undefined && !empty) parts.push({ after: this.#attemptAfter, upTo, lsn: this.#lsn });
    return parts;
  }

  snapshot(): SnapshotSplit {
    // Only whole fetches are emitted: the cursor is where the next read starts.
    return { ...this.#split, cursor: this.#cursor, parts: sameKey(this.#cursor, this.#attemptAfter) ? [...this.#split.parts] : this.parts(this.#cursor) };
  }

  finished(): FinishedSplit {
    return { v: CDC_SPLIT_VERSION, kind: "finished", splitId: this.#split.splitId, table: this.#table.name, parts: this.parts(this.#split.upTo) };
  }

  close(): void {
    this.#closed = true;
    void this.#client?.end();
  }
}

interface KnownRelation {
  readonly relation: Relation;
  readonly table: CdcTable | undefined;
  readonly names: string[];
  readonly parsers: ValueParser[];
  /** The key columns' positions in the relation, in key order (empty for a table the source does not read). */
  readonly keyIndexes: readonly number[];
  readonly keyColumns: ReadonlySet<number>;
}

class StreamCursor implements Cursor {
  readonly #config: CdcConfig;
  readonly #split: StreamSplit;
  readonly #signal = new Signal();
  /** Received, not handled yet: `#queue[#head..]` (Array.shift is linear on large arrays). */
  #queue: Buffer[] = [];
  #head = 0;
  readonly #tables: Map<string, CdcTable>;
  readonly #parts: Map<string, SnapshotPart[]>;
  readonly #schemas: Record<string, readonly ColumnSchema[]>;
  readonly #relations = new Map<number, KnownRelation>();
  /** checkpoint id → the position it holds. */
  readonly #pending = new Map<number, bigint>();
  #client: CdcClient | undefined;
  #heartbeat: CdcClient | undefined;
  #timers: NodeJS.Timeout[] = [];
  #paused = false;
  #failure: unknown;
  #closed = false;
  /** Resume position: the end of the last whole transaction (or a keepalive's between transactions). */
  #position: bigint;
  /** The highest position received (reported as written). */
  #received: bigint;
  #confirmed: bigint;
  #restoredTxn: { finalLsn: bigint; seen: number } | undefined;
  #txn: { finalLsn: bigint; lsnText: string; commitTimeMs: number; seen: number; skip: number } | undefined;

  constructor(split: StreamSplit, config: CdcConfig) {
    this.#config = config;
    this.#split = split;
    this.#position = parseLsn(split.lsn);
    this.#received = this.#position;
    this.#confirmed = 0n;
    this.#restoredTxn = split.txn === undefined ? undefined : { finalLsn: parseLsn(split.txn.finalLsn), seen: split.txn.seen };
    this.#tables = new Map(split.tables.map((t) => [t.name, t]));
    this.#parts = new Map(Object.entries(split.parts).map(([t, p]) => [t, [...p]]));
    this.#schemas = { ...split.schemas };
    void this.#open();
  }

  async #open(): Promise<void> {
    try {
      const check = await openCdcClient(this.#config.connection, false);
      try {
        const slot = await check.query("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", [this.#config.slot]);
        if (slot.rows.length === 0) throw new EddyError("POSTGRES_CDC_SETUP_FAILED", `PostgresCdcSource: the replication slot ${this.#config.slot} no longer exists; the changes since the checkpoint are gone. Start the job afresh (it creates the slot and reads a new snapshot).`);
        const confirmed = parseLsn(slot.rows[0]![0]!);
        if (confirmed > this.#position) {
          throw new EddyError(
            "POSTGRES_CDC_SLOT_AHEAD",
            `PostgresCdcSource: the checkpoint resumes the stream at ${formatLsn(this.#position)}, but the slot ${this.#config.slot} has confirmed ${formatLsn(confirmed)}: the changes between were released by the server. Restore from the latest completed checkpoint, or start afresh with a new slot.`,
          );
        }
        this.#confirmed = confirmed;
      } finally {
        await check.end();
      }
      const client = await openCdcClient(this.#config.connection, true);
      this.#client = client;
      if (this.#closed) return void client.end();
      client.raw.connection.on("copyData", (msg) => this.#onData(msg.chunk));
      client.raw.on("end", () => this.#fail(streamError("the replication connection was closed by the server")));
      client.raw
        .query(`START_REPLICATION SLOT ${ident(this.#config.slot)} LOGICAL ${formatLsn(this.#position)} (proto_version '1', publication_names ${publicationNames(this.#config.publication)}, messages 'true')`)
        .then(
          () => this.#fail(streamError("the server ended the replication stream")),
          (e: unknown) => this.#fail(streamError(`replication from slot ${this.#config.slot} failed`, e)),
        );
      this.#timers.push(setInterval(() => this.#sendStatus(false), this.#config.statusIntervalMs));
      if (this.#config.heartbeatQuery !== undefined) {
        this.#heartbeat = await openCdcClient(this.#config.connection, false);
        this.#timers.push(
          setInterval(() => {
            this.#heartbeat?.query(this.#config.heartbeatQuery!).catch((e: unknown) => this.#fail(streamError("the heartbeat query failed", e)));
          }, this.#config.heartbeatIntervalMs),
        );
      }
      for (const t of this.#timers) t.unref();
    } catch (e) {
      this.#fail(e instanceof EddyError ? e : streamError(`could not start reading slot ${this.#config.slot}`, e));
    }
  }

  #fail(e: unknown): void {
    if (this.#closed) return;
    this.#failure ??= e;
    this.#signal.fire();
  }

  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    if (chunk[0] === 0x6b /* 'k' */) {
      // Keepalives are answered at once (a late answer makes the server drop the connection);
      // their position is taken in order with the data, in pollNext.
      if (chunk[chunk.length - 1] === 1) this.#sendStatus(false);
    }
    // A copy: pg's parser reuses the buffer the chunk is a view of once the event returns.
    this.#queue.push(Buffer.from(chunk));
    if (this.#queue.length - this.#head >= MAX_QUEUED && !this.#paused) {
      this.#paused = true;
      this.#client?.raw.connection.stream.pause();
    }
    this.#signal.fire();
  }

  #sendStatus(reply: boolean): void {
    if (this.#client === undefined || this.#closed) return;
    try {
      this.#client.raw.connection.sendCopyFromChunk(standbyStatusUpdate(this.#received, this.#confirmed, Date.now(), reply));
    } catch (e) {
      this.#fail(streamError("could not send the standby status", e));
    }
  }

  /** Whether a change of `key` (the whole key, composite or not) in `table` committed at `finalLsn` is in a snapshot part already. */
  #inSnapshot(table: string, key: KeyValue | undefined, finalLsn: bigint): boolean {
    const parts = this.#parts.get(table);
    const t = this.#tables.get(table);
    if (parts === undefined || t === undefined || key === undefined) return false;
    const columns = keyColumnsOf(t);
    for (const p of parts) if (inRange(columns, key, p) && finalLsn < parseLsn(p.lsn)) return true;
    return false;
  }

  #relation(relation: Relation): void {
    const name = `${relation.schema}.${relation.name}`;
    const before = this.#schemas[name];
    if (before !== undefined) {
      for (const c of relation.columns) {
        const old = before.find((b) => b.name === c.name);
        if (old !== undefined && old.typeOid !== c.typeOid) {
          throw new EddyError(
            "POSTGRES_CDC_SCHEMA_CHANGE",
            `PostgresCdcSource: column ${c.name} of ${name} changed its type (type OID ${old.typeOid} → ${c.typeOid}); the job reads it as the old type. Stop the job and start it afresh for the new type, or undo the change.`,
          );
        }
      }
    }
    this.#schemas[name] = relation.columns.map((c) => ({ name: c.name, typeOid: c.typeOid }));
    const table = this.#tables.get(name);
    const names = relation.columns.map((c) => c.name);
    const keyColumns = new Set(relation.columns.flatMap((c, i) => (c.key ? [i] : [])));
    this.#relations.set(relation.oid, { relation, table, names, parsers: parsersOf(relation.columns.map((c) => c.typeOid), this.#config), keyIndexes: table === undefined ? [] : keyColumnsOf(table).map((c) => names.indexOf(c.name)), keyColumns });
  }

  #change(msg: ReturnType<typeof decodePgOutput>, output: ReaderOutput<ChangeRecord>): void {
    const txn = this.#txn!;
    txn.seen++;
    if (txn.seen <= txn.skip) return;
    const oid = (msg as { oid: number }).oid;
    const known = this.#relations.get(oid);
    const lsn = txn.lsnText;
    if (known === undefined) {
      output.reportBadRecord({ raw: JSON.stringify(msg, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v)).slice(0, 65_536), error: new Error(`a change of relation ${oid} before its Relation message`), position: { lsn, change: txn.seen } });
      return;
    }
    if (known.table === undefined) return; // a table of the publication the source does not read
    const table = known.table.name;
    const emit = (op: ChangeOp, values: TupleText, keyOnly: boolean): void => {
      if (this.#inSnapshot(table, keyOf(values, known.keyIndexes), txn.finalLsn)) return;
      let row: Record<string, unknown>;
      try {
        row = rowOf(known.names, known.parsers, values, keyOnly ? known.keyColumns : undefined);
      } catch (e) {
        output.reportBadRecord({ raw: JSON.stringify(values).slice(0, 65_536), error: e, position: { table, lsn, change: txn.seen, op } });
        return;
      }
      output.collect({ op, kind: KIND_OF[op], table, row, lsn, commitTime: txn.commitTimeMs, snapshot: false }, txn.commitTimeMs);
    };
    if (msg.tag === "insert") emit("insert", msg.row, false);
    else if (msg.tag === "delete") emit("delete", msg.old, msg.oldIsKeyOnly);
    else if (msg.tag === "update") {
      const row = msg.row;
      if (msg.old !== undefined && !msg.oldIsKeyOnly) {
        // REPLICA IDENTITY FULL: the whole row before; unchanged TOASTed values come from it.
        for (let i = 0; i < row.length; i++) if (row[i] === undefined) row[i] = msg.old[i];
        emit("update_before", msg.old, false);
        emit("update_after", row, false);
      } else if (msg.old !== undefined) {
        // The key changed, and only the old key is known: the old row is gone, a new one is there.
        emit("delete", msg.old, true);
        emit("insert", row, false);
      } else {
        emit("update_after", row, false);
      }
    }
  }

  poll(output: ReaderOutput<ChangeRecord>): InputStatus {
    if (this.#failure !== undefined) throw this.#failure;
    let handled = 0;
    while (handled < MAX_PER_POLL) {
      if (this.#head === this.#queue.length) break;
      const chunk = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined as unknown as Buffer;
      handled++;
      let message: ReturnType<typeof decodeReplicationMessage>;
      let data: ReturnType<typeof decodePgOutput>;
      try {
        message = decodeReplicationMessage(chunk);
        if (message.tag === "keepalive") {
          if (message.end > this.#received) this.#received = message.end;
          if (this.#txn === undefined && message.end > this.#position) this.#position = message.end;
          continue;
        }
        if (message.end > this.#received) this.#received = message.end;
        data = decodePgOutput(message.data);
      } catch (e) {
        throw streamError(`could not decode a replication message near ${formatLsn(this.#received)} (${e instanceof Error ? e.message : String(e)})`);
      }
      switch (data.tag) {
        case "begin": {
          const restored = this.#restoredTxn;
          this.#restoredTxn = undefined;
          this.#txn = { finalLsn: data.finalLsn, lsnText: formatLsn(data.finalLsn), commitTimeMs: data.commitTimeMs, seen: 0, skip: restored !== undefined && restored.finalLsn === data.finalLsn ? restored.seen : 0 };
          // Parts whose snapshot this transaction is past are no longer needed.
          for (const [table, parts] of this.#parts) {
            const left = parts.filter((p) => parseLsn(p.lsn) > data.finalLsn);
            if (left.length === 0) this.#parts.delete(table);
            else this.#parts.set(table, left);
          }
          break;
        }
        case "commit":
          this.#txn = undefined;
          this.#position = data.endLsn;
          break;
        case "relation":
          this.#relation(data.relation);
          break;
        case "insert":
        case "update":
        case "delete":
          this.#change(data, output);
          break;
        case "message":
          // A heartbeat (pg_logical_emit_message(false, ...)) between transactions: everything
          // committed before it has been received, so the stream may resume there.
          if (!data.transactional && this.#txn === undefined && data.lsn > this.#position) this.#position = data.lsn;
          break;
        case "truncate": {
          const names = data.oids.map((o) => this.#relations.get(o)).map((r) => (r === undefined ? "?" : `${r.relation.schema}.${r.relation.name}`));
          output.reportBadRecord({ raw: `TRUNCATE ${names.join(", ")}`, error: new Error("TRUNCATE is not passed on as changes (its rows are not in the log)"), position: { table: names.join(","), lsn: formatLsn(this.#txn?.finalLsn ?? this.#received) } });
          break;
        }
        default:
          break;
      }
    }
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head > 4_096 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    if (this.#paused && this.#queue.length - this.#head < MAX_QUEUED / 2) {
      this.#paused = false;
      this.#client?.raw.connection.stream.resume();
    }
    return this.#queue.length > this.#head ? "more" : "nothing";
  }

  available(): Promise<void> {
    return this.#failure !== undefined || this.#queue.length > this.#head ? alwaysAvailable() : this.#signal.wait();
  }

  snapshot(checkpointId: number): StreamSplit {
    this.#pending.set(checkpointId, this.#position);
    const parts: Record<string, SnapshotPart[]> = {};
    for (const [t, p] of this.#parts) parts[t] = [...p];
    return {
      ...this.#split,
      lsn: formatLsn(this.#position),
      txn: this.#txn === undefined ? undefined : { finalLsn: formatLsn(this.#txn.finalLsn), seen: this.#txn.seen },
      parts,
      schemas: { ...this.#schemas },
    };
  }

  notifyCheckpointComplete(checkpointId: number): void {
    let lsn: bigint | undefined;
    for (const [id, position] of this.#pending) {
      if (id > checkpointId) continue;
      lsn = lsn === undefined || position > lsn ? position : lsn;
      this.#pending.delete(id);
    }
    if (lsn !== undefined && lsn > this.#confirmed) {
      this.#confirmed = lsn;
      this.#sendStatus(false);
    }
  }

  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    void this.#client?.end();
    void this.#heartbeat?.end();
  }
}

export function cdcReader(context: SourceReaderContext, config: CdcConfig): SourceReader<ChangeRecord, CdcSplit> {
  const queue: (SnapshotSplit | StreamSplit)[] = [];
  /** Snapshot splits finished: reported to the enumerator, and kept to report again after a restore. */
  const finished: FinishedSplit[] = [];
  let current: { split: SnapshotSplit | StreamSplit; cursor: SnapshotCursor | StreamCursor } | undefined;
  let requested = false;
  const signal = new Signal();
  let available: Promise<void> = alwaysAvailable();

  const request = (): InputStatus => {
    if (!requested) {
      requested = true;
      context.sendSplitRequest();
    }
    available = signal.wait();
    return "nothing";
  };

  return {
    start() {
      if (queue.length === 0) request();
    },
    pollNext(output) {
      if (current === undefined) {
        const split = queue.shift();
        if (split === undefined) return request();
        current = { split, cursor: split.kind === "snapshot" ? new SnapshotCursor(split, config) : new StreamCursor(split, config) };
      }
      const status = current.cursor.poll(output);
      if (status === "done") {
        const report = (current.cursor as SnapshotCursor).finished();
        current.cursor.close();
        current = undefined;
        finished.push(report);
        context.sendSourceEvent?.(report);
        return queue.length > 0 ? "more" : request();
      }
      if (status === "nothing") available = current.cursor.available();
      return status;
    },
    isAvailable: () => available,
    addSplits(splits) {
      for (const s of splits) {
        const split = parseCdcSplit(s);
        if (split.kind === "finished") {
          // Restored: the enumerator may not have heard of it before its checkpoint.
          finished.push(split);
          context.sendSourceEvent?.(split);
        } else queue.push(split);
      }
      requested = false;
      signal.fire();
    },
    notifyNoMoreSplits() {
      // Continuous: a reader without splits waits.
    },
    snapshotState: (checkpointId) => {
      const streaming = current?.split.kind === "stream" || queue.some((s) => s.kind === "stream");
      return [...(current === undefined ? [] : [current.cursor.snapshot(checkpointId)]), ...queue, ...(streaming ? [] : finished)];
    },
    notifyCheckpointComplete(checkpointId) {
      if (current?.cursor instanceof StreamCursor) current.cursor.notifyCheckpointComplete(checkpointId);
    },
    close() {
      current?.cursor.close();
      current = undefined;
    },
  };
}
