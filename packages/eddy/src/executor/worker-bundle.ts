/**
 * The code a worker thread starts from. A worker must run the job's module
 * (docs/design/architecture.md, "A job is a module"), which is TypeScript, like Eddy's own sources.
 * Registering the TypeScript loader (tsx) in every worker and importing ~150 modules through its
 * hooks costs ~0.7 s of CPU per worker (measured: two workers 1.5 s of CPU and 0.8 s of wall time
 * before the first record). So the coordinator compiles the worker's code once with esbuild into
 * one ES module, and workers import that without a loader: two workers then start in ~0.27 s of CPU
 * and 0.15 s of wall time.
 *
 * What goes into the bundle and what stays outside:
 * - TypeScript files and files outside `node_modules` (the job, its local imports, Eddy's sources
 *   and other workspace packages) are compiled in, one copy of each module;
 * - JavaScript under `node_modules` (npm packages, native addons) and Node's built-in modules stay
 *   external: the bundle imports them by absolute file URL, resolved as the job's module would.
 * - `import.meta.url`, `.filename` and `.dirname` keep meaning the original file in every module.
 *   A module that calls `import.meta.resolve`, or imports a module by a path computed at run
 *   time (`import(name)`), cannot be bundled faithfully (it would resolve from the bundle, without
 *   a TypeScript loader); then, or whenever the build fails, workers fall back to the loader
 *   (slower start, same behaviour).
 *
 * esbuild declares every top-level binding `var`; those never assigned again are made `const` after
 * the build (bundle-constants.ts), which V8 folds into optimised code (unless
 * EDDY_WORKER_CONSTANTS=off).
 *
 * Bundles live in a private temporary directory (mode 0700, named after the process id) removed
 * when the process exits, or by the next process to build one if this one was killed. A bundle is
 * named by the hash of its content and reused while none of its input files changed. The
 * source map is written beside it and read only when a worker reports an error (source-map-stack.ts),
 * so stack traces name the original files without parsing the map at every start.
 */
import { isPidAlive } from "../core/pid.ts";
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { dirname, extname, join, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Plugin } from "esbuild";
import { describeCause } from "../core/errors.ts";
import { applyConstants, constantStatements, sourceVarNames } from "./bundle-constants.ts";
import { processConditions } from "./conditions.ts";

export interface WorkerBundle {
  /** The bundle, a file URL a Worker can start from. */
  readonly url: string;
  /** Its source map (a file path). */
  readonly sourceMap: string;
}

/** Where the worker's code starts: a bundle, or the reason workers load through tsx. */
export type WorkerCode = { readonly bundle: WorkerBundle } | { readonly bundle: undefined; readonly reason: string };

/** Set to "tsx" to make workers load through the TypeScript loader (e.g. to compare, or debug). */
export const WORKER_LOADER_ENV = "EDDY_WORKER_LOADER";
/** Set to "off" to keep esbuild's top-level `var`s (bundle-constants.ts), e.g. to compare. */
export const WORKER_CONSTANTS_ENV = "EDDY_WORKER_CONSTANTS";
/** Where bundle-constants' results are remembered across processes (default: a per-user directory in the temporary directory). */
export const WORKER_CONSTANTS_CACHE_ENV = "EDDY_WORKER_CONSTANTS_CACHE";

