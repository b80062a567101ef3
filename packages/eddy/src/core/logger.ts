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

/** Writes one JSON object per line to a sink (stderr by default in the CLI). */
export function jsonLogger(write: (line: string) => void, level: LogLevel = "info"): Logger {
  const min = LEVEL_ORDER[level];
  const log = (lvl: Exclude<LogLevel, "silent">, message: string, fields?: LogFields): void => {
    if (LEVEL_ORDER[lvl] < min) return;
    write(JSON.stringify({ level: lvl, time: new Date().toISOString(), msg: message, ...fields }) + "\n");
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
