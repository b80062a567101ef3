/**
 * Eddy as a user gets it from npm. `npm pack` (which runs the package's own build) makes the
 * tarballs of `eddy` and `create-eddy`; they are installed into empty projects with `npm ci
 * --offline`, from a lockfile made out of this repository's (so the test needs no network beyond
 * what `npm ci` of this repository fetched). Then, in a project with `tsc --init`'s settings:
 * a 9-line job type-checks with a plain `tsc` (declarations, no Eddy source checked) and runs with
 * the installed `eddy` command; a CommonJS project gets one clear message; and the project that
 * `create-eddy` (npm create eddy) writes passes its own `npm test`.
 *
 * Every child process runs without this repository's `--conditions=eddy-source` and `npm_*`
 * variables: the installed package must stand on its own.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { installOffline, NINE_LINE_JOB as JOB, ok, packWorkspace, run, USER_ENV, type ProjectManifest, type Tarball } from "./npm-project.ts";

let work: string;
const tarballs = new Map<string, Tarball>();
/** Jobs run by the tests keep their registry files here, not in the user's home. */
const home = () => ({ EDDY_HOME: join(work, "eddy-home") });

/** Installs `project` into `dir` from the packed tarballs. */
function install(dir: string, project: ProjectManifest): void {
  installOffline(dir, project, tarballs);
}

/** `tsc --init`'s settings in TypeScript 5.9 (module nodenext, types [], strict, …). */
function tscInit(dir: string): void {
  ok(join(dir, "node_modules/.bin/tsc"), ["--init"], dir);
}


before(() => {
  work = mkdtempSync(join(tmpdir(), "eddy-package-"));
  for (const workspace of ["eddy", "create-eddy"]) {
    const tarball = packWorkspace(workspace, work);
    tarballs.set(tarball.manifest.name, tarball);
  }
});

after(() => rmSync(work, { recursive: true, force: true }));

test("the packed tarball holds the build, its declarations and no tests", () => {
  const files = ok("tar", ["-tzf", tarballs.get("eddy")!.file], work).stdout.split("\n");
  for (const f of ["dist/index.js", "dist/index.d.ts", "dist/testing/index.d.ts", "dist/connector/nats/index.d.ts", "dist/cli.js", "bin/eddy.js", "template/src/job.ts", "template/_gitignore", "esm-only.cjs", "dist/ui/app.js", "dist/ui/app.css"]) {
    assert.ok(files.includes(`package/${f}`), `${f} is missing from the tarball`);
  }
  assert.deepEqual(files.filter((f) => f.endsWith(".test.ts") && !f.startsWith("package/template/")), []);
  // The web UI's bundle is built (dist/ui), not shipped as its sources or build script.
  assert.deepEqual(files.filter((f) => f.startsWith("package/ui/")), []);
});

test("a fresh ESM project: a 9-line job type-checks with tsc --init's settings and runs", (t) => {
  const dir = join(work, "fresh");
  install(dir, { name: "fresh", private: true, type: "module", dependencies: { eddy: "^0.1.0" }, devDependencies: { typescript: "~5.9.3", "@types/node": "^20.19.0" } });
  tscInit(dir);
  writeFileSync(join(dir, "job.ts"), JOB);
  assert.equal(JOB.trimEnd().split("\n").length, 9);

  const started = performance.now();
  const checked = run(join(dir, "node_modules/.bin/tsc"), ["--noEmit"], dir);
  const tscMs = performance.now() - started;
  assert.equal(checked.status, 0, `tsc failed:\n${checked.stdout}${checked.stderr}`);
  t.diagnostic(`tsc --noEmit of the 9-line job: ${Math.round(tscMs)} ms (bench/tsc-fresh-project.ts measures it on a quiet machine)`);
  // Only the user's file and declarations: none of Eddy's sources is checked.
  const listed = ok(join(dir, "node_modules/.bin/tsc"), ["--noEmit", "--listFilesOnly"], dir).stdout.split("\n");
  assert.deepEqual(listed.filter((f) => f.includes("node_modules/eddy/") && !f.endsWith(".d.ts")), []);
  assert.ok(listed.some((f) => f.endsWith("node_modules/eddy/dist/index.d.ts")));

  // A type error in the job is caught by the declarations (the records are typed, not any).
  writeFileSync(join(dir, "bad.ts"), `${JOB.replace(".sum(\"count\")", ".map((r) => r.doesNotExist.foo)")}`);
  const bad = run(join(dir, "node_modules/.bin/tsc"), ["--noEmit"], dir);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stdout, /bad\.ts\(\d+,\d+\): error TS2339: Property 'doesNotExist' does not exist/);
  rmSync(join(dir, "bad.ts"));

  const ran = ok(join(dir, "node_modules/.bin/eddy"), ["run", "job.ts", "--no-progress", "--no-control"], dir, home());
  const counts = ran.stdout.trim().split("\n").map((l) => JSON.parse(l) as { word: string; count: number });
  const finals = new Map(counts.map((c) => [c.word, c.count]));
  assert.deepEqual(Object.fromEntries(finals), { to: 2, be: 2, or: 1, not: 1 });
  assert.equal(ok(join(dir, "node_modules/.bin/eddy"), ["--version"], dir, home()).stdout.trim(), `eddy ${tarballs.get("eddy")!.manifest.version}`);
});