/** ".ts" when Eddy runs from its sources (this repository), ".js" when from its build (dist/). */
const OWN_EXTENSION = extname(fileURLToPath(import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL(`./thread-worker${OWN_EXTENSION}`, import.meta.url));
const PRELOAD = fileURLToPath(new URL(`./preloaded-modules${OWN_EXTENSION}`, import.meta.url));
/**
 * The package.json condition under which `import "eddy"` resolves to Eddy's sources (its exports
 * map): the bundle must resolve a job's `import "eddy"` to the copy this process runs, or the
 * worker would hold two Eddys (one compiled into the bundle, one it starts from).
 */
export const SOURCE_CONDITION = "eddy-source";
const TYPESCRIPT = /\.(?:ts|mts|cts|tsx)$/;
/** Eddy's own sources: their computed imports are of modules the bundle preloads, or run only in the coordinator. */
const EDDY_SOURCES = fileURLToPath(new URL("../", import.meta.url));
/** `import(` followed by anything but a string literal: a module path computed at run time. */
const COMPUTED_IMPORT = /\bimport\s*\(\s*[^"'\s)]/;
const BUILTINS = new Set(builtinModules);
const RESOLVING = Symbol("resolving");
/** The per-module stand-in for `import.meta` (see the header). */
const META = "__eddyImportMeta";

interface Built {
  /** The bundle, or why it could not be built (then workers load through tsx). */
  readonly bundle: WorkerBundle | undefined;
  readonly failure: string;
  /** Input files with the mtime and size they had when read. */
  readonly inputs: readonly (readonly [path: string, mtimeMs: number, size: number])[];
}

const builds = new Map<string, Promise<Built>>();
let outDir: string | undefined;

/**
 * The bundle of a worker that preloads `modules` (file URLs: the job's module, a checkpoint
 * storage module); built once per process and set of modules, rebuilt when an input changed.
 */
export async function workerCode(modules: readonly string[]): Promise<WorkerCode> {
  if (process.env[WORKER_LOADER_ENV] === "tsx") return { bundle: undefined, reason: `${WORKER_LOADER_ENV}=tsx` };
  const constants = process.env[WORKER_CONSTANTS_ENV] !== "off";
  const key = `${constants}\n${modules.join("\n")}`;
  let pending = builds.get(key);
  // A failure is remembered like a bundle: built again only once an input changed.
  if (pending === undefined || !unchanged(await pending)) {
    pending = buildBundle(modules, constants);
    builds.set(key, pending);
  }
  const built = await pending;
  return built.bundle !== undefined ? { bundle: built.bundle } : { bundle: undefined, reason: built.failure };
}

function unchanged(built: Built): boolean {
  if (built.inputs.length === 0) return false;
  for (const [path, mtimeMs, size] of built.inputs) {
    try {
      const s = statSync(path);
      if (s.mtimeMs !== mtimeMs || s.size !== size) return false;
    } catch {
      return false;
    }
  }
  return true;
}

async function buildBundle(modules: readonly string[], constants: boolean): Promise<Built> {
  const seen = new Map<string, [number, number]>();
  const inputs = () => [...seen].map(([file, [mtimeMs, size]]) => [file, mtimeMs, size] as const);
  try {
    return { bundle: await writeBundle(modules, constants, seen), failure: "", inputs: inputs() };
  } catch (e) {
    return { bundle: undefined, failure: describeCause(e), inputs: inputs() };
  }
}

async function writeBundle(modules: readonly string[], constants: boolean, seen: Map<string, [number, number]>): Promise<WorkerBundle> {
  const { build } = await import("esbuild");
  const dir = (outDir ??= privateDir());
  const sourceVars = new Set<string>();
  const files = modules.map((url) => fileURLToPath(url));
  const entry = [
    `import { preloadModules } from ${JSON.stringify(PRELOAD)};`,
    `import { runWorker } from ${JSON.stringify(WORKER_MAIN)};`,
    ...files.map((file, i) => `import * as m${i} from ${JSON.stringify(file)};`),
    `preloadModules([${modules.map((url, i) => `[${JSON.stringify(url)}, m${i}]`).join(", ")}]);`,
    `runWorker();`,
  ].join("\n");
  const outfile = join(dir, "worker.mjs");
  const result = await build({
    stdin: { contents: entry, resolveDir: dirname(WORKER_MAIN), sourcefile: "eddy-worker-entry.mjs", loader: "js" },
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // Node's own resolution: no bundler-only "module" condition or field; the conditions this
    // process resolves with (conditions.ts), and Eddy's sources when this process runs them.
    conditions: [...new Set([...processConditions(), ...(OWN_EXTENSION === ".ts" ? [SOURCE_CONDITION] : [])])],
    mainFields: ["main"],
    write: false,
    outfile,
    sourcemap: "external",
    legalComments: "none",
    logLevel: "silent",
    plugins: [workerPlugin(seen, sourceVars)],
  });
  const built = result.outputFiles.find((f) => f.path === outfile);
  const builtMap = result.outputFiles.find((f) => f.path === `${outfile}.map`);
  if (built === undefined || builtMap === undefined) throw new Error("esbuild produced no bundle");
  const { code, map } = constants ? withConstants(built.text, builtMap.text, sourceVars) : { code: built.text, map: builtMap.text };
  const name = `worker-${createHash("sha256").update(code).digest("hex").slice(0, 20)}.mjs`;
  const path = join(dir, name);
  // Paths in the map are relative to the bundle's directory; the file name does not matter.
  // Written aside and renamed: a worker of a running job may be reading a bundle of that name.
  writeAtomically(`${path}.map`, map);
  writeAtomically(path, code);
  return { url: pathToFileURL(path).href, sourceMap: `${path}.map` };
}

function writeAtomically(path: string, contents: string): void {
  const partial = `${path}.${process.pid}.${++partialFiles}.partial`;
  try {
    writeFileSync(partial, contents);
    renameSync(partial, path);
  } catch (e) {
    rmSync(partial, { force: true });
    throw e;
  }
}
/** `<name>.<pid>.<n>.partial`: what writeAtomically writes before the rename. */
const PARTIAL_FILE = /\.(\d+)\.\d+\.partial$/;
let partialFiles = 0;

/**
 * The bundle with its never-reassigned top-level bindings `const` (bundle-constants.ts). Finding
 * them costs ~0.8 s of CPU in a fresh process (acorn parsing ~0.8 MB cold), and processes that run
 * the same job build the same bundle (a job resumed from a checkpoint, a test suite), so the result
 * is remembered across processes: one small file per bundle, named by the hash of the bundle, the
 * source `var` names and the transform's own code, holding the statements' offsets and their
 * checksum, in a directory only this user can use. Anything unreadable there is worked out again.
 */
function withConstants(code: string, map: string, sourceVars: ReadonlySet<string>): { code: string; map: string } {
  const dir = constantsCacheDir();
  const file =
    dir === undefined
      ? undefined
      : join(dir, `${createHash("sha256").update(bundleConstantsSource()).update(`\0${[...sourceVars].sort().join(",")}\0`).update(code).digest("hex").slice(0, 40)}.json`);
  let offsets = file === undefined ? undefined : cachedOffsets(file);
  if (offsets === undefined) {
    offsets = constantStatements(code, sourceVars);
    if (file !== undefined) {
      try {
        const text = JSON.stringify(offsets);
        writeAtomically(file, JSON.stringify({ offsets: text, sha256: createHash("sha256").update(text).digest("hex") }));
        pruneConstantsCache(dir!);
      } catch {
        // Best effort: the next process works them out again.
      }
    }
  }
  return applyConstants(code, map, offsets);
}

/** bundle-constants' own code (read at the first build): a change to it must not reuse offsets it worked out before. */
let transformSource: Buffer | undefined;
function bundleConstantsSource(): Buffer {
  try {
    return (transformSource ??= readFileSync(new URL(`./bundle-constants${OWN_EXTENSION}`, import.meta.url)));
  } catch {
    return (transformSource = Buffer.from(String(Math.random())));
  }
}
const CONSTANTS_CACHE_ENTRIES = 200;

/** The per-user cache directory, or undefined if it is not ours alone (then nothing is cached). */
function constantsCacheDir(): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const dir = process.env[WORKER_CONSTANTS_CACHE_ENV] || join(tmpdir(), `eddy-bundle-constants-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
  }
  try {
    const s = lstatSync(dir);
    return s.isDirectory() && s.uid === uid && (s.mode & 0o077) === 0 ? dir : undefined;
  } catch {
    return undefined;
  }
}

function cachedOffsets(file: string): number[] | undefined {
  try {
    const { offsets, sha256 } = JSON.parse(readFileSync(file, "utf8")) as { offsets?: unknown; sha256?: unknown };
    if (typeof offsets !== "string" || sha256 !== createHash("sha256").update(offsets).digest("hex")) return undefined;
    const parsed: unknown = JSON.parse(offsets);
    return Array.isArray(parsed) && parsed.every((o) => Number.isSafeInteger(o) && o >= 0) ? (parsed as number[]) : undefined;
  } catch {
    return undefined;
  }
}

/** Keeps the newest entries; removes what processes that died mid-write left (their `.partial` files). */
function pruneConstantsCache(dir: string): void {
  const all = readdirSync(dir);
  for (const n of all) {
    const pid = PARTIAL_FILE.exec(n)?.[1];
    if (pid !== undefined && !isPidAlive(Number(pid))) rmSync(join(dir, n), { force: true });
  }
  const names = all.filter((n) => n.endsWith(".json"));
  if (names.length <= CONSTANTS_CACHE_ENTRIES) return;
  const byAge = names.map((n) => ({ n, t: statSync(join(dir, n)).mtimeMs })).sort((a, b) => a.t - b.t);
  for (const { n } of byAge.slice(0, names.length - CONSTANTS_CACHE_ENTRIES / 2)) unlinkSync(join(dir, n));
}

const DIR_PREFIX = "eddy-worker-";

function privateDir(): string {
  removeStaleDirs();
  const dir = mkdtempSync(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Removes the directories of processes that died without their exit handler (killed by a signal). */
export function removeStaleDirs(): void {
  try {
    const ours = new RegExp(`^${DIR_PREFIX}(\\d+)-`);
    for (const name of readdirSync(tmpdir())) {
      const match = ours.exec(name);
      if (match === null || isPidAlive(Number(match[1]))) continue;
      const dir = join(tmpdir(), name);
      // Only our own: another user's directory is theirs to remove.
      if (statSync(dir).uid === process.getuid?.()) rmSync(dir, { recursive: true, force: true });
    }
  } catch {
    // Best effort: a directory left behind costs disk space, not correctness.
  }
}


function inNodeModules(path: string): boolean {
  return path.split(sep).includes("node_modules");
}

function workerPlugin(seen: Map<string, [number, number]>, sourceVars: Set<string>): Plugin {
  return {
    name: "eddy-worker",
    setup(b) {
      // Bare specifiers only: relative and absolute paths are resolved by esbuild (no round trip).
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.kind === "entry-point" || args.pluginData === RESOLVING) return undefined;
        if (args.path.startsWith("node:") || BUILTINS.has(args.path)) return { path: args.path, external: true };
        const found = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: RESOLVING });
        if (found.errors.length > 0) return { errors: found.errors };
        if (found.external || found.path === "") return { path: args.path, external: true };
        if (TYPESCRIPT.test(found.path) || !inNodeModules(found.path)) return { path: found.path };
        const required = args.kind === "require-call" || args.kind === "require-resolve";
        return { path: required ? found.path : pathToFileURL(found.path).href, external: true };
      });
      b.onLoad({ filter: /\.(?:[cm]?[jt]sx?)$/ }, (args) => {
        const stat = statSync(args.path);
        seen.set(args.path, [stat.mtimeMs, stat.size]);
        const source = readFileSync(args.path, "utf8");
        checkBundlable(source, args.path);
        sourceVarNames(source, sourceVars);
        return { contents: withImportMeta(source, args.path), loader: loaderOf(args.path), resolveDir: dirname(args.path) };
      });
    },
  };
}

function loaderOf(path: string): "ts" | "tsx" | "js" | "jsx" {
  const ext = extname(path);
  if (ext === ".tsx") return "tsx";
  if (ext === ".jsx") return "jsx";
  return TYPESCRIPT.test(path) ? "ts" : "js";
}

/**
 * Throws (making workers load through tsx) for a module whose imports a bundle would resolve
 * wrongly: from the bundle's directory, and without a TypeScript loader.
 */
export function checkBundlable(source: string, path: string): void {
  if (/\bimport\.meta\.resolve\s*\(/.test(source)) throw new Error(`${path} calls import.meta's resolve, which a bundle cannot keep`);
  if (!path.startsWith(EDDY_SOURCES) && COMPUTED_IMPORT.test(source)) {
    throw new Error(`${path} imports a module whose path is computed at run time, which a bundle cannot resolve`);
  }
}

/**
 * `source` with `import.meta` replaced by a constant describing the original file, declared on
 * its first line (after a shebang) so that line numbers stay as they were.
 */
export function withImportMeta(source: string, path: string): string {
  if (!/\bimport\.meta\b/.test(source)) return source;
  const url = pathToFileURL(path).href;
  const fields = JSON.stringify({ url, filename: resolve(path), dirname: dirname(resolve(path)) }).slice(1, -1);
  // `resolve` reached without a call (e.g. destructured): relative specifiers only.
  const resolver = `resolve(s) { if (/^\\.{0,2}\\//.test(s)) return new URL(s, ${JSON.stringify(url)}).href; throw new Error("import.meta's resolve of " + JSON.stringify(s) + " in a bundled worker: set ${WORKER_LOADER_ENV}=tsx"); }`;
  const meta = `const ${META} = { ${fields}, ${resolver} };`;
  const body = source.replace(/\bimport\.meta\b/g, META);
  if (!body.startsWith("#!")) return `${meta} ${body}`;
  const eol = body.indexOf("\n");
  return eol < 0 ? `${body}\n${meta}` : `${body.slice(0, eol + 1)}${meta} ${body.slice(eol + 1)}`;
}
