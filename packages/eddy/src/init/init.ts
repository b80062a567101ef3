/**
 * `eddy init [dir]` (and `npm create eddy`, whose package calls this): writes a new job project
 * from `template/`: an ES module package.json that depends on this version of Eddy, a tsconfig a
 * plain `tsc` accepts, a sample job, a test with `eddy/testing`, and a README. Writes nothing if
 * any of its files already exists.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { eddyVersion } from "../core/version.ts";

export interface InitIo {
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
}

/** The template's files (as shipped in Eddy's package) and what they are written as. */
const TEMPLATE = new URL("../../template/", import.meta.url);
/** npm leaves `.gitignore` files out of packages: the template names it `_gitignore`. */
const RENAMED: Readonly<Record<string, string>> = { _gitignore: ".gitignore" };

/** Versions of the tools the generated project needs (it runs TypeScript through tsx). */
const DEV_DEPENDENCIES = { "@types/node": "^20.19.0", tsx: "^4.23.0", typescript: "~5.9.3" };

const USAGE = "usage: eddy init [<directory>] [--name <package name>]\n";

/** Runs `eddy init`; returns the exit code. `cwd` is where a relative directory is resolved. */
export function runInitCommand(argv: readonly string[], io: InitIo, cwd = process.cwd()): number {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, options: { name: { type: "string" }, help: { type: "boolean", short: "h" } } });
  } catch (e) {
    io.stderr(`eddy init: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help === true) {
    io.stdout(USAGE);
    return 0;
  }
  if (parsed.positionals.length > 1) {
    io.stderr(`eddy init: one directory at most\n${USAGE}`);
    return 2;
  }
  const dir = resolve(cwd, parsed.positionals[0] ?? ".");
  const name = parsed.values.name ?? packageName(basename(dir));
  const problem = nameProblem(name);
  if (problem !== undefined) {
    io.stderr(`eddy init: '${name}' cannot be a package name (${problem}); choose one with --name\n`);
    return 2;
  }
  if (existsSync(dir) && !statSync(dir).isDirectory()) {
    io.stderr(`eddy init: ${dir} exists and is not a directory\n`);
    return 2;
  }
  const files = projectFiles(name);
  const taken = [...files.keys()].filter((f) => existsSync(join(dir, f)));
  if (taken.length > 0) {
    io.stderr(`eddy init: ${dir} already has ${taken.join(", ")}; nothing was written (choose an empty or new directory)\n`);
    return 1;
  }
  for (const [file, contents] of files) {
    mkdirSync(join(dir, file, ".."), { recursive: true });
    writeFileSync(join(dir, file), contents, { flag: "wx" });
  }
  const shown = relative(cwd, dir) || ".";
  io.stdout(
    `Created ${name} in ${dir}:\n${[...files.keys()].map((f) => `  ${f}\n`).join("")}\nNext:\n` +
      `${shown === "." ? "" : `  cd ${shown.includes(" ") ? JSON.stringify(shown) : shown}\n`}  npm install\n  npm start    # runs src/job.ts\n  npm test     # type-checks and runs test/*.test.ts\n`,
  );
  return 0;
}

/** The project's files by relative path (forward slashes), template placeholders filled in. */
export function projectFiles(name: string): Map<string, string> {
  const files = new Map<string, string>();
  files.set("package.json", `${JSON.stringify(packageJson(name), null, 2)}\n`);
  const root = fileURLToPath(TEMPLATE);
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const rel = relative(root, path).split("\\").join("/");
        const renamed = rel.split("/").map((part) => RENAMED[part] ?? part).join("/");
        files.set(renamed, readFileSync(path, "utf8").replaceAll("{{name}}", name));
      }
    }
  };
  walk(root);
  return files;
}

function packageJson(name: string): object {
  return {
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    scripts: {
      start: "eddy run src/job.ts",
      test: "tsc --noEmit && node --import tsx --test test/*.test.ts",
    },
    dependencies: { eddy: `^${eddyVersion()}` },
    devDependencies: DEV_DEPENDENCIES,
    engines: { node: ">=20.6" },
  };
}

/** A directory name made into an npm package name: lower case, no spaces. */
function packageName(dirName: string): string {
  return dirName.toLowerCase().replace(/[^a-z0-9._~-]+/g, "-").replace(/^[-._]+|-+$/g, "") || "eddy-job";
}

/** Why `name` is not a valid npm package name (unscoped or scoped), or undefined. */
function nameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > 214) return "1 to 214 characters";
  if (!/^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/.test(name)) return "lower-case letters, digits, '-', '.', '_' and '~', optionally @scope/";
  return undefined;
}