test("from the installed package, eddy run serves the web UI's built bundle; eddy ui logs a browser in", { timeout: 120_000 }, async () => {
  const dir = join(work, "ui");
  install(dir, { name: "ui", private: true, type: "module", dependencies: { eddy: "^0.1.0" } });
  copyFileSync(join(import.meta.dirname, "jobs/endless.ts"), join(dir, "endless.ts"));
  const child = spawn(join(dir, "node_modules/.bin/eddy"), ["run", "endless.ts", "--no-progress"], { cwd: dir, env: { ...USER_ENV, ...home() }, stdio: ["ignore", "ignore", "pipe"] });
  try {
    let stderr = "";
    const address = await new Promise<string>((resolve, reject) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        const found = /\[eddy\] web UI on (http:\/\/127\.0\.0\.1:\d+)\//.exec(stderr);
        if (found !== null) resolve(found[1]!);
      });
      child.on("exit", () => reject(new Error(`eddy run ended before serving its UI:\n${stderr}`)));
    });
    const link = ok(join(dir, "node_modules/.bin/eddy"), ["ui", "endless"], dir, home()).stdout.trim();
    const login = await fetch(link, { redirect: "manual" });
    assert.equal(login.status, 303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    const page = await fetch(`${address}/`, { headers: { cookie } });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<meta name="eddy-csrf" content="[A-Za-z0-9_-]{43}"><meta name="eddy-job" content="endless"><script type="module" src="\/ui\/app.js">/);
    for (const [path, type, atLeast] of [["/ui/app.js", "text/javascript", 100_000], ["/ui/app.css", "text/css", 1_000]] as const) {
      const asset = await fetch(`${address}${path}`);
      assert.equal(asset.status, 200, `${path}: ${await asset.clone().text()}`);
      assert.match(asset.headers.get("content-type") ?? "", new RegExp(`^${type}`));
      assert.ok((await asset.arrayBuffer()).byteLength >= atLeast, `${path} is the built bundle`);
    }
  } finally {
    child.kill("SIGKILL");
  }
});

test("from the installed package, a user function's failure names the user's .ts line, without Eddy's frames", () => {
  const dir = join(work, "fresh");
  const failing = JOB.replace('.sum("count")', '.map((r) => {\n      if (r.word === "not") throw new TypeError(`no ${r.word}`);\n      return r;\n    })');
  writeFileSync(join(dir, "failing.ts"), failing);
  const line = failing.split("\n").findIndex((l) => l.includes("throw new TypeError")) + 1;
  for (const parallelism of ["1", "2"]) {
    const ran = run(join(dir, "node_modules/.bin/eddy"), ["run", "failing.ts", "-p", parallelism, "--no-progress", "--no-control", "--log-format", "json", "--restart-strategy", "none"], dir, home());
    assert.equal(ran.status, 1, ran.stderr);
    const failure = ran.stderr.split("\n").find((l) => l.startsWith("{") && l.includes("TypeError: no not"));
    assert.ok(failure !== undefined, `-p ${parallelism}: no failure line:\n${ran.stderr}`);
    const fields = JSON.parse(failure) as { location?: string; stack?: string };
    assert.equal(fields.location?.replace(/:\d+$/, ""), `${join(dir, "failing.ts")}:${line}`, `-p ${parallelism}`);
    assert.doesNotMatch(fields.stack ?? "", /node_modules[/\\]eddy[/\\]/, `-p ${parallelism}: Eddy's frames in the stack`);
  }
});

test("eddy/postgres without the optional peer pg: the job type-checks, and building the sink fails saying `npm i pg` (the 9-line job above ran without pg)", () => {
  const dir = join(work, "fresh");
  writeFileSync(
    join(dir, "to-postgres.ts"),
    `import { defineJob } from "eddy";
import { PostgresSink } from "eddy/postgres";

export default defineJob("to-postgres", (env) => {
  env.fromElements({ id: 1 }).sinkTo(PostgresSink.append<{ id: number }>({ connection: "postgres://localhost/none", table: "t", columns: ["id"] }));
});
`,
  );
  const checked = run(join(dir, "node_modules/.bin/tsc"), ["--noEmit"], dir);
  assert.equal(checked.status, 0, `tsc failed:\n${checked.stdout}${checked.stderr}`);
  const ran = run(join(dir, "node_modules/.bin/eddy"), ["run", "to-postgres.ts", "--no-progress", "--no-control", "--restart-strategy", "none"], dir, home());
  assert.notEqual(ran.status, 0);
  assert.match(ran.stderr, /POSTGRES_CLIENT_MISSING|needs the PostgreSQL client package 'pg'/);
  assert.match(ran.stderr, /npm i pg/);
  rmSync(join(dir, "to-postgres.ts"));
});

