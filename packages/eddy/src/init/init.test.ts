import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { eddyVersion } from "../core/version.ts";
import { projectFiles, runInitCommand } from "./init.ts";

function io() {
  const out = { stdout: "", stderr: "" };
  return { out, io: { stdout: (s: string) => void (out.stdout += s), stderr: (s: string) => void (out.stderr += s) } };
}

test("the project's files: an ES module package on this Eddy version, the template with its name", () => {
  const files = projectFiles("sensors");
  assert.deepEqual([...files.keys()].sort(), [".gitignore", "README.md", "package.json", "src/job.ts", "src/pipeline.ts", "test/pipeline.test.ts", "tsconfig.json"]);
  const pkg = JSON.parse(files.get("package.json")!) as { name: string; type: string; dependencies: Record<string, string>; scripts: Record<string, string> };
  assert.equal(pkg.name, "sensors");
  assert.equal(pkg.type, "module");
  assert.deepEqual(pkg.dependencies, { eddy: `^${eddyVersion()}` });
  assert.match(pkg.scripts.test!, /^tsc --noEmit && /);
  assert.match(files.get("src/job.ts")!, /defineJob\("sensors"/);
  assert.match(files.get("README.md")!, /^# sensors\n/);
  for (const [file, text] of files) assert.doesNotMatch(text, /\{\{\w+\}\}/, `${file} keeps a placeholder`);
});

test("eddy init writes the project into a new directory, named after it", () => {
  const cwd = mkdtempSync(join(tmpdir(), "eddy-init-"));
  try {
    const { out, io: streams } = io();
    assert.equal(runInitCommand(["My Job"], streams, cwd), 0);
    const dir = join(cwd, "My Job");
    assert.equal((JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name: string }).name, "my-job");
    assert.ok(existsSync(join(dir, ".gitignore")) && !existsSync(join(dir, "_gitignore")));
    assert.match(out.stdout, /Next:\n {2}cd "My Job"\n {2}npm install\n/);
    assert.equal(out.stderr, "");
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});

test("eddy init writes nothing where one of its files exists, and refuses a bad package name", () => {
  const cwd = mkdtempSync(join(tmpdir(), "eddy-init-"));
  try {
    mkdirSync(join(cwd, "taken", "src"), { recursive: true });
    writeFileSync(join(cwd, "taken", "src", "job.ts"), "// mine\n");
    const taken = io();
    assert.equal(runInitCommand(["taken"], taken.io, cwd), 1);
    assert.match(taken.out.stderr, /already has src\/job\.ts; nothing was written/);
    assert.deepEqual(readdirSync(join(cwd, "taken")), ["src"]);
    assert.equal(readFileSync(join(cwd, "taken", "src", "job.ts"), "utf8"), "// mine\n");

    const bad = io();
    assert.equal(runInitCommand(["x", "--name", "Bad Name"], bad.io, cwd), 2);
    assert.match(bad.out.stderr, /'Bad Name' cannot be a package name/);
    assert.equal(existsSync(join(cwd, "x")), false);

    const extra = io();
    assert.equal(runInitCommand(["a", "b"], extra.io, cwd), 2);
    assert.match(extra.out.stderr, /one directory at most/);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
