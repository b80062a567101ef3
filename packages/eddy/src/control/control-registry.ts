/**
 * The registry of the jobs running on this machine: one file `<home>/jobs/<jobId>.json` per job
 * with a control server (control-server.ts writes it, control-client.ts reads it). The home is
 * `EDDY_HOME`, else `~/.eddy`. The `jobs/` directory is created 0700 and every file in it is 0600:
 * the files name the token that grants control over the job.
 *
 * Invariants: a registry file is complete or absent (written to a temporary file, then linked into
 * place); its `tokenFile` lies in the same directory; a job id is a file-safe name, so an id never
 * reaches outside `jobs/`.
 */
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { EddyError } from "../core/errors.ts";

/** Version of the registry file format; readers skip files of other versions. */
export const REGISTRY_VERSION = 1;

/** What `<home>/jobs/<jobId>.json` holds. */
export interface RegistryEntry {
  readonly version: number;
  readonly id: string;
  readonly name: string;
  /** The process running the job; the entry is stale once it is gone. */
  readonly pid: number;
  /** Base URL of the control API, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** Absolute path of the file holding the bearer token (mode 0600). */
  readonly tokenFile: string;
  readonly startedAtMs: number;
}

/** `home`, else `EDDY_HOME`, else `~/.eddy`, as an absolute path. */
export function controlHome(home?: string): string {
  return resolve(home ?? process.env.EDDY_HOME ?? join(homedir(), ".eddy"));
}

export function jobsDir(home: string): string {
  return join(home, "jobs");
}

const JOB_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** Throws INVALID_JOB_ID unless `id` is a file-safe name (what `--job-id` and job names become). */
export function checkJobId(id: string): void {
  if (!JOB_ID.test(id)) {
    throw new EddyError("INVALID_JOB_ID", `invalid job id '${id}': use letters, digits, '.', '_' and '-' (at most 100, starting with a letter or digit)`);
  }
}

export function registryFile(home: string, id: string): string {
  checkJobId(id);
  return join(jobsDir(home), `${id}.json`);
}

export { isPidAlive } from "../core/pid.ts";

/** The entry in `file`, or undefined when the file is missing, unreadable as an entry, or of another version. */
export async function readRegistryEntry(file: string): Promise<RegistryEntry | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return isRegistryEntry(value) ? value : undefined;
}

function isRegistryEntry(v: unknown): v is RegistryEntry {
  if (typeof v !== "object" || v === null) return false;
  const e = v as Record<string, unknown>;
  return (
    e.version === REGISTRY_VERSION &&
    typeof e.id === "string" &&
    JOB_ID.test(e.id) &&
    typeof e.name === "string" &&
    typeof e.pid === "number" &&
    typeof e.url === "string" &&
    typeof e.tokenFile === "string" &&
    typeof e.startedAtMs === "number"
  );
}
