// Entry point of an Eddy worker thread. Worker threads do not inherit the loader hooks of the
// thread that starts them, so register tsx here (job modules and Eddy's sources are TypeScript),
// then run the worker.
import { register } from "tsx/esm/api";

register();
await import("./thread-worker.ts");
