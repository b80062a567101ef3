/**
 * Workers start from a bundle of the job's code (worker-bundle.ts): modules keep their own
 * `import.meta`, npm packages load from node_modules, stack traces name the original files, and a
 * module the bundle cannot keep makes workers fall back to the TypeScript loader.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runJob } from "eddy/testing";
import type { Logger } from "../core/logger.ts";
import { checkBundlable, removeStaleDirs, withImportMeta, workerCode, WORKER_CONSTANTS_CACHE_ENV, WORKER_CONSTANTS_ENV, WORKER_LOADER_ENV } from "./worker-bundle.ts";

const JOBS = new URL("../../../../test/jobs/", import.meta.url);

/**
 * Runs `job` on two worker threads with a debug logger; checks that the log has a line starting
 * with `loaded` ("workers start from a bundle" or "workers load through tsx") and containing
 * `reason`, and returns what the job collected.
 */
async function runOnThreads<T>(job: Parameters<typeof runJob>[0], loaded: string, reason = ""): Promise<T[]> {
  const lines: string[] = [];
  const log = (message: string, fields?: Readonly<Record<string, unknown>>) => void lines.push(`${message} ${JSON.stringify(fields ?? {})}`);
  const logger: Logger = { debug: log, info: log, warn: log, error: log };
  const handle = runJob(job, { parallelism: 2, mode: "threads", logger, logLevel: "debug" });
  assert.equal(await handle.mode, "threads");
  await handle.done;
  assert.ok(
    lines.some((l) => l.startsWith(loaded) && l.includes(reason)),
    lines.join("\n"),
  );
  return handle.collected<T>("out");
}

