/**
 * The failures of a job, kept for `GET /v1/job/exceptions` (Flink's exception history): each
 * failure that ended an attempt, with when it happened, where (operator, subtask), its code,
 * message, root cause and stack, and whether the job restarted after it.
 *
 * Bounds: the newest MAX_EXCEPTIONS entries (older ones are dropped and counted in `total`), each
 * stack cut to MAX_STACK_CHARS and each message to MAX_MESSAGE_CHARS, so the history holds at most
 * a few MB however often a job fails. Cost: one entry per failure, not per record.
 */
import { EddyError } from "../core/errors.ts";
import { CAUSED_BY, failureFields } from "../core/user-frames.ts";

/** Entries kept (Flink keeps 16 by default; restarts come in bursts, so a few more). */
export const MAX_EXCEPTIONS = 32;
/** Characters of a stack kept (the error's own frames come first, then its causes'). */
export const MAX_STACK_CHARS = 8 * 1024;
export const MAX_MESSAGE_CHARS = 2 * 1024;

export interface JobException {
  /** Wall-clock ms when the coordinator saw the failure. */
  readonly timeMs: number;
  /** Restarts before this failure: 0 for the first attempt. */
  readonly attempt: number;
  /** The error's code (an EddyError's), or undefined for another error. */
  readonly code: string | undefined;
  readonly message: string;
  /** The message of the innermost `cause`, when the error has one (what went wrong first). */
  readonly rootCause: string | undefined;
  /** The operator and subtask it happened in, when known (a user function's failure names them). */
  readonly operator: string | undefined;
  readonly subtask: number | undefined;
  /** The user's `file:line:column` the stack points at, when it points into user code. */
  readonly location: string | undefined;
  /** The stack with its causes', at most MAX_STACK_CHARS. */
  readonly stack: string | undefined;
  readonly stackTruncated: boolean;
  /** Whether the job restarted after it (false: the failure ended the job). */
  readonly restarted: boolean;
}

export class ExceptionHistory {
  /** Oldest first; at most MAX_EXCEPTIONS. */
  readonly #entries: JobException[] = [];
  #total = 0;

  /** Records a failure `e` seen at `timeMs`, before which the job restarted `attempt` times. */
  record(e: unknown, timeMs: number, attempt: number, restarted: boolean): void {
    const fields = failureFields(e);
    const stack = typeof fields.stack === "string" ? fields.stack : undefined;
    this.#entries.push({
      timeMs,
      attempt,
      code: e instanceof EddyError ? e.code : undefined,
      message: cut(String(fields.error), MAX_MESSAGE_CHARS),
      rootCause: rootCauseOf(e, stack),
      operator: typeof fields.operator === "string" ? fields.operator : undefined,
      subtask: typeof fields.subtask === "number" ? fields.subtask : undefined,
      location: typeof fields.location === "string" ? fields.location : undefined,
      stack: stack === undefined ? undefined : cut(stack, MAX_STACK_CHARS),
      stackTruncated: stack !== undefined && stack.length > MAX_STACK_CHARS,
      restarted,
    });
    this.#total++;
    if (this.#entries.length > MAX_EXCEPTIONS) this.#entries.shift();
  }

  /** Failures so far, including those no longer kept. */
  get total(): number {
    return this.#total;
  }

  /** The kept entries, newest first. */
  newestFirst(): JobException[] {
    return [...this.#entries].reverse();
  }
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max);
}

/**
 * The innermost cause (at most 16 levels down), as `Name: message`; or undefined when `e` has
 * none. An error from a worker thread arrives without its cause objects, their stacks in its own
 * (stackWithCauses): then the last "Caused by: " line of `stack` says it.
 */
function rootCauseOf(e: unknown, stack: string | undefined): string | undefined {
  let cause: unknown = e instanceof Error ? e.cause : undefined;
  let root: unknown;
  for (let depth = 0; depth < 16 && cause !== undefined && cause !== null; depth++) {
    root = cause;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  if (root !== undefined) return cut(root instanceof Error ? `${root.name}: ${root.message}` : String(root), MAX_MESSAGE_CHARS);
  const lines = stack?.split("\n").filter((line) => line.startsWith(CAUSED_BY)) ?? [];
  const last = lines.at(-1);
  return last === undefined ? undefined : cut(last.slice(CAUSED_BY.length), MAX_MESSAGE_CHARS);
}
