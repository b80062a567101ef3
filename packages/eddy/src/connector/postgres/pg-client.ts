/**
 * The sink's view of the `pg` client: loaded on first use of a PostgresSink (an optional peer
 * dependency, so only jobs that write to PostgreSQL need it installed), typed here by the few
 * members the sink calls so Eddy's own types do not depend on `@types/pg`; and how its errors are
 * classified (transient, a bad row, anything else).
 */
import { createRequire } from "node:module";
import { EddyError } from "../../core/errors.ts";

/** A `pg` connection config (host, port, user, password, database, ssl, ...) or a connection string. */
export type PostgresConnection = string | PostgresClientConfig;

/** The fields of `pg`'s ClientConfig the sink passes on unchanged (any other field is passed on too). */
export interface PostgresClientConfig {
  readonly connectionString?: string;
  readonly host?: string;
  readonly port?: number;
  readonly user?: string;
  readonly password?: string;
  readonly database?: string;
  readonly ssl?: unknown;
  readonly connectionTimeoutMillis?: number;
  readonly [option: string]: unknown;
}

export interface QueryResult {
  readonly rows: Record<string, unknown>[];
  readonly rowCount: number | null;
}

export interface PgClient {
  query(text: string, values?: readonly unknown[]): Promise<QueryResult>;
  /** Returns the client to its pool; with an error (or true) the pool closes it instead. */
  release(destroy?: Error | boolean): void;
  on(event: "error", listener: (e: Error) => void): unknown;
}

export interface PgPool {
  connect(): Promise<PgClient>;
  query(text: string, values?: readonly unknown[]): Promise<QueryResult>;
  end(): Promise<void>;
  on(event: "error", listener: (e: Error) => void): unknown;
}

interface PgModule {
  Pool: new (config: Record<string, unknown>) => PgPool;
}

let loaded: PgModule | undefined;

/** The `pg` module, or a clear error naming `npm i pg`. */
export function loadPg(): PgModule {
  if (loaded !== undefined) return loaded;
  try {
    loaded = createRequire(import.meta.url)("pg") as PgModule;
    return loaded;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") {
      throw new EddyError("POSTGRES_CLIENT_MISSING", "PostgresSink needs the PostgreSQL client package 'pg', an optional peer dependency of eddy: run `npm i pg`", { cause: e });
    }
    throw e;
  }
}

/** A pool of at most `maxConnections` connections; idle pool errors (a server restart) are left to the next query. */
export function createPool(connection: PostgresConnection, maxConnections: number): PgPool {
  const { Pool } = loadPg();
  const config = typeof connection === "string" ? { connectionString: connection } : { ...connection };
  // allowExitOnIdle: a committer has no close hook, and its idle connections must not keep the
  // process alive after the job ended.
  const pool = new Pool({ connectionTimeoutMillis: 10_000, idleTimeoutMillis: 5_000, allowExitOnIdle: true, ...config, max: maxConnections });
  // An idle client whose server went away emits 'error' on the pool; without a listener Node
  // would crash the process. The next query on it fails and is classified there.
  pool.on("error", () => {});
  return pool;
}

const listened = new WeakSet<PgClient>();

/**
 * A connection of the pool, for a few statements in a row. A checked-out connection the server
 * drops between two statements emits 'error' (the pool listens only to idle ones); unheard, it
 * would crash the process. The next statement on it fails, and is classified there.
 */
export async function checkout(pool: PgPool): Promise<PgClient> {
  const client = await pool.connect();
  if (!listened.has(client)) {
    listened.add(client);
    client.on("error", () => {});
  }
  return client;
}

/** SQLSTATE classes and codes (PostgreSQL appendix A) after which the same statement may succeed. */
const TRANSIENT_SQLSTATE = new Set([
  "40001", // serialization_failure
  "40P01", // deadlock_detected
  "53300", // too_many_connections
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "55P03", // lock_not_available
]);
const TRANSIENT_NODE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/** Whether a failed statement may succeed when sent again (on a new connection). */
export function isTransient(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string") {
    if (TRANSIENT_SQLSTATE.has(code) || code.startsWith("08") || TRANSIENT_NODE_CODES.has(code)) return true;
  }
  // pg reports a connection lost mid-query without a code.
  const message = e instanceof Error ? e.message : "";
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message);
}

/**
 * Whether the server refused the statement because of the values of a row: class 22 (data
 * exception: a value of the wrong type or out of range), class 23 (integrity constraint
 * violation: NOT NULL, UNIQUE, CHECK, FOREIGN KEY) and 42804 (datatype mismatch). Such a row goes
 * to the error policy; sending it again cannot succeed.
 */
export function isBadRow(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("22") || code.startsWith("23") || code === "42804");
}

/** The server's message with its SQLSTATE, detail and constraint. */
export function describePgError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const x = e as Error & { code?: string; detail?: string; constraint?: string; column?: string };
  const parts = [x.message];
  // A Node error's code (ECONNREFUSED) is in its message already; a server's is a SQLSTATE.
  if (x.code !== undefined && /^[0-9A-Z]{5}$/.test(x.code)) parts.push(`SQLSTATE ${x.code}`);
  if (x.detail) parts.push(x.detail);
  if (x.constraint) parts.push(`constraint ${x.constraint}`);
  if (x.column) parts.push(`column ${x.column}`);
  return parts.join("; ");
}