test("withImportMeta points import.meta at the original file and keeps every line where it was; checkBundlable refuses what a bundle would resolve wrongly", () => {
  const path = "/jobs/a job.ts";
  const source = "#!/usr/bin/env node\nconst here = import.meta.url;\nexport const dir = import.meta.dirname;\n";
  const out = withImportMeta(source, path);
  assert.equal(out.split("\n").length, source.split("\n").length);
  assert.ok(out.startsWith("#!/usr/bin/env node\n"));
  assert.doesNotMatch(out, /import\.meta\.(?:url|dirname)/);
  const lines = out.split("\n");
  assert.match(lines[1]!, /^const __eddyImportMeta = \{.*"url":"file:\/\/\/jobs\/a%20job\.ts".*"dirname":"\/jobs"/);
  assert.match(lines[1]!, /const here = __eddyImportMeta\.url;$/);
  assert.equal(lines[2], "export const dir = __eddyImportMeta.dirname;");
  assert.equal(withImportMeta("export const x = 1;\n", path), "export const x = 1;\n");
  assert.throws(() => checkBundlable("import.meta.resolve('x')", path), /import\.meta's resolve/);
  assert.throws(() => checkBundlable("const m = await import(name);", path), /computed at run time/);
  checkBundlable("const m = await import('../cluster/x.ts'); export const u = import.meta.url;", path);
  // Not called: resolves relative specifiers against the original file.
  const destructured = withImportMeta("const { resolve } = import.meta;", path);
  const meta = new Function(`${destructured.replace("const { resolve } = __eddyImportMeta;", "")} return __eddyImportMeta;`)() as { resolve(s: string): string };
  assert.equal(meta.resolve("./b.ts"), "file:///jobs/b.ts");
  assert.throws(() => meta.resolve("pkg"), /EDDY_WORKER_LOADER=tsx/);
});

test("a bundle is reused while its inputs are unchanged, and built again when one changes", async () => {
  const url = new URL("bundled.ts", JOBS).href;
  const first = await workerCode([url]);
  assert.ok(first.bundle !== undefined, "reason" in first ? first.reason : "");
  const file = fileURLToPath(first.bundle.url);
  assert.match(readFileSync(file, "utf8"), /preloadModules/);
  const written = statSync(file).ino;
  // A build writes aside and renames, so the same file (inode) means no build.
  assert.deepEqual(await workerCode([url]), first);
  assert.equal(statSync(file).ino, written);
  const input = fileURLToPath(url);
  const { atime, mtime } = statSync(input);
  utimesSync(input, atime, new Date(mtime.getTime() + 5_000));
  try {
    assert.deepEqual(await workerCode([url]), first, "same sources, same bundle");
    assert.notEqual(statSync(file).ino, written, "built again");
  } finally {
    utimesSync(input, atime, mtime);
  }
});

test(`a bundle declares its never-reassigned top-level bindings const (bundle-constants.ts), unless ${WORKER_CONSTANTS_ENV}=off`, async () => {
  const url = new URL("bundled.ts", JOBS).href;
  const topLevel = async () => {
    const code = await workerCode([url]);
    assert.ok(code.bundle !== undefined, "reason" in code ? code.reason : "");
    const text = readFileSync(fileURLToPath(code.bundle.url), "utf8");
    return { consts: text.match(/^const /gm)?.length ?? 0, vars: text.match(/^var /gm)?.length ?? 0 };
  };
  const on = await topLevel();
  process.env[WORKER_CONSTANTS_ENV] = "off";
  try {
    const off = await topLevel();
    // (`off.consts` counts lines of generated-code templates that start with "const ".)
    // Eddy's own modules alone declare hundreds; a few (assigned later, lazily initialised) stay var.
    const converted = on.consts - off.consts;
    assert.ok(converted > 300 && converted === off.vars - on.vars && on.vars < off.vars / 10, JSON.stringify({ on, off }));
  } finally {
    delete process.env[WORKER_CONSTANTS_ENV];
  }
});

test("which statements become const is remembered across processes in a private directory, checked by its checksum", async () => {
  const url = new URL("bundled.ts", JOBS).href;
  const input = fileURLToPath(url);
  const { atime, mtime } = statSync(input);
  let touched = 0;
  /** Builds again (an input's mtime moved) and counts the bundle's top-level consts. */
  const rebuild = async () => {
    utimesSync(input, atime, new Date(mtime.getTime() + 5_000 * ++touched));
    const code = await workerCode([url]);
    assert.ok(code.bundle !== undefined, "reason" in code ? code.reason : "");
    return readFileSync(fileURLToPath(code.bundle.url), "utf8").match(/^const /gm)?.length ?? 0;
  };
  const dir = join(tmpdir(), `eddy-constants-cache-test-${process.pid}`);
  process.env[WORKER_CONSTANTS_CACHE_ENV] = dir;
  try {
    const converted = await rebuild();
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    const entries = readdirSync(dir).filter((n) => n.endsWith(".json"));
    assert.equal(entries.length, 1);
    const entry = join(dir, entries[0]!);
    // A valid entry is used as it is: one that says "nothing" leaves the bundle as esbuild wrote it.
    const nothing = JSON.stringify([]);
    writeFileSync(entry, JSON.stringify({ offsets: nothing, sha256: createHash("sha256").update(nothing).digest("hex") }));
    const fromCache = await rebuild();
    assert.ok(fromCache < converted - 300, `${fromCache} consts from an empty entry, ${converted} worked out`);
    // One whose checksum does not match is worked out again; writing it removes what a process
    // that died mid-write left, and nothing a live process is writing.
    const dead = `${entries[0]}.${spawnSync(process.execPath, ["-e", ""]).pid}.1.partial`;
    const live = `${entries[0]}.${process.pid}.999.partial`;
    for (const n of [dead, live]) writeFileSync(join(dir, n), "{");
    writeFileSync(entry, JSON.stringify({ offsets: nothing, sha256: "0".repeat(64) }));
    assert.equal(await rebuild(), converted);
    assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith(".partial")), [live]);
    // A directory others can read is not used.
    chmodSync(dir, 0o755);
    writeFileSync(entry, JSON.stringify({ offsets: nothing, sha256: createHash("sha256").update(nothing).digest("hex") }));
    assert.equal(await rebuild(), converted);
  } finally {
    delete process.env[WORKER_CONSTANTS_CACHE_ENV];
    rmSync(dir, { recursive: true, force: true });
    utimesSync(input, atime, mtime);
  }
});

