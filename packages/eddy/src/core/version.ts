import { readFileSync } from "node:fs";

/** The version in Eddy's package.json (two levels up from here both in src/ and in dist/). */
export function eddyVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
  return typeof pkg.version === "string" ? pkg.version : "unknown";
}
