// Entry point of an Eddy worker thread that loads through the TypeScript loader, used when the
// worker's code could not be bundled (see worker-bundle.ts). Worker threads do not inherit the
// loader hooks of the thread that starts them, so register tsx here (job modules and Eddy's
// sources are TypeScript), then run the worker.
import { register } from "tsx/esm/api";

register();
const { runWorker } = await import("./thread-worker.ts");
runWorker();