test("on worker threads a bundled job keeps import.meta of its module and loads npm packages", async () => {
  const { importMetaJob } = await import("../../../../test/jobs/bundled.ts");
  const out = await runOnThreads<{ n: number; url: string; dirname: string; filename: string; bytes: number; sample: number }>(
    importMetaJob,
    "workers start from a bundle",
  );
  const file = fileURLToPath(new URL("bundled.ts", JOBS));
  assert.deepEqual(
    out.map((r) => r.n).sort((a, b) => a - b),
    Array.from({ length: 20 }, (_, i) => i),
  );
  for (const r of out) {
    assert.equal(r.url, new URL("bundled.ts", JOBS).href);
    assert.equal(r.filename, file);
    assert.equal(r.dirname, dirname(file));
    assert.equal(r.bytes, readFileSync(file).length);
    assert.equal(r.sample, r.n);
  }
});

test("a user function failing in a bundled worker reports a stack in the original file", async () => {
  const { failingJob } = await import("../../../../test/jobs/bundled.ts");
  const file = fileURLToPath(new URL("bundled.ts", JOBS));
  const line = readFileSync(file, "utf8").split("\n").findIndex((l) => l.includes('throw new Error("seven')) + 1;
  const handle = runJob(failingJob, { parallelism: 2, mode: "threads" });
  await assert.rejects(handle.done, (e: Error) => {
    assert.match(e.message, /seven is not allowed/);
    assert.ok(e.stack?.includes(`bundled.ts:${line}:`), e.stack);
    assert.doesNotMatch(e.stack ?? "", /worker-[0-9a-f]+\.mjs/);
    return true;
  });
});

test("a module the bundle cannot keep runs through the TypeScript loader, with the same result", async () => {
  const { unbundlableJob, NEIGHBOUR } = await import("../../../../test/jobs/unbundlable.ts");
  const out = await runOnThreads<{ n: number; neighbour: string }>(unbundlableJob, "workers load through tsx", "import.meta's resolve");
  assert.equal(out.length, 20);
  for (const r of out) assert.equal(r.neighbour, NEIGHBOUR);
});

test("a module importing a path computed at run time runs through the TypeScript loader, with the same result", async () => {
  const { computedImportJob } = await import("../../../../test/jobs/computed-import.ts");
  const out = await runOnThreads<{ n: number; helper: string }>(computedImportJob, "workers load through tsx", "computed at run time");
  assert.equal(out.length, 20);
  for (const r of out) assert.equal(r.helper, "bundle-import-meta");
});

test(`${WORKER_LOADER_ENV}=tsx makes workers load through the TypeScript loader`, async () => {
  const { importMetaJob } = await import("../../../../test/jobs/bundled.ts");
  process.env[WORKER_LOADER_ENV] = "tsx";
  try {
    const out = await runOnThreads(importMetaJob, "workers load through tsx", `${WORKER_LOADER_ENV}=tsx`);
    assert.equal(out.length, 20);
  } finally {
    delete process.env[WORKER_LOADER_ENV];
  }
});

test("bundle directories of processes that were killed are removed; a live process's stay", () => {
  // A process id that is not running any more: a child that has exited.
  const deadPid = Number(execFileSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }));
  const stale = join(tmpdir(), `eddy-worker-${deadPid}-test`);
  const live = join(tmpdir(), `eddy-worker-${process.pid}-test`);
  mkdirSync(stale, { recursive: true });
  mkdirSync(live, { recursive: true });
  try {
    removeStaleDirs();
    assert.equal(existsSync(stale), false);
    assert.equal(existsSync(live), true);
  } finally {
    rmSync(live, { recursive: true, force: true });
    rmSync(stale, { recursive: true, force: true });
  }
});
