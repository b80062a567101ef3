/**
 * The file source's split enumerator (Flink's StaticFileSplitEnumerator and
 * ContinuousFileSplitEnumerator in one): discovers the files of the path, cuts them into splits
 * and hands them out on request (pull-based: a reader asks when it has nothing left to read, so
 * fast readers take more and nothing is assigned to a reader that is busy).
 *
 * Bounded: one discovery at start; once every split is handed out, a reader that asks is told
 * that no more come. Continuous: a discovery every `monitorIntervalMs`; files not seen before
 * become splits in modification order; readers that ask while nothing is pending wait for the
 * next discovery. The set of seen paths grows with every file (as in Flink): a directory that
 * keeps millions of files wants files moved away once read.
 *
 * Checkpointed state: the splits not handed out, whether the first discovery happened, and in
 * continuous mode the seen paths. A split handed out before the snapshot is in that reader's
 * state instead (assignments and barriers reach a reader in order, see SourceCoordinators).
 * Requests are not state: after a restore every reader asks again.
 */
import type { Clock, ScheduledCallback } from "../../core/clock.ts";
import { EddyError } from "../../core/errors.ts";
import type { SplitEnumerator, SplitEnumeratorContext } from "../source.ts";
import { discoverFiles, type DiscoveredFile, type PathPattern } from "./file-discovery.ts";
import { parseFileSplit, splitsOfFile, type FileSplit } from "./file-split.ts";

export const FILE_ENUMERATOR_STATE_VERSION = 1;

export interface FileEnumeratorState {
  readonly v: 1;
  /** Splits discovered and not handed out, in the order they will be. */
  readonly pending: readonly FileSplit[];
  /** Whether the first discovery completed (a bounded source discovers only once). */
  readonly discovered: boolean;
  /** Continuous mode: every path already turned into splits. Empty when bounded. */
  readonly seen: readonly string[];
}

export interface FileEnumeratorOptions {
  readonly pattern: PathPattern;
  /** Undefined: bounded. */
  readonly monitorIntervalMs: number | undefined;
  readonly clock: Clock;
  /** Whether the format may read `path` by byte ranges (uncompressed line formats). */
  readonly splittable: (path: string) => boolean;
  readonly splitBytes: number;
}

export function fileSplitEnumerator(
  context: SplitEnumeratorContext<FileSplit>,
  options: FileEnumeratorOptions,
  restored?: FileEnumeratorState,
): SplitEnumerator<FileSplit> {
  const continuous = options.monitorIntervalMs !== undefined;
  const pending: FileSplit[] = restored === undefined ? [] : [...restored.pending];
  let discovered = restored?.discovered ?? false;
  /** Paths already turned into splits (continuous mode only). */
  const seen = new Set<string>(restored?.seen ?? []);
  /** Readers that asked while nothing was pending, oldest first; each at most once. */
  const waiting: number[] = [];
  let timer: ScheduledCallback | undefined;
  let discovering = false;
  let closed = false;

  const serve = (): void => {
    while (waiting.length > 0) {
      const split = pending.shift();
      if (split !== undefined) context.assignSplits(waiting.shift()!, [split]);
      else if (discovered && !continuous) context.signalNoMoreSplits(waiting.shift()!);
      else return;
    }
  };

  const add = (files: readonly DiscoveredFile[]): void => {
    for (const f of files) {
      if (continuous) {
        if (seen.has(f.path)) continue;
        seen.add(f.path);
      }
      pending.push(...splitsOfFile(f.path, f.sizeBytes, options.splittable(f.path), options.splitBytes));
    }
  };

  const discover = (): void => {
    if (discovering || closed) return;
    discovering = true;
    discoverFiles(options.pattern).then(
      (files) => {
        discovering = false;
        if (closed) return;
        add(files);
        discovered = true;
        serve();
        schedule();
      },
      (e: unknown) => {
        discovering = false;
        if (!closed) context.failJob(e);
      },
    );
  };

  const schedule = (): void => {
    if (!continuous || closed) return;
    timer = options.clock.schedule(options.clock.now() + options.monitorIntervalMs!, () => {
      timer = undefined;
      discover();
    });
  };

  return {
    start() {
      if (continuous || !discovered) discover();
    },
    addReader() {
      // Readers ask for splits themselves (handleSplitRequest).
    },
    handleSplitRequest(subtaskIndex) {
      if (!waiting.includes(subtaskIndex)) waiting.push(subtaskIndex);
      serve();
    },
    addSplitsBack(splits) {
      pending.unshift(...splits);
      serve();
    },
    snapshotState: (): FileEnumeratorState => ({ v: FILE_ENUMERATOR_STATE_VERSION, pending: [...pending], discovered, seen: continuous ? [...seen] : [] }),
    close() {
      closed = true;
      timer?.cancel();
      timer = undefined;
    },
  };
}

/** The enumerator state recorded by `snapshotState` (any version so far); throws CHECKPOINT_CORRUPT otherwise. */
export function parseFileEnumeratorState(value: unknown): FileEnumeratorState {
  const s = value as Partial<Record<keyof FileEnumeratorState, unknown>> | null;
  if (
    s === null ||
    typeof s !== "object" ||
    s.v !== FILE_ENUMERATOR_STATE_VERSION ||
    !Array.isArray(s.pending) ||
    typeof s.discovered !== "boolean" ||
    !Array.isArray(s.seen) ||
    !s.seen.every((p) => typeof p === "string")
  ) {
    throw new EddyError("CHECKPOINT_CORRUPT", `the file source's enumerator state in the checkpoint is not one this version reads: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  return { v: FILE_ENUMERATOR_STATE_VERSION, pending: s.pending.map(parseFileSplit), discovered: s.discovered, seen: s.seen as string[] };
}
