/**
 * How long a user's `tsc --noEmit` takes for a 9-line job in a fresh project (issue 32's
 * measurement): the package as `npm pack` makes it now (compiled, with declarations) against,
 * optionally, an older tarball (e.g. one that shipped TypeScript sources, which every `tsc` run
 * then type-checked), and against the floor (the same project without Eddy: TypeScript's own lib
 * and @types/node). Rounds alternate between the projects; medians are reported.
 *
 *   node -C eddy-source --import tsx bench/tsc-fresh-project.ts [--rounds 5] [--before old.tgz]
 *
 * An old tarball of this repository: `git worktree add --detach /tmp/old <commit> && cd
 * /tmp/old/packages/eddy && npm pack` (its sources need `allowImportingTsExtensions` and more,
 * set here for it). Installs offline, as test/package.test.ts does.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { installOffline, NINE_LINE_JOB as JOB, ok, packWorkspace, type Tarball } from "../test/npm-project.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "5" }, before: { type: "string" } } });
const rounds = Number(values.rounds);


const work = mkdtempSync(join(tmpdir(), "eddy-tsc-bench-"));
try {
  const manifestOf = (file: string): Tarball["manifest"] => JSON.parse(ok("tar", ["-xOzf", file, "package/package.json"], work).stdout) as Tarball["manifest"];
  const now = packWorkspace("eddy", work);
  const projects: { name: string; dir: string }[] = [];
  const make = (name: string, eddy: Tarball | undefined, job: string, extra: Record<string, unknown> = {}, devDependencies: Record<string, string> = {}): void => {
    const dir = join(work, name.replace(/\W+/g, "-"));
    const tarballs = new Map(eddy === undefined ? [] : [["eddy", eddy] as const]);
    installOffline(dir, { name: "fresh", private: true, type: "module", dependencies: eddy === undefined ? {} : { eddy: "*" }, devDependencies: { typescript: "~5.9.3", "@types/node": "^20.19.0", ...devDependencies } }, tarballs);
    ok(join(dir, "node_modules/.bin/tsc"), ["--init"], dir);
    if (Object.keys(extra).length > 0) {
      // tsc --init writes comments: keep its text, set ours (replacing a setting it has).
      let text = readFileSync(join(dir, "tsconfig.json"), "utf8");
      for (const [k, v] of Object.entries(extra)) {
        const setting = new RegExp(`^(\\s*)(?://\\s*)?"${k}":.*$`, "m");
        const line = `"${k}": ${JSON.stringify(v)},`;
        text = setting.test(text) ? text.replace(setting, `$1${line}`) : text.replace('"compilerOptions": {', `"compilerOptions": {\n    ${line}`);
      }
      writeFileSync(join(dir, "tsconfig.json"), text);
    }
    writeFileSync(join(dir, "job.ts"), job);
    ok(join(dir, "node_modules/.bin/tsc"), ["--noEmit"], dir); // fails here if the project does not type-check
    projects.push({ name, dir });
  };
  make("floor (no Eddy)", undefined, `/// <reference types="node" />\nexport const x: number = 1;\n`);
  make(`eddy ${now.manifest.version} (this checkout)`, now, JOB);
  if (values.before !== undefined) {
    const before = { file: values.before, manifest: manifestOf(values.before) };
    // What a user had to add before: TypeScript sources need allowImportingTsExtensions, Node's
    // types, Eddy's own laxer exactOptionalPropertyTypes, and the types of its dependencies.
    make(`before (${values.before})`, before, JOB, { allowImportingTsExtensions: true, noEmit: true, types: ["node"], exactOptionalPropertyTypes: false }, { "@types/picomatch": "^4.0.3" });
  }
  // Wall time, and the CPU time of tsc's process (user + system, from GNU time), which a busy
  // machine inflates far less than the wall time: on a quiet machine the two are close.
  const times = new Map<string, { wall: number[]; cpu: number[] }>(projects.map((p) => [p.name, { wall: [], cpu: [] }]));
  for (let round = 0; round < rounds; round++) {
    for (const p of round % 2 === 0 ? projects : [...projects].reverse()) {
      const started = performance.now();
      const out = ok("/usr/bin/time", ["-f", "cpu %U %S", join(p.dir, "node_modules/.bin/tsc"), "--noEmit"], p.dir);
      const wall = performance.now() - started;
      const cpu = /cpu (\d+\.\d+) (\d+\.\d+)\s*$/.exec(out.stderr);
      if (cpu === null) throw new Error(`no CPU time from /usr/bin/time: ${out.stderr}`);
      times.get(p.name)!.wall.push(wall);
      times.get(p.name)!.cpu.push((Number(cpu[1]) + Number(cpu[2])) * 1000);
    }
  }
  console.log(`tsc --noEmit of a 9-line job in a fresh project (tsc --init settings), ${rounds} alternated rounds, ms (wall; CPU of tsc):`);
  const show = (xs: number[]): string => `median ${Math.round(median(xs))} (${xs.map((m) => Math.round(m)).join(", ")})`;
  for (const [name, t] of times) console.log(`  ${name.padEnd(48)} wall ${show(t.wall)}; CPU ${show(t.cpu)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