test("eddy/nats without the optional peers @nats-io/jetstream and @nats-io/transport-node: the job type-checks, and building the source fails saying which packages to install", () => {
  const dir = join(work, "fresh");
  writeFileSync(
    join(dir, "from-nats.ts"),
    `import { defineJob, WatermarkStrategy } from "eddy";
import { NatsSink, NatsSource } from "eddy/nats";

export default defineJob("from-nats", (env) => {
  const connection = { servers: "nats://127.0.0.1:1" };
  env.fromSource(NatsSource.json<{ id: number }>({ connection, stream: "IN", bounded: true }), WatermarkStrategy.noWatermarks(), "in")
    .sinkTo(NatsSink.json<{ id: number }>({ connection, subject: "out" }));
});
`,
  );
  const checked = run(join(dir, "node_modules/.bin/tsc"), ["--noEmit"], dir);
  assert.equal(checked.status, 0, `tsc failed:\n${checked.stdout}${checked.stderr}`);
  const ran = run(join(dir, "node_modules/.bin/eddy"), ["run", "from-nats.ts", "--no-progress", "--no-control", "--restart-strategy", "none"], dir, home());
  assert.notEqual(ran.status, 0);
  assert.match(ran.stderr, /NATS_CLIENT_MISSING|needs the official client packages/);
  assert.match(ran.stderr, /npm i @nats-io\/jetstream @nats-io\/transport-node/);
  rmSync(join(dir, "from-nats.ts"));
});

test("a CommonJS project gets one message saying what to change", () => {
  const dir = join(work, "commonjs");
  install(dir, { name: "commonjs", version: "1.0.0", type: "commonjs", dependencies: { eddy: "^0.1.0" } });
  writeFileSync(join(dir, "job.ts"), JOB);
  const ran = run(join(dir, "node_modules/.bin/eddy"), ["run", "job.ts", "--no-progress", "--no-control"], dir, home());
  assert.equal(ran.status, 2);
  assert.equal(ran.stdout, "");
  assert.equal(
    ran.stderr.trim(),
    `eddy: job.ts would load as CommonJS: ${join(dir, "package.json")} says "type": "commonjs". Eddy jobs are ES modules: set "type": "module" there (npm pkg set type=module), or rename it to job.mts`,
  );
  const required = run(process.execPath, ["-e", "require('eddy')"], dir, home());
  assert.notEqual(required.status, 0);
  assert.match(required.stderr, /Eddy is an ES module package and cannot be loaded with require\(\)\. Add "type": "module"/);
  assert.doesNotMatch(required.stderr, /in a cycle/);
});

test("npm create eddy: the project it writes passes its own npm test and runs", () => {
  const tools = join(work, "create");
  install(tools, { name: "create", private: true, dependencies: { "create-eddy": "^0.1.0" } });
  const created = ok(join(tools, "node_modules/.bin/create-eddy"), ["my-job"], work, home());
  assert.match(created.stdout, /Created my-job in .*my-job:\n(?: {2}\S+\n)+\nNext:\n {2}cd my-job\n {2}npm install\n/);
  const dir = join(work, "my-job");
  const project = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as ProjectManifest & { type: string; dependencies: Record<string, string> };
  assert.equal(project.name, "my-job");
  assert.equal(project.type, "module");
  assert.equal(project.dependencies.eddy, `^${tarballs.get("eddy")!.manifest.version}`);
  installOffline(dir, project, tarballs, false);

  const tested = ok("npm", ["test"], dir, home());
  assert.match(tested.stdout, /# pass 2\n# fail 0/);
  const started = ok(join(dir, "node_modules/.bin/eddy"), ["run", "src/job.ts", "--no-progress", "--no-control"], dir, home());
  const averages = started.stdout.trim().split("\n").map((l) => JSON.parse(l) as { sensor: string; readings: number });
  // 5 sensors, 10 minutes of readings, 10-second windows: 60 windows each, and one more before the
  // first for a sensor whose first reading arrived jittered before the start; no reading lost.
  const windows = new Map<string, number>();
  for (const a of averages) windows.set(a.sensor, (windows.get(a.sensor) ?? 0) + 1);
  assert.deepEqual([...windows.keys()].sort(), ["sensor-0", "sensor-1", "sensor-2", "sensor-3", "sensor-4"]);
  for (const [sensor, n] of windows) assert.ok(n === 60 || n === 61, `${sensor}: ${n} windows`);
  assert.equal(averages.reduce((n, a) => n + a.readings, 0), 10 * 60 * 5);

  // Writing into a directory that has the files refuses, and writes nothing.
  const again = run(join(tools, "node_modules/.bin/create-eddy"), ["my-job"], work, home());
  assert.equal(again.status, 1);
  assert.match(again.stderr, /already has package\.json, .*; nothing was written/);
});
