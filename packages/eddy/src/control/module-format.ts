/**
 * Whether a job file would load as CommonJS, which Eddy (an ES module package) cannot serve:
 * Node (and tsx) load `.js`/`.ts` files as CommonJS unless the nearest package.json says
 * "type": "module", and `npm init` writes "type": "commonjs". Loading such a job fails deep in
 * the module loader ("Cannot require() ES Module … in a cycle"); this says what to change instead.
 */
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";

/** The one-line reason `file` (an absolute path) would load as CommonJS, or undefined. */
export function commonJsJobProblem(file: string): string | undefined {
  const ext = extname(file);
  if (![".ts", ".tsx", ".js", ".jsx"].includes(ext)) return undefined; // .mts/.mjs are ES modules, .cts/.cjs CommonJS by name
  const pkg = nearestPackageJson(dirname(file));
  const rename = `or rename it to ${basename(file, ext)}${ext.startsWith(".t") ? ".mts" : ".mjs"}`;
  if (pkg === undefined) return `${basename(file)} would load as CommonJS: no package.json above it says "type": "module". Eddy jobs are ES modules: run \`npm init -y && npm pkg set type=module\` in the project, ${rename}`;
  let type: unknown;
  try {
    type = (JSON.parse(readFileSync(pkg, "utf8")) as { type?: unknown }).type;
  } catch {
    return undefined; // Node reports a broken package.json itself, naming it
  }
  if (type === "module") return undefined;
  const said = type === undefined ? "has no \"type\" field" : `says "type": ${JSON.stringify(type)}`;
  return `${basename(file)} would load as CommonJS: ${pkg} ${said}. Eddy jobs are ES modules: set "type": "module" there (npm pkg set type=module), ${rename}`;
}

function nearestPackageJson(dir: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    const candidate = join(d, "package.json");
    if (existsSync(candidate)) return candidate;
    if (dirname(d) === d) return undefined;
  }
}
