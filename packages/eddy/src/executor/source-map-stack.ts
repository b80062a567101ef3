/**
 * Stack traces of a worker that runs from a bundle (worker-bundle.ts) point into the bundle. This
 * rewrites each frame to the original file, line and column from the bundle's source map. The map
 * is read and parsed on the first error only: errors are rare, starts are not.
 */
import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";

export class StackMapper {
  readonly #bundleUrl: string;
  readonly #mapPath: string;
  #map: SourceMap | null | undefined;

  constructor(bundleUrl: string, mapPath: string) {
    this.#bundleUrl = bundleUrl;
    this.#mapPath = mapPath;
  }

  /** `stack` with frames in the bundle replaced by original locations (unchanged if the map is unreadable). */
  map(stack: string): string {
    if (!stack.includes(this.#bundleUrl)) return stack;
    const map = this.#load();
    if (map === null) return stack;
    const base = dirname(this.#mapPath);
    const frame = new RegExp(`${escapeRegExp(this.#bundleUrl)}:(\\d+):(\\d+)`, "g");
    return stack.replace(frame, (whole, line: string, column: string) => {
      const entry = map.findEntry(Number(line) - 1, Number(column) - 1) as Partial<{ originalSource: string; originalLine: number; originalColumn: number }>;
      if (entry.originalSource === undefined || entry.originalLine === undefined || entry.originalColumn === undefined) return whole;
      const source = entry.originalSource.startsWith("file:") ? entry.originalSource : pathToFileURL(resolve(base, entry.originalSource)).href;
      return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
    });
  }

  #load(): SourceMap | null {
    if (this.#map === undefined) {
      try {
        this.#map = new SourceMap(JSON.parse(readFileSync(this.#mapPath, "utf8")));
      } catch {
        this.#map = null;
      }
    }
    return this.#map;
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
