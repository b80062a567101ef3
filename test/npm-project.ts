/**
 * Projects outside this repository, as a user makes them: `npm pack` of a workspace, and a
 * project installed from such tarballs with `npm ci --offline`, from a lockfile made out of this
 * repository's (so no network is needed beyond what `npm ci` of this repository fetched). Used by
 * test/package.test.ts and bench/tsc-fresh-project.ts.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { SOURCE_CONDITION_IN_OPTIONS } from "./source-condition.ts";

const ROOT = resolve(import.meta.dirname, "..");
const ROOT_LOCK = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  dev?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  [field: string]: unknown;
}

export interface Tarball {
  readonly file: string;
  readonly manifest: { name: string; version: string; dependencies?: Record<string, string>; bin?: Record<string, string>; [field: string]: unknown };
}

export interface ProjectManifest {
  readonly name: string;
  readonly dependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
  readonly [field: string]: unknown;
}

/** npm's settings that say where packages come from: the user's npm has them too. */
const NPM_SETTINGS_KEPT = new Set(["npm_config_cache", "npm_config_userconfig", "npm_config_registry"]);

/**
 * The environment of a user's shell: no source condition, none of the variables of the npm or
 * test runner running this (but the same npm cache and registry).
 */
export const USER_ENV: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env)
    .filter(([k]) => (!k.startsWith("npm_") || NPM_SETTINGS_KEPT.has(k)) && k !== "EDDY_HOME" && k !== "NODE_TEST_CONTEXT")
    .map(([k, v]) => [k, k === "NODE_OPTIONS" ? (v ?? "").replace(SOURCE_CONDITION_IN_OPTIONS, "").trim() : v]),
);

/** Runs a command as a user would (USER_ENV plus `env`); throws only if it could not start. */
export function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 180_000): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { cwd, env: { ...USER_ENV, ...env }, encoding: "utf8", timeout: timeoutMs });
  if (result.error !== undefined) throw result.error;
  return result;
}

/** `run`, failing with the command's output unless it exits 0. */
export function ok(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const result = run(command, args, cwd, env);
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} in ${cwd} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** `npm pack` of a directory (a workspace of this repository: runs its build) into `destination`. */
export function pack(packageDir: string, destination: string): Tarball {
  const out = ok("npm", ["pack", "--json", "--pack-destination", destination], packageDir);
  const [info] = JSON.parse(out.stdout.slice(out.stdout.indexOf("["))) as { filename: string }[];
  const file = join(destination, info!.filename);
  const manifest = JSON.parse(ok("tar", ["-xOzf", file, "package/package.json"], destination).stdout) as Tarball["manifest"];
  return { file, manifest };
}

/** The packages/<name> workspace of this repository, packed. */
export function packWorkspace(name: string, destination: string): Tarball {
  return pack(join(ROOT, "packages", name), destination);
}

/**
 * A package-lock.json for `project`: packages named in `tarballs` from those files, every other
 * package at the version (and integrity) this repository's lockfile has, placed where that
 * lockfile places it.
 */
export function lockfile(project: ProjectManifest, tarballs: ReadonlyMap<string, Tarball>): object {
  const packages: Record<string, LockEntry> = {};
  const place = (name: string, fromKey: string, toParent: string): void => {
    const local = tarballs.get(name);
    if (local !== undefined) {
      const key = `${toParent}node_modules/${name}`;
      if (packages[key] !== undefined) return;
      const { version, dependencies, bin, engines, license } = local.manifest;
      const integrity = `sha512-${createHash("sha512").update(readFileSync(local.file)).digest("base64")}`;
      packages[key] = { version, resolved: `file:${local.file}`, integrity, license, dependencies, bin, engines };
      for (const dep of Object.keys(dependencies ?? {})) place(dep, `packages/${name}`, `${key}/`);
      return;
    }
    // Node's resolution over the lockfile's keys: the nearest node_modules/<name> upwards.
    let found: string | undefined;
    for (let from = fromKey; ; from = from.includes("/node_modules/") ? from.slice(0, from.lastIndexOf("/node_modules/")) : "") {
      const candidate = from === "" ? `node_modules/${name}` : `${from}/node_modules/${name}`;
      if (ROOT_LOCK.packages[candidate] !== undefined && ROOT_LOCK.packages[candidate]!.link !== true) {
        found = candidate;
        break;
      }
      if (from === "") break;
    }
    if (found === undefined) throw new Error(`${name} (needed by ${fromKey || "the project"}) is not in this repository's package-lock.json`);
    const key = found === `node_modules/${name}` ? found : `${toParent}node_modules/${name}`;
    if (packages[key] !== undefined) return;
    const { dev: _dev, ...entry } = ROOT_LOCK.packages[found]!;
    packages[key] = entry;
    for (const dep of [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {})]) place(dep, found, `${key}/`);
  };
  for (const name of [...Object.keys(project.dependencies ?? {}), ...Object.keys(project.devDependencies ?? {})]) place(name, "", "");
  const { name, dependencies, devDependencies } = project;
  return { name, lockfileVersion: 3, requires: true, packages: { "": { name, dependencies, devDependencies }, ...packages } };
}

/** Writes `project`'s lockfile into `dir` (and its package.json, if given) and installs offline, as `npm ci` would. */
export function installOffline(dir: string, project: ProjectManifest, tarballs: ReadonlyMap<string, Tarball>, writeManifest = true): void {
  mkdirSync(dir, { recursive: true });
  if (writeManifest) writeFileSync(join(dir, "package.json"), JSON.stringify(project, null, 2));
  writeFileSync(join(dir, "package-lock.json"), JSON.stringify(lockfile(project, tarballs), null, 2));
  ok("npm", ["ci", "--offline", "--no-audit", "--no-fund"], dir);
}

/** The word count of the README as a user would write it: 9 lines, typed records. */
export const NINE_LINE_JOB = `import { defineJob, type Collector } from "eddy";
export default defineJob("word-count", (env) => {
  env
    .fromElements("to be or", "not to be")
    .flatMap((line, out: Collector<{ word: string; count: number }>) => line.split(" ").forEach((word) => out.collect({ word, count: 1 })))
    .keyBy((r) => r.word)
    .sum("count")
    .print();
});
`;
