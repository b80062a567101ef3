/**
 * Where a failure is in the user's code: the frames of a stack that are not Eddy's, not an npm
 * package's and not Node's own. A user function's error reaches the CLI wrapped once
 * (errors.ts, userFunctionError), its own stack under "Caused by:"; on a worker thread its frames
 * were already mapped back to the original .ts files (executor/source-map-stack.ts), inline tsx
 * maps them. So the user's `file:line:column` is read from the text of the stack, the same way for
 * both.
 *
 * A frame belongs to Eddy when its file is under Eddy's package root. The root is two folders up
 * from this file, `src/core/` in this repository as `dist/core/` in a compiled package, so the
 * check holds for both (and for `bin/`).
 */
import { isAbsolute } from "node:path";
import { fileURLToPath } from "node:url";
import { EddyError } from "./errors.ts";
import type { LogFields, Logger } from "./logger.ts";

/** Eddy's package directory, with a trailing separator. */
export const EDDY_PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** How many causes of an error its stack text follows (a cycle of causes must end). */
const MAX_CAUSES = 4;
export const CAUSED_BY = "Caused by: ";
/** A frame's `file:line:column`: `at fn (file:l:c)` or `at file:l:c` (an eval frame's ends in `<anonymous>:l:c`, never a user's). */
const IN_PARENS = /\(([^()]+):(\d+):(\d+)\)$/;
const BARE = /^at ([^()]+):(\d+):(\d+)$/;

/** The error's stack followed by its causes', each after "Caused by: " (the whole story of a failure). */
export function stackWithCauses(e: Error): string | undefined {
  let stack = e.stack;
  let cause = e.cause;
  for (let depth = 0; depth < MAX_CAUSES && cause instanceof Error && cause.stack !== undefined; depth++, cause = cause.cause) {
    stack = `${stack ?? ""}\n${CAUSED_BY}${cause.stack}`;
  }
  return stack;
}

/** The `path:line:column` of a stack frame line in the user's code, or undefined. */
function userFrameLocation(line: string): string | undefined {
  const frame = line.trim();
  if (!frame.startsWith("at ")) return undefined;
  const m = IN_PARENS.exec(frame) ?? BARE.exec(frame);
  if (m === null) return undefined;
  const file = m[1]!;
  let path = file;
  try {
    if (file.startsWith("file://")) path = fileURLToPath(file);
  } catch {
    return undefined; // not a file URL after all
  }
  if (!isAbsolute(path)) return undefined; // node:internal/…, <anonymous>, native
  if (path.startsWith(EDDY_PACKAGE_ROOT) || /[/\\]node_modules[/\\]/.test(path)) return undefined;
  return `${path}:${m[2]}:${m[3]}`;
}

interface StackSection {
  /** The error's "Name: message" line(s). */
  readonly header: string[];
  readonly frames: string[];
}

/** A stack text (as stackWithCauses writes it) split into the error and each of its causes. */
function sections(stack: string): StackSection[] {
  const out: { header: string[]; frames: string[] }[] = [];
  for (const line of stack.split("\n")) {
    const current = out.at(-1);
    if (current === undefined || line.startsWith(CAUSED_BY)) out.push({ header: [line.startsWith(CAUSED_BY) ? line.slice(CAUSED_BY.length) : line], frames: [] });
    else if (line.trimStart().startsWith("at ") || current.frames.length > 0) current.frames.push(line);
    else current.header.push(line);
  }
  return out;
}

/**
 * The stack with only the user's frames: each error (or cause) that has some, its "TypeError: …"
 * line first; undefined when no frame is the user's (the failure is in Eddy or a package).
 */
export function userStack(stack: string): string | undefined {
  const kept: string[] = [];
  for (const s of sections(stack)) {
    const frames = s.frames.filter((f) => userFrameLocation(f) !== undefined);
    if (frames.length > 0) kept.push([...s.header, ...frames].join("\n"));
  }
  return kept.length === 0 ? undefined : kept.join(`\n${CAUSED_BY}`);
}

/** Where the user's code failed: the first user frame of the innermost cause that has one. */
export function userLocation(stack: string): string | undefined {
  const all = sections(stack);
  for (let i = all.length - 1; i >= 0; i--) {
    for (const f of all[i]!.frames) {
      const at = userFrameLocation(f);
      if (at !== undefined) return at;
    }
  }
  return undefined;
}

/**
 * The fields of the one log line that reports a failure: the message and code, and where it
 * happened (operator, subtask of parallelism, the user's location, the whole stack). A logger
 * that shows people the stack trims it with userStack (the CLI does, unless --verbose).
 */
export function failureFields(e: unknown): Record<string, unknown> {
  if (!(e instanceof Error)) return { error: String(e) };
  const stack = stackWithCauses(e);
  const location = stack === undefined ? undefined : userLocation(stack);
  return {
    error: e.message,
    ...(e instanceof EddyError
      ? {
          code: e.code,
          ...(e.operator === undefined ? {} : { operator: e.operator }),
          ...(e.subtask === undefined ? {} : { subtask: e.subtask }),
          ...(e.parallelism === undefined ? {} : { parallelism: e.parallelism }),
        }
      : {}),
    ...(location === undefined ? {} : { location }),
    ...(stack === undefined ? {} : { stack }),
  };
}

/** `logger` with the `stack` field of each line cut to the user's frames (userStack): what `eddy run` shows without --verbose. */
export function userStacksOnly(logger: Logger): Logger {
  const trim = (fields: LogFields | undefined): LogFields | undefined => {
    const stack = fields?.stack;
    if (typeof stack !== "string") return fields;
    const { stack: _whole, ...rest } = fields!;
    const user = userStack(stack);
    return user === undefined ? rest : { ...rest, stack: user };
  };
  return {
    debug: (message, fields) => logger.debug(message, trim(fields)),
    info: (message, fields) => logger.info(message, trim(fields)),
    warn: (message, fields) => logger.warn(message, trim(fields)),
    error: (message, fields) => logger.error(message, trim(fields)),
  };
}
