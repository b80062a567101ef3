/**
 * Writes a clickstream to files, as a web tier's access log rotated hourly would leave it: NDJSON,
 * gzip-compressed, one file per hour, `clicks-<yyyy-MM-dd-HH>.ndjson.gz` under `--out` (or CSV with a
 * header `user,url,ts`, `.csv.gz`, with `--format csv`), each
 * file's clicks in time order and its modification time the end of its hour (a rotated log is
 * closed then; the file source reads files in modification order, so in time order). Deterministic
 * (a seeded generator): the same arguments write the same bytes. About 1 line in 2,000 is garbled
 * (a truncated write), for the job's dead-letter output.
 *
 *   npx tsx examples/clickstream/generate.ts --out data/clicks --users 2000 --hours 3
 *
 * A click: { user, url, ts } with `ts` in ms since the epoch (UTC). Users come back in bursts
 * (a session: several clicks a few seconds to minutes apart), with pauses between bursts that are
 * sometimes shorter and sometimes longer than the job's 30-minute session gap.
 */
import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";

export interface Click {
  readonly user: string;
  readonly url: string;
  /** Event time, ms since the epoch. */
  readonly ts: number;
}

export const START_MS = Date.UTC(2026, 11, 1, 8);
const HOUR_MS = 3_600_000;
const PAGES = ["/", "/pricing", "/docs", "/docs/windows", "/docs/state", "/blog", "/signup", "/login", "/checkout"];

/** A small, fast, seeded generator (mulberry32): the same seed gives the same clicks. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Every click of `users` users over `hours` hours, in time order. */
export function clicks(users: number, hours: number, seed = 1): Click[] {
  const next = random(seed);
  const out: Click[] = [];
  const end = START_MS + hours * HOUR_MS;
  for (let u = 0; u < users; u++) {
    const user = `user-${u}`;
    let t = START_MS + Math.floor(next() * HOUR_MS);
    while (t < end) {
      // A burst: 1-12 clicks, 2 s to 4 min apart.
      const n = 1 + Math.floor(next() * 12);
      for (let i = 0; i < n && t < end; i++) {
        out.push({ user, url: PAGES[Math.floor(next() * PAGES.length)]!, ts: t });
        t += 2_000 + Math.floor(next() * 238_000);
      }
      // A pause of 5 min to 90 min: a new session when it is 30 min or more.
      t += 300_000 + Math.floor(next() * 5_100_000);
    }
  }
  return out.sort((a, b) => a.ts - b.ts || (a.user < b.user ? -1 : 1));
}

/** Writes the files; returns their paths and the clicks written (garbled lines excluded). */
export function writeClickFiles(
  dir: string,
  users: number,
  hours: number,
  seed = 1,
  format: "ndjson" | "csv" = "ndjson",
): { files: string[]; clicks: Click[]; garbled: number } {
  mkdirSync(dir, { recursive: true });
  const lines = new Map<string, string[]>();
  const written: Click[] = [];
  let garbled = 0;
  let i = 0;
  const hourEnds = new Map<string, number>();
  for (const click of clicks(users, hours, seed)) {
    const hourStart = click.ts - ((click.ts - START_MS) % HOUR_MS);
    const name = `clicks-${new Date(hourStart).toISOString().slice(0, 13).replace("T", "-")}.${format}.gz`;
    hourEnds.set(name, hourStart + HOUR_MS);
    let file = lines.get(name);
    if (file === undefined) lines.set(name, (file = format === "csv" ? ["user,url,ts"] : []));
    // Users and pages need no CSV quoting.
    const json = format === "csv" ? `${click.user},${click.url},${click.ts}` : JSON.stringify(click);
    // About 1 line in 2,000: cut off mid-record, as a write interrupted by a crash leaves it. A CSV
    // line is cut before its last field: cut inside it, `user-1,/,1` would still parse (a click at
    // 1 ms), and no reader could tell it from a real one.
    if (++i % 2_000 === 0) {
      file.push(format === "csv" ? json.slice(0, json.lastIndexOf(",")) : json.slice(0, json.length >> 1));
      garbled++;
    } else {
      file.push(json);
      written.push(click);
    }
  }
  const files: string[] = [];
  for (const [name, content] of lines) {
    const path = join(dir, name);
    writeFileSync(path, gzipSync(content.join("\n") + "\n"));
    const closedAt = new Date(hourEnds.get(name)!);
    utimesSync(path, closedAt, closedAt);
    files.push(path);
  }
  return { files, clicks: written, garbled };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      out: { type: "string", default: "data/clicks" },
      users: { type: "string", default: "2000" },
      hours: { type: "string", default: "3" },
      seed: { type: "string", default: "1" },
      format: { type: "string", default: "ndjson" },
    },
  });
  if (values.format !== "ndjson" && values.format !== "csv") throw new Error(`--format is ndjson or csv, got '${values.format}'`);
  const { files, clicks: written, garbled } = writeClickFiles(values.out, Number(values.users), Number(values.hours), Number(values.seed), values.format);
  console.log(`wrote ${written.length} clicks (and ${garbled} garbled lines) in ${files.length} files under ${values.out}`);
}
