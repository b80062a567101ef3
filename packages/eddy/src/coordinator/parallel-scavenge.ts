/**
 * V8's parallel scavenger (its young-generation GC) sends helper threads into every scavenge. A
 * process running one worker thread per core has no idle core for them: they compete with the
 * other workers, and each scavenge lasts longer (Nexmark q4 at parallelism 2 on 2 cores: 3.06 ms
 * per scavenge against 2.16 at parallelism 1, for the same ~1 MB surviving). Without them, at
 * parallelism 2 on 2 cores, 5 M events, alternated runs: q4 2.41 → 2.17-2.24 s, q18 5.6-5.9 →
 * 5.1-5.3 s, q20 2.78-2.83 → 2.58 s, q3 1.22-1.27 → 1.16-1.21 s, q5 2.87 → 2.72-2.88 s; V8's
 * `--single-threaded-gc` (no GC helper threads at all) was no better than this one flag.
 *
 * The flag is the process's (V8 reads it at every scavenge of every isolate), so it is switched by
 * count: off while at least one threaded attempt holds it off, back on when the last one ends.
 * An attempt switches it before its workers start and after they are terminated, from the main
 * thread, so none of its own isolates is inside a scavenge then (another job's may be: it reads
 * the flag at its next scavenge). Node documents flags changed after start-up as unsupported in
 * general; this one is read per scavenge, and `--trace-gc-nvp` shows every scavenge of the
 * workers without helpers once it is off (`background.scavenge.parallel=0`).
 * Setting `taskmanager.gc.parallel-scavenge`:
 * - "auto" (the default): off while a job's worker threads are at least as many as the cores;
 * - "false": off while the job's worker threads run, however many;
 * - "true": Eddy never switches it off for this job (another job of the process may).
 * A process started with a GC flag of its own (`node --no-parallel-scavenge`,
 * `--single-threaded-gc`, …) is left as it was started.
 */
import { availableParallelism } from "node:os";
import { setFlagsFromString } from "node:v8";

export type ParallelScavengeSetting = "auto" | "true" | "false";

export const PARALLEL_SCAVENGE_SETTINGS: readonly ParallelScavengeSetting[] = ["auto", "true", "false"];

/** Flags on the command line that decide the scavenger's threads: the user's choice stands. */
const USER_GC_FLAG = /^--(?:no-)?(?:parallel[-_]scavenge|single[-_]threaded[-_]gc|single[-_]threaded)(?:=.*)?$/;

/** Whether `execArgv` (the process's Node and V8 flags) decides the scavenger's threads itself. */
export function userDecidesScavenge(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => USER_GC_FLAG.test(a));
}

/** Counts the holders of parallel scavenging off and switches the flag at the first and the last. */
export class ScavengeSwitch {
  readonly #setFlag: (flag: string) => void;
  readonly #userDecides: boolean;
  #holders = 0;

  constructor(setFlag: (flag: string) => void, userDecides: boolean) {
    this.#setFlag = setFlag;
    this.#userDecides = userDecides;
  }

  /** How many hold it off now. */
  get holders(): number {
    return this.#holders;
  }

  /**
   * Holds parallel scavenging off while an attempt with `workers` worker threads runs, if
   * `setting` says so on a machine of `cores`; returns its release (idempotent).
   */
  hold(setting: ParallelScavengeSetting, workers: number, cores: number): () => void {
    const off = setting === "false" || (setting === "auto" && workers >= cores);
    if (!off || this.#userDecides) return () => {};
    if (this.#holders++ === 0) this.#setFlag("--no-parallel-scavenge");
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holders === 0) this.#setFlag("--parallel-scavenge");
    };
  }
}

/** This process's switch. */
const processSwitch = new ScavengeSwitch(setFlagsFromString, userDecidesScavenge(process.execArgv));

/** How many threaded attempts hold this process's parallel scavenging off now. */
export function serialScavengeHolders(): number {
  return processSwitch.holders;
}

/** Holds parallel scavenging off for a threaded attempt of `workers` threads, as `setting` says (see above). */
export function holdSerialScavenge(setting: ParallelScavengeSetting, workers: number): () => void {
  return processSwitch.hold(setting, workers, availableParallelism());
}
