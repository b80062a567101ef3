/**
 * Nexmark q13 — bounded side input join. Every bid enriched with the value its auction maps to in
 * a small table read from a file (stream enrichment), as the nexmark suite's Flink SQL does with a
 * lookup join on a filesystem table:
 *
 *   CREATE TABLE side_input (key BIGINT, `value` VARCHAR) WITH ('connector' = 'filesystem', 'format' = 'csv', ...);
 *   SELECT B.auction, B.bidder, B.price, B.dateTime, S.`value`
 *   FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
 *   JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S ON mod(B.auction, 10000) = S.key;
 *
 * DataStream: a process function that loads the whole table when it opens (each subtask its own
 * copy, as Flink's filesystem lookup function caches all rows) and looks each bid's key up in a
 * Map: no keyed state, no shuffle. The table does not change while the job runs, so the
 * processing-time join's answer is the plain join's. A bid whose key is not in the table is
 * dropped (an inner join). The side input is `key,value` CSV lines; NEXMARK_SIDE_INPUT names the
 * file, and without it the job writes the suite's table (keys 0..9999, each value the key as text)
 * to a file in the temporary directory first.
 *
 *   NEXMARK_EVENTS=100000 npx eddy run examples/nexmark/q13.ts -p 2
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineJob, type Bid, type Collector, type DataStream, type ProcessContext, type ProcessFunction, type StreamExecutionEnvironment } from "eddy";
import { bidsOf, nexmarkEvents } from "./nexmark-streams.ts";

export interface Q13Result {
  readonly auction: number;
  readonly bidder: number;
  readonly price: number;
  readonly dateTime: number;
  readonly value: string;
}

/** Rows in the suite's side input (and the modulus of the join key). */
export const SIDE_INPUT_ROWS = 10_000;

/** The suite's side input as CSV: `key,value` for keys 0..rows-1, the value being the key as text. */
export function sideInputCsv(rows = SIDE_INPUT_ROWS): string {
  let text = "";
  for (let key = 0; key < rows; key++) text += `${key},${key}\n`;
  return text;
}

/** The side input file: NEXMARK_SIDE_INPUT, or the suite's table written once to the temporary directory. */
export function sideInputFile(): string {
  const named = process.env.NEXMARK_SIDE_INPUT;
  if (named !== undefined && named !== "") return named;
  const file = join(tmpdir(), `eddy-nexmark-side-input-${SIDE_INPUT_ROWS}.csv`);
  if (!existsSync(file)) {
    // Written aside and renamed: subtasks of other jobs may be reading it.
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, sideInputCsv());
    renameSync(partial, file);
  }
  return file;
}

/** Parses `key,value` lines; a line that is not `<integer>,<text>` fails the job, naming it. */
export function parseSideInput(text: string, file: string): Map<number, string> {
  const table = new Map<number, string>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, "");
    if (line === "") continue;
    const comma = line.indexOf(",");
    const key = comma < 0 ? Number.NaN : Number(line.slice(0, comma));
    if (!Number.isSafeInteger(key)) throw new Error(`${file}:${i + 1}: not a 'key,value' line: ${JSON.stringify(line.slice(0, 80))}`);
    table.set(key, line.slice(comma + 1));
  }
  return table;
}

/** Looks each bid's key up in the side input, loaded when the subtask opens. */
export class SideInputJoin implements ProcessFunction<Bid, Q13Result> {
  #table = new Map<number, string>();
  readonly #file: string;

  constructor(file: string) {
    this.#file = file;
  }

  open(): void {
    this.#table = parseSideInput(readFileSync(this.#file, "utf8"), this.#file);
  }

  processElement(b: Bid, _ctx: ProcessContext, out: Collector<Q13Result>): void {
    const value = this.#table.get(b.auction % SIDE_INPUT_ROWS);
    if (value !== undefined) out.collect({ auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, value });
  }
}

export function q13(env: StreamExecutionEnvironment, file = sideInputFile()): DataStream<Q13Result> {
  // A factory: each subtask its own instance (#private fields are not copied).
  return bidsOf(nexmarkEvents(env)).process(() => new SideInputJoin(file)).name("side input join");
}

export default defineJob("nexmark-q13", (env) => {
  q13(env).print();
});
