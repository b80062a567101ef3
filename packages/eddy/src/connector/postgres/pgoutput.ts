/**
 * The logical replication wire format the CDC source reads (PostgreSQL's "Streaming Replication
 * Protocol" and "Logical Replication Message Formats", protocol version 1 of `pgoutput`): the
 * CopyData messages of a replication connection (XLogData 'w', primary keepalive 'k') and the
 * pgoutput messages inside XLogData (Begin, Commit, Relation, Insert, Update, Delete, Truncate;
 * Origin, Type and Message are read and ignored). Pure functions over bytes, no I/O.
 *
 * LSNs are bigints; `formatLsn` / `parseLsn` convert to and from PostgreSQL's `X/Y` text.
 */

/** Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01). */
const PG_EPOCH_US = 946_684_800_000_000n;

export function parseLsn(text: string): bigint {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (m === null) throw new Error(`not an LSN: ${JSON.stringify(text)}`);
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** A PostgreSQL timestamp (µs since 2000-01-01) as epoch milliseconds. */
export function pgTimeToMs(us: bigint): number {
  return Number((us + PG_EPOCH_US) / 1000n);
}

export function msToPgTime(ms: number): bigint {
  return BigInt(ms) * 1000n - PG_EPOCH_US;
}

export interface RelationColumn {
  readonly name: string;
  readonly typeOid: number;
  /** Part of the replica identity (the key, or every column with REPLICA IDENTITY FULL). */
  readonly key: boolean;
}

export interface Relation {
  readonly oid: number;
  readonly schema: string;
  readonly name: string;
  /** 'd' default (primary key), 'n' nothing, 'f' full, 'i' index. */
  readonly replicaIdentity: string;
  readonly columns: readonly RelationColumn[];
}

/** A tuple's column values as text; null for NULL, undefined for an unchanged TOASTed value the server did not send. */
export type TupleText = (string | null | undefined)[];

export type PgOutputMessage =
  | { readonly tag: "begin"; readonly finalLsn: bigint; readonly commitTimeMs: number; readonly xid: number }
  | { readonly tag: "commit"; readonly commitLsn: bigint; readonly endLsn: bigint; readonly commitTimeMs: number }
  | { readonly tag: "relation"; readonly relation: Relation }
  | { readonly tag: "insert"; readonly oid: number; readonly row: TupleText }
  | { readonly tag: "update"; readonly oid: number; readonly old: TupleText | undefined; readonly oldIsKeyOnly: boolean; readonly row: TupleText }
  | { readonly tag: "delete"; readonly oid: number; readonly old: TupleText; readonly oldIsKeyOnly: boolean }
  | { readonly tag: "truncate"; readonly oids: readonly number[] }
  /** A logical decoding message (pg_logical_emit_message), with `messages 'true'`. */
  | { readonly tag: "message"; readonly transactional: boolean; readonly lsn: bigint; readonly prefix: string }
  | { readonly tag: "other"; readonly type: string };

/** What a replication connection's CopyData carries. */
export type ReplicationMessage =
  | { readonly tag: "xlog"; readonly start: bigint; readonly end: bigint; readonly data: Uint8Array }
  | { readonly tag: "keepalive"; readonly end: bigint; readonly replyRequested: boolean };

class Reader {
  #offset = 0;
  readonly #view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  #need(n: number): void {
    if (this.#offset + n > this.bytes.byteLength) throw new Error(`message truncated at byte ${this.#offset} (needs ${n} more of ${this.bytes.byteLength})`);
  }
  u8(): number {
    this.#need(1);
    return this.#view.getUint8(this.#offset++);
  }
  i16(): number {
    this.#need(2);
    const v = this.#view.getInt16(this.#offset);
    this.#offset += 2;
    return v;
  }
  i32(): number {
    this.#need(4);
    const v = this.#view.getInt32(this.#offset);
    this.#offset += 4;
    return v;
  }
  u32(): number {
    this.#need(4);
    const v = this.#view.getUint32(this.#offset);
    this.#offset += 4;
    return v;
  }
  u64(): bigint {
    this.#need(8);
    const v = this.#view.getBigUint64(this.#offset);
    this.#offset += 8;
    return v;
  }
  i64(): bigint {
    this.#need(8);
    const v = this.#view.getBigInt64(this.#offset);
    this.#offset += 8;
    return v;
  }
  /** A NUL-terminated string. */
  cstring(): string {
    const end = this.bytes.indexOf(0, this.#offset);
    if (end < 0) throw new Error(`unterminated string at byte ${this.#offset}`);
    const s = Buffer.from(this.bytes.buffer, this.bytes.byteOffset + this.#offset, end - this.#offset).toString("utf8");
    this.#offset = end + 1;
    return s;
  }
  text(n: number): string {
    this.#need(n);
    const s = Buffer.from(this.bytes.buffer, this.bytes.byteOffset + this.#offset, n).toString("utf8");
    this.#offset += n;
    return s;
  }
  rest(): Uint8Array {
    const r = this.bytes.subarray(this.#offset);
    this.#offset = this.bytes.byteLength;
    return r;
  }
}

/** A CopyData payload of a replication stream. */
export function decodeReplicationMessage(bytes: Uint8Array): ReplicationMessage {
  const r = new Reader(bytes);
  const kind = String.fromCharCode(r.u8());
  if (kind === "w") {
    const start = r.u64();
    const end = r.u64();
    r.i64(); // send time
    return { tag: "xlog", start, end, data: r.rest() };
  }
  if (kind === "k") {
    const end = r.u64();
    r.i64();
    return { tag: "keepalive", end, replyRequested: r.u8() === 1 };
  }
  throw new Error(`unknown replication message '${kind}'`);
}

function tuple(r: Reader): TupleText {
  const n = r.i16();
  const values: TupleText = new Array(n);
  for (let i = 0; i < n; i++) {
    const kind = String.fromCharCode(r.u8());
    if (kind === "n") values[i] = null;
    else if (kind === "u") values[i] = undefined;
    else if (kind === "t") values[i] = r.text(r.i32());
    else throw new Error(`tuple column ${i} in format '${kind}' (only text is requested)`);
  }
  return values;
}

/** A pgoutput message (the data of an XLogData). */
export function decodePgOutput(bytes: Uint8Array): PgOutputMessage {
  const r = new Reader(bytes);
  const type = String.fromCharCode(r.u8());
  switch (type) {
    case "B": {
      const finalLsn = r.u64();
      const time = r.i64();
      return { tag: "begin", finalLsn, commitTimeMs: pgTimeToMs(time), xid: r.u32() };
    }
    case "C": {
      r.u8(); // flags
      const commitLsn = r.u64();
      const endLsn = r.u64();
      return { tag: "commit", commitLsn, endLsn, commitTimeMs: pgTimeToMs(r.i64()) };
    }
    case "R": {
      const oid = r.u32();
      const schema = r.cstring();
      const name = r.cstring();
      const replicaIdentity = String.fromCharCode(r.u8());
      const n = r.i16();
      const columns: RelationColumn[] = [];
      for (let i = 0; i < n; i++) {
        const flags = r.u8();
        const columnName = r.cstring();
        const typeOid = r.u32();
        r.i32(); // type modifier
        columns.push({ name: columnName, typeOid, key: (flags & 1) === 1 });
      }
      return { tag: "relation", relation: { oid, schema, name, replicaIdentity, columns } };
    }
    case "I": {
      const oid = r.u32();
      r.u8(); // 'N'
      return { tag: "insert", oid, row: tuple(r) };
    }
    case "U": {
      const oid = r.u32();
      let kind = String.fromCharCode(r.u8());
      let old: TupleText | undefined;
      let oldIsKeyOnly = false;
      if (kind === "K" || kind === "O") {
        oldIsKeyOnly = kind === "K";
        old = tuple(r);
        kind = String.fromCharCode(r.u8());
      }
      if (kind !== "N") throw new Error(`update without its new tuple (got '${kind}')`);
      return { tag: "update", oid, old, oldIsKeyOnly, row: tuple(r) };
    }
    case "D": {
      const oid = r.u32();
      const kind = String.fromCharCode(r.u8());
      return { tag: "delete", oid, oldIsKeyOnly: kind === "K", old: tuple(r) };
    }
    case "T": {
      const n = r.u32();
      r.u8(); // options
      const oids: number[] = [];
      for (let i = 0; i < n; i++) oids.push(r.u32());
      return { tag: "truncate", oids };
    }
    case "M": {
      const transactional = (r.u8() & 1) === 1;
      const lsn = r.u64();
      return { tag: "message", transactional, lsn, prefix: r.cstring() };
    }
    default:
      return { tag: "other", type };
  }
}

/** A standby status update: written/flushed/applied positions (the server keeps WAL from `flushed` on). */
export function standbyStatusUpdate(written: bigint, flushed: bigint, nowMs: number, replyRequested = false): Buffer {
  const b = Buffer.alloc(34);
  b.write("r", 0, "latin1");
  b.writeBigUInt64BE(written, 1);
  b.writeBigUInt64BE(flushed, 9);
  b.writeBigUInt64BE(flushed, 17);
  b.writeBigInt64BE(msToPgTime(nowMs), 25);
  b.writeUInt8(replyRequested ? 1 : 0, 33);
  return b;
}
