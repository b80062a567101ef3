/**
 * A job is a module whose default export is `defineJob(name, (env) => { ... })`
 * (docs/design/architecture.md, "A job is a module").
 */
import { pathToFileURL } from "node:url";
import { EddyError } from "../core/errors.ts";
import { StreamExecutionEnvironment } from "./environment.ts";

const JOB_BRAND = Symbol.for("eddy.job");

export interface JobDefinition {
  readonly name: string;
  readonly build: (env: StreamExecutionEnvironment) => void;
  /**
   * URLs of the modules on the call stack of `defineJob`, innermost first (the module that called
   * it, then e.g. the module that called a job factory). Worker threads import the one that
   * exports this very definition to rebuild the job; the coordinator checks that before relying
   * on it.
   */
  readonly moduleUrls: readonly string[];
  readonly [JOB_BRAND]: true;
}

export function defineJob(name: string, build: (env: StreamExecutionEnvironment) => void): JobDefinition {
  if (typeof name !== "string" || name.trim().length === 0) throw new TypeError("defineJob needs a non-empty job name");
  if (typeof build !== "function") throw new TypeError("defineJob needs a function (env) => { ... }");
  return Object.freeze({ name, build, moduleUrls: callerModuleUrls(), [JOB_BRAND]: true as const });
}

const THIS_FILE = import.meta.url;

/** The distinct modules of the stack frames outside this file, innermost first, as file URLs. */
function callerModuleUrls(): string[] {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 12;
  const stack = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  const urls: string[] = [];
  for (const line of stack.split("\n").slice(1)) {
    const match = /((?:file:\/\/)?(?:\/|[A-Za-z]:[\\/])[^()]*?):\d+:\d+\)?\s*$/.exec(line);
    if (match === null) continue;
    const file = match[1]!;
    const url = file.startsWith("file://") ? file : pathToFileURL(file).href;
    if (url === THIS_FILE || urls.includes(url)) continue;
    urls.push(url);
  }
  return urls;
}

export function isJobDefinition(value: unknown): value is JobDefinition {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[JOB_BRAND] === true;
}

/** Accepts a job definition or a module namespace whose default export is one. */
export function resolveJob(jobOrModule: unknown, what = "job"): JobDefinition {
  if (isJobDefinition(jobOrModule)) return jobOrModule;
  if (typeof jobOrModule === "object" && jobOrModule !== null && "default" in jobOrModule) {
    const def = (jobOrModule as { default: unknown }).default;
    if (isJobDefinition(def)) return def;
  }
  throw new EddyError("NOT_A_JOB", `${what} does not export a job: use \`export default defineJob("name", (env) => { ... })\``);
}

/** Runs the job function against a fresh environment and returns it. */
export function buildJob(job: JobDefinition): StreamExecutionEnvironment {
  const env = new StreamExecutionEnvironment();
  try {
    job.build(env);
  } catch (e) {
    if (e instanceof EddyError) throw e;
    throw new EddyError("JOB_BUILD_FAILED", `building job '${job.name}' failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  return env;
}
