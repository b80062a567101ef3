/**
 * Builds the web UI's bundle (docs/web-ui.md) with esbuild: ui/src/main.ts, with elkjs and the
 * stylesheet it imports, into app.js and app.css. No network: everything comes from node_modules.
 *
 *   node ui/build.mjs            writes dist/ui/app.js and dist/ui/app.css (npm run build)
 *   bundleUi()                   the same files in memory (the control server, run from sources)
 */
import { build } from "esbuild";
import { mkdir, writeFile } from "node:fs/promises";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";

const here = new URL(".", import.meta.url);

/** The bundle's files by name (app.js, app.css). */
export async function bundleUi() {
  const result = await build({
    entryPoints: { app: fileURLToPath(new URL("src/main.ts", here)) },
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    legalComments: "eof",
    outdir: "/ui-out",
    write: false,
    logLevel: "silent",
  });
  return new Map(result.outputFiles.map((f) => [basename(f.path), f.contents]));
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = new URL("../dist/ui/", here);
  await mkdir(out, { recursive: true });
  for (const [name, contents] of await bundleUi()) await writeFile(new URL(name, out), contents);
}
