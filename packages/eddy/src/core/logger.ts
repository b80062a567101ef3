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

/** A level `lvl` entry, made into its line (with its newline). */
type LineFormat = (lvl: Exclude<LogLevel, "silent">, message: string, fields: LogFields | undefined) => string;

/** A logger writing each entry of at least `level` as the line `format` makes of it. */
function lineLogger(format: LineFormat, write: (line: string) => void, level: LogLevel): Logger {
  const min = LEVEL_ORDER[level];
  const log = (lvl: Exclude<LogLevel, "silent">, message: string, fields?: LogFields): void => {
    if (LEVEL_ORDER[lvl] >= min) write(format(lvl, message, fields));
  };
  return {
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
  };
}

/** One JSON object per line: level, time, msg and the fields. Long texts are truncated. */
const jsonLine: LineFormat = (lvl, message, fields) => {
  const line: Record<string, unknown> = { level: lvl, time: new Date().toISOString(), msg: truncateText(message) };
  if (fields !== undefined) for (const [k, v] of Object.entries(fields)) line[k] = typeof v === "string" ? truncateText(v) : v;
  return JSON.stringify(line) + "\n";
};

/**
 * One line for a person to read: `12:34:56.789Z WARN  message key=value …` (UTC time of day),
 * fields as `key=value` with strings quoted when they hold spaces or quotes, and a `stack` field
 * on the lines below, indented. Long texts are truncated as in the JSON lines.
 */
const textLine: LineFormat = (lvl, message, fields) => {
  let line = `${new Date().toISOString().slice(11)} ${lvl.toUpperCase().padEnd(5)} ${truncateText(message)}`;
  let stack: string | undefined;
  if (fields !== undefined) {
    for (const [k, v] of Object.entries(fields)) {
      if (v === undefined) continue;
      if (k === "stack" && typeof v === "string") stack = truncateText(v);
      else line += ` ${k}=${textValue(v)}`;
    }
  }
  if (stack !== undefined) line += "\n" + stack.split("\n").map((l) => `    ${l.trimStart()}`).join("\n");
  return line + "\n";
};

/** Writes one JSON object per line to a sink (stderr by default in the CLI). Long texts are truncated. */
export function jsonLogger(write: (line: string) => void, level: LogLevel = "info"): Logger {
  return lineLogger(jsonLine, write, level);
}

/** How a CLI writes its logs: "text" for a person (the default), "json" for a log pipeline. */
export type LogFormat = "text" | "json";

/** Writes one line per entry for a person to read (textLine). */
export function textLogger(write: (line: string) => void, level: LogLevel = "info"): Logger {
  return lineLogger(textLine, write, level);
}

function textValue(v: unknown): string {
  if (typeof v === "string") {
    const t = truncateText(v);
    return /^[^\s"=]+$/.test(t) ? t : JSON.stringify(t);
  }
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint" || v === null) return String(v);
  try {
    return truncateText(JSON.stringify(v) ?? String(v));
  } catch {
    return String(v);
  }
}

/** The logger of `format`. */
export function formattedLogger(format: LogFormat, write: (line: string) => void, level: LogLevel = "info"): Logger {
  return format === "json" ? jsonLogger(write, level) : textLogger(write, level);
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
