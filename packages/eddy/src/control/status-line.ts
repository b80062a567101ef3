/**
 * The live progress line of `eddy run`, kept apart from the job's records. The line is drawn on
 * stderr, and only when stderr is a terminal (`\r` and the erase sequence mean nothing in a file
 * or pipe). When stdout is a terminal too, the two usually are the same screen: a record written
 * while the line is drawn would be glued onto it, so the line is erased first and redrawn at the
 * next `show` (the CLI redraws once a second) rather than after every record, which would triple what a
 * busy `print()` writes to the terminal. When stdout is not a terminal, records pass untouched.
 * Other stderr output (logs, messages) goes through `writeError`, which erases the line first too.
 *
 * Call order: any method at any time, from the one thread that writes both streams.
 */

/** The part of a process stream the status line needs; `isTTY` as on process.stdout/stderr. */
export interface TerminalStream {
  write(text: string): unknown;
  readonly isTTY?: boolean | undefined;
}

/** Back to the start of the line, then erase it (ECMA-48 CR + EL 2). */
export const ERASE_LINE = "\r\x1b[2K";

export class StatusLine {
  readonly #err: TerminalStream;
  readonly #out: TerminalStream;
  /** Whether a status line is drawn: stderr is a terminal and the caller wants progress. */
  readonly enabled: boolean;
  /** Whether the cursor is on a drawn status line (so the next write must erase it first). */
  #drawn = false;

  constructor(err: TerminalStream, out: TerminalStream, wanted = true) {
    this.#err = err;
    this.#out = out;
    this.enabled = wanted && err.isTTY === true;
  }

  /** Draws (or redraws) the line with `text`; no-op when not enabled. `text` has no newline. */
  show(text: string): void {
    if (!this.enabled) return;
    this.#err.write(ERASE_LINE + text);
    this.#drawn = true;
  }

  /** Writes one record line to stdout, erasing the status line first when both are terminals. */
  writeRecord(line: string): void {
    if (this.#drawn && this.#out.isTTY === true) this.#erase();
    this.#out.write(line + "\n");
  }

  /** Writes `text` (whole lines) to stderr, below no status line. */
  writeError(text: string): void {
    if (this.#drawn) this.#erase();
    this.#err.write(text);
  }

  /** Erases the line for good (before the final summary); show() may draw it again. */
  clear(): void {
    if (this.#drawn) this.#erase();
  }

  #erase(): void {
    this.#err.write(ERASE_LINE);
    this.#drawn = false;
  }
}
