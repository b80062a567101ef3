/**
 * One Eddy per thread. Two copies in one process (e.g. this repository's sources and its build in
 * dist/, or two installed versions) would each keep their own job registry, codecs and classes, and
 * fail later in ways that do not say why (`instanceof` false, "not a job"). So the second copy to
 * load throws, naming both.
 */
import { fileURLToPath } from "node:url";

const LOADED_FROM = Symbol.for("eddy.loadedFrom");
const here = fileURLToPath(new URL("../", import.meta.url));
const holder = globalThis as { [LOADED_FROM]?: string };
const first = holder[LOADED_FROM];
if (first !== undefined && first !== here) {
  throw new Error(
    `two copies of Eddy in one thread: ${first} and ${here}. Import Eddy only as "eddy" (not its files by path); ` +
      "in Eddy's own repository, run node with --conditions=eddy-source (the npm scripts do) so that \"eddy\" means its sources",
  );
}
holder[LOADED_FROM] = here;
