/**
 * The CDC source's connections: a plain one (catalog queries, snapshot reads; every value as text,
 * decoded by cdc-values.ts like the stream's) and a replication one (`replication: "database"`:
 * slots, the exported snapshots of the snapshot splits, and the change stream in CopyBoth mode).
 * Every connection prints values the way cdc-values.ts reads them (DateStyle ISO, UTC, hex bytea).
 */
import { loadPg, type PostgresConnection } from "./pg-client.ts";

const TEXT_SETTINGS = "-c DateStyle=ISO,MDY -c TimeZone=UTC -c bytea_output=hex -c extra_float_digits=3 -c IntervalStyle=postgres";

export interface TextField {
  readonly name: string;
  readonly dataTypeID: number;
}

export interface TextResult {
  readonly rows: (string | null)[][];
  readonly fields: readonly TextField[];
}

/** What the source uses of a `pg` Client. */
export interface CdcClient {
  /** Rows as arrays of text (or null). */
  query(text: string, values?: readonly unknown[]): Promise<TextResult>;
  end(): Promise<void>;
  /** The replication stream's messages (after START_REPLICATION) and the connection's end. */
  readonly raw: RawClient;
}

export interface RawClient {
  query(text: string): Promise<unknown>;
  on(event: "error" | "end", listener: (e?: Error) => void): unknown;
  connection: {
    on(event: "copyData", listener: (msg: { chunk: Buffer }) => void): unknown;
    sendCopyFromChunk(chunk: Buffer): void;
    stream: { pause(): void; resume(): void };
  };
}

function config(connection: PostgresConnection): Record<string, unknown> {
  const base: Record<string, unknown> = typeof connection === "string" ? { connectionString: connection } : { ...connection };
  const options = typeof base.options === "string" ? `${base.options} ${TEXT_SETTINGS}` : TEXT_SETTINGS;
  return { connectionTimeoutMillis: 10_000, ...base, options };
}

const asText = { getTypeParser: () => (value: string) => value };

/** Opens a connection; `replication`: a logical replication connection to the database. */
export async function openCdcClient(connection: PostgresConnection, replication: boolean): Promise<CdcClient> {
  const { Client } = loadPg() as unknown as { Client: new (config: Record<string, unknown>) => RawClient & { connect(): Promise<void>; end(): Promise<void>; query(config: unknown, values?: unknown): Promise<{ rows: (string | null)[][]; fields: TextField[] }> } };
  const client = new Client({ ...config(connection), ...(replication ? { replication: "database" } : {}), types: asText });
  // A connection the server drops emits 'error'; unheard, Node would crash the process. The
  // pending or next query fails, and the source reports that.
  client.on("error", () => {});
  await client.connect();
  return {
    async query(text, values) {
      const r = await client.query({ text, values, rowMode: "array" });
      return { rows: r.rows ?? [], fields: r.fields ?? [] };
    },
    end: () => client.end().catch(() => {}),
    raw: client,
  };
}

/** `name` as a quoted identifier. */
export function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A string literal (for replication commands, which take no parameters). */
export function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
