/**
 * Hand-written loops for the stateless queries: the floor of JavaScript on this machine. Each
 * generates the same events as the job's source (`nexmarkEvent(id, config)` for every id of the
 * run, in id order, one thread), computes the query's result records with the query's own user
 * functions, and folds them with the query's digest. No framework, no batching, no exchange.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { nexmarkEvent } from "eddy";
import { parseSideInput, SIDE_INPUT_ROWS, sideInputFile, type Q13Result } from "../../examples/nexmark/q13.ts";
import { timestamp3, type Q10Row } from "../../examples/nexmark/q10.ts";
import { dollarsToEuros, type Q1Result } from "../../examples/nexmark/q1.ts";
import type { Q0Result } from "../../examples/nexmark/q0.ts";
import type { Q2Result } from "../../examples/nexmark/q2.ts";
import { q14Keeps, q14Row } from "../../examples/nexmark/q14.ts";
import { channelId, type Q21Result } from "../../examples/nexmark/q21.ts";
import type { Q22Result } from "../../examples/nexmark/q22.ts";
import { digestBidProjection, digestQ10, digestQ13, digestQ14, digestQ2, digestQ21, digestQ22 } from "./digests.ts";
import { emptyFold, foldDigest, type OutputFold } from "../output-fold.ts";
import type { EventRange } from "./event-range.ts";

export function q0Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const r: Q0Result = { auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, extra: b.extra };
    foldDigest(fold, digestBidProjection(r));
  }
  return fold;
}

export function q1Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const r: Q1Result = { auction: b.auction, bidder: b.bidder, price: dollarsToEuros(b.price), dateTime: b.dateTime, extra: b.extra };
    foldDigest(fold, digestBidProjection(r));
  }
  return fold;
}

export function q2Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined || b.auction % 123 !== 0) continue;
    const r: Q2Result = { auction: b.auction, price: b.price };
    foldDigest(fold, digestQ2(r));
  }
  return fold;
}

export function q14Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined || !q14Keeps(b)) continue;
    foldDigest(fold, digestQ14(q14Row(b)));
  }
  return fold;
}

export function q21Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const channel = channelId(b.channel, b.url);
    if (channel === undefined) continue;
    const r: Q21Result = { auction: b.auction, bidder: b.bidder, price: b.price, channel: b.channel, channelId: channel };
    foldDigest(fold, digestQ21(r));
  }
  return fold;
}

export function q22Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const parts = b.url.split("/");
    const r: Q22Result = {
      auction: b.auction,
      bidder: b.bidder,
      price: b.price,
      channel: b.channel,
      dir1: parts[3] ?? null,
      dir2: parts[4] ?? null,
      dir3: parts[5] ?? null,
    };
    foldDigest(fold, digestQ22(r));
  }
  return fold;
}

/** q13: each bid with its key's value in the side input (loaded once, as each of the job's subtasks does). */
export function q13Loop({ firstEventId, events, config }: EventRange): OutputFold {
  const fold = emptyFold();
  const file = sideInputFile();
  const table = parseSideInput(readFileSync(file, "utf8"), file);
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const value = table.get(b.auction % SIDE_INPUT_ROWS);
    if (value === undefined) continue;
    const r: Q13Result = { auction: b.auction, bidder: b.bidder, price: b.price, dateTime: b.dateTime, value };
    foldDigest(fold, digestQ13(r));
  }
  return fold;
}

/**
 * q10 by hand: every bid's row as a CSV line, appended to a 64 KiB buffer per `dt=…/hm=…`
 * directory under `dir` and written with one writeSync per full buffer (no checkpoints, no commit
 * protocol): the floor of writing the same partitioned files. Like the job, it computes no digest:
 * both outputs are read back from their files afterwards (readQ10Files), outside the timed part.
 */
export function q10Loop({ firstEventId, events, config }: EventRange, dir: string): void {
  const files = new Map<string, { fd: number; chunks: string[]; bytes: number }>();
  const flush = (f: { fd: number; chunks: string[]; bytes: number }): void => {
    writeSync(f.fd, f.chunks.join(""));
    f.chunks = [];
    f.bytes = 0;
  };
  for (let id = firstEventId, end = firstEventId + events; id < end; id++) {
    const b = nexmarkEvent(id, config).bid;
    if (b === undefined) continue;
    const r: Q10Row = { auction: b.auction, bidder: b.bidder, price: b.price, dateTime: timestamp3(b.dateTime), extra: b.extra };
    const partition = `dt=${r.dateTime.slice(0, 10)}/hm=${r.dateTime.slice(11, 16)}`;
    let f = files.get(partition);
    if (f === undefined) {
      mkdirSync(join(dir, partition), { recursive: true });
      files.set(partition, (f = { fd: openSync(join(dir, partition, "part-0.csv"), "w"), chunks: [], bytes: 0 }));
    }
    const line = `${r.auction},${r.bidder},${r.price},${r.dateTime},"${r.extra.replaceAll('"', '""')}"\n`;
    f.chunks.push(line);
    f.bytes += line.length;
    if (f.bytes >= 65_536) flush(f);
  }
  for (const f of files.values()) {
    flush(f);
    closeSync(f.fd);
  }
}

/**
 * The rows of every visible CSV file under `dir` (a FileSink's hidden in-progress files, named
 * with a leading dot, are not output), each folded with digestQ10. Its own reader (csv-parse took
 * ~10 µs per row): four unquoted fields, then `extra`, quoted or not (RFC 4180: quotes doubled
 * inside, line breaks allowed), then "\n".
 */
export function readQ10Files(dir: string): OutputFold {
  const fold = emptyFold();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name.startsWith(".")) continue;
    const path = join(entry.parentPath, entry.name);
    const text = readFileSync(path, "utf8");
    let at = 0;
    const field = (): string => {
      const comma = text.indexOf(",", at);
      if (comma < 0) throw new Error(`${path}: a row ends after ${at} characters`);
      const value = text.slice(at, comma);
      at = comma + 1;
      return value;
    };
    while (at < text.length) {
      const auction = Number(field());
      const bidder = Number(field());
      const price = Number(field());
      const dateTime = field();
      let extra: string;
      if (text[at] === '"') {
        let end = at + 1;
        for (;;) {
          end = text.indexOf('"', end);
          if (end < 0) throw new Error(`${path}: an unclosed quote`);
          if (text[end + 1] !== '"') break;
          end += 2;
        }
        extra = text.slice(at + 1, end).replaceAll('""', '"');
        at = end + 1;
      } else {
        const eol = text.indexOf("\n", at);
        extra = text.slice(at, eol < 0 ? text.length : eol);
        at += extra.length;
        if (/[",\r]/.test(extra)) throw new Error(`${path}: an unquoted field holds a quote, comma or carriage return`);
      }
      if (text[at] !== "\n") throw new Error(`${path}: a row has more than 5 fields, or no line break`);
      at++;
      if (!Number.isSafeInteger(auction) || !Number.isSafeInteger(bidder) || !Number.isSafeInteger(price)) throw new Error(`${path}: a number field is not a number`);
      foldDigest(fold, digestQ10({ auction, bidder, price, dateTime, extra }));
    }
  }
  return fold;
}
