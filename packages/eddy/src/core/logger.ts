/** Structured logging, injected. Library code logs through this, never through `console`. */

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const LEVEL_ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/**
 * The most characters of one text (a message, a field) a log line carries: user code can throw
 * errors with messages of megabytes, and each would be written in full, more than once.
 */
export const MAX_LOGGED_TEXT_CHARS = 8_192;

/** `text` cut to `max` characters, saying how much was cut. */
export function truncateText(text: string, max = MAX_LOGGED_TEXT_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… (${(text.length - max).toLocaleString("en")} more characters)`;
}

/** Writes one JSON object per line to a sink (stderr by default in the CLI). Long texts are truncated. */
export function jsonLogger(write: (line: string) => void, level: LogLevel = "info"): Logger {
  const min = LEVEL_ORDER[level];
  const log = (lvl: Exclude<LogLevel, "silent">, message: string, fields?: LogFields): void => {
    if (LEVEL_ORDER[lvl] < min) return;
    const line: Record<string, unknown> = { level: lvl, time: new Date().toISOString(), msg: truncateText(message) };
    if (fields !== undefined) for (const [k, v] of Object.entries(fields)) line[k] = typeof v === "string" ? truncateText(v) : v;
    write(JSON.stringify(line) + "\n");
  };
  return {
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
  };
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
