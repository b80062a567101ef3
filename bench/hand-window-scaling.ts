/**
 * What a second core gives a keyed window query whose records cross between threads, without the
 * engine: Nexmark q5 (every 2 s, the auctions with the most bids in the last 10 s) written by hand,
 * on one worker thread and on two at once — the windowed counterpart of bench/hand-join-scaling.ts
 * (issue 30, target 1: does Eddy's 1.2-1.6× at parallelism 2 on its windowed queries sit at what
 * the structure allows on this machine?).
 *
 * The structure is the Eddy job's at parallelism 2 (examples/nexmark/q5.ts, with local aggregation,
 * docs/design/windows-state.md), and nothing else of Eddy runs:
 * - each thread generates every other event id (as Eddy's Nexmark source splits them; `--block N`:
 *   N consecutive ids per turn) and counts the bids of the auctions it owns per 2 s pane;
 * - the bids of auctions the other thread owns are counted per (auction, pane) on the sending side
 *   (the local aggregation) and sent as partial counts `{ k, a, n, p }` when the thread's event time
 *   leaves the pane or 8,192 partials are held, then a progress signal (the watermark: every pane
 *   before it is sent);
 * - a window (its five panes) fires on the thread owning the auction once both threads' event time
 *   passed its end; every (auction, count, window) goes to the thread owning the window's end (the
 *   job's second keyBy) — half of them cross — which keeps the highest count and the auctions at it
 *   and emits them once both threads have fired the window (a second signal).
 * Frames are encoded by Eddy's default codec (one codec per kind and direction, up to 1,024
 * records each) through a shared-memory ring, decoded in place (bench/hand-threads.ts). Output of
 * one thread, two threads and bench/nexmark/stateful-loops.ts's q5 loop must agree.
 *
 *   node -C eddy-source --import tsx bench/hand-window-scaling.ts [--events 4000000] [--rounds 5] [--block 1]
 */
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { nexmarkConfig } from "eddy";
import type { Q5Result } from "../examples/nexmark/q5.ts";
import { digestQ5 } from "./nexmark/digests.ts";
import { q5Loop } from "./nexmark/stateful-loops.ts";
import { compareThreads, Exchange, FRAME_RECORDS, generate, owner, type ThreadJob, type ThreadResult, type ThreadWiring } from "./hand-threads.ts";
import { emptyFold, foldDigest } from "./output-fold.ts";

const SLIDE_MS = 2_000;
const PANES = 5;
/** Partials the local aggregation holds before it sends them (Eddy's bound). */
const LOCAL_PARTIALS = 8192;
/** Progress and fired signals at the end of input: every pane and every window. */
const DONE = Number.POSITIVE_INFINITY;

const PARTIALS = 1;
const COUNTS = 2;
/** Signal: every partial of panes before this one is sent. */
const PROGRESS = 3;
/** Signal: every window ending at or before this pane's start has sent its counts. */
const FIRED = 4;

/** A partial count of one auction's bids in one pane, as the local aggregation sends it. */
interface Partial {
  readonly k: number;
  readonly a: number;
  readonly n: number;
  readonly p: number;
}

/** One thread's share: generate, pre-aggregate, exchange, count per window, pick the hottest. */
function runThread(job: ThreadJob & ThreadWiring): ThreadResult {
  const { index, threads } = job;
  const fold = emptyFold();
  const exchange = threads === 2 ? new Exchange(job, onRecords, onSignal, [PROGRESS, FIRED]) : undefined;
  /** Pane number → bids per auction this thread owns (its own bids and the other's partials). */
  const panes = new Map<number, Map<number, number>>();
  /** The local aggregation: bids per auction of the other thread's, in pane `localPane`. */
  const local = new Map<number, number>();
  let localPane = -1;
  /** Second step: window end (ms) → the highest count and the auctions at it. */
  const hottest = new Map<number, { max: number; auctions: number[] }>();
  const partials: Partial[] = [];
  const counts: Q5Result[] = [];
  /** This thread's pane (its event time), and the other's progress and fired windows. */
  let current = -1;
  let otherProgress = threads === 1 ? DONE : -1;
  let otherFired = threads === 1 ? DONE : -1;
  /** Windows are named by the pane their end starts; fired up to `fired`, emitted up to `emitted`. */
  let fired = -1;
  let emitted = -1;
  let lastPane = -1;
  let otherDone = threads === 1;

  /**
   * The other thread's frames. Signals are only noted: windows fire from the thread's own loop
   * (`pump`), never inside a drain, which also runs while a send waits for room (a window fired
   * there would send its counts and signal ahead of the frame waiting).
   */
  function onRecords(kind: number, records: unknown[]): void {
    if (kind === PARTIALS) for (const p of records as Partial[]) add(p.k, p.p, p.n);
    else for (const c of records as Q5Result[]) hot(c);
  }
  function onSignal(kind: number, value: number): void {
    if (kind === PROGRESS) {
      otherProgress = value;
      if (otherProgress === DONE) otherDone = true;
    } else otherFired = value;
  }
  function pump(): boolean {
    const any = exchange!.drain();
    fire();
    emit();
    return any;
  }
  function add(auction: number, pane: number, n: number): void {
    if (pane + PANES <= fired) throw new Error(`a partial of pane ${pane} after window ${fired} fired`);
    if (pane > lastPane) lastPane = pane;
    let counts = panes.get(pane);
    if (counts === undefined) panes.set(pane, (counts = new Map()));
    counts.set(auction, (counts.get(auction) ?? 0) + n);
  }
  function hot(c: Q5Result): void {
    const h = hottest.get(c.endtime);
    if (h === undefined) hottest.set(c.endtime, { max: c.num, auctions: [c.auction] });
    else if (c.num > h.max) {
      h.max = c.num;
      h.auctions = [c.auction];
    } else if (c.num === h.max) h.auctions.push(c.auction);
  }
  const perWindow = new Map<number, number>();
  /** Fires every window both threads' event time has passed (at the end: up to the last pane's). */
  function fire(): void {
    if (lastPane < 0) return;
    if (fired < 0) fired = lastPane - PANES - 1;
    const upTo = Math.min(current, otherProgress, lastPane + PANES);
    if (upTo <= fired) return;
    for (let end = fired + 1; end <= upTo; end++) {
      perWindow.clear();
      for (let p = end - PANES; p < end; p++) {
        const pane = panes.get(p);
        if (pane !== undefined) for (const [auction, n] of pane) perWindow.set(auction, (perWindow.get(auction) ?? 0) + n);
      }
      const endtime = end * SLIDE_MS;
      const mine = threads === 1 || owner(end, 2) === index;
      for (const [auction, num] of perWindow) {
        const c: Q5Result = { auction, num, starttime: endtime - PANES * SLIDE_MS, endtime };
        if (mine) hot(c);
        else if (counts.push(c) === FRAME_RECORDS) exchange!.send(COUNTS, counts);
      }
      panes.delete(end - PANES);
    }
    fired = upTo;
    if (exchange !== undefined) {
      if (counts.length > 0) exchange.send(COUNTS, counts);
      exchange.signal(FIRED, current === DONE && otherDone ? DONE : fired);
    }
    emit();
  }
  /** Emits the windows both threads have fired. */
  function emit(): void {
    const upTo = Math.min(fired === lastPane + PANES && current === DONE && otherDone ? DONE : fired, otherFired);
    if (upTo <= emitted) return;
    for (const [endtime, h] of hottest) {
      if (upTo !== DONE && endtime > upTo * SLIDE_MS) continue;
      for (const auction of h.auctions) foldDigest(fold, digestQ5({ auction, num: h.max, starttime: endtime - PANES * SLIDE_MS, endtime }));
      hottest.delete(endtime);
    }
    emitted = upTo;
  }
  const flushLocal = (): void => {
    for (const [k, n] of local) if (partials.push({ k, a: n, n, p: localPane }) === FRAME_RECORDS) exchange!.send(PARTIALS, partials);
    if (partials.length > 0) exchange!.send(PARTIALS, partials);
    local.clear();
  };

  const started = generate(
    job,
    (e) => {
      const b = e.bid;
      if (b === undefined) return;
      const pane = Math.floor(b.dateTime / SLIDE_MS);
      if (pane !== current) {
        if (exchange !== undefined) {
          if (local.size > 0) flushLocal();
          exchange.signal(PROGRESS, pane);
        }
        current = pane;
        if (lastPane < 0) lastPane = pane;
        fire();
      }
      if (threads === 1 || owner(b.auction, 2) === index) add(b.auction, pane, 1);
      else {
        localPane = pane;
        local.set(b.auction, (local.get(b.auction) ?? 0) + 1);
        if (local.size === LOCAL_PARTIALS) flushLocal();
      }
    },
    () => exchange !== undefined && pump(),
  );
  let endWaitMs = 0;
  if (exchange !== undefined && local.size > 0) flushLocal();
  exchange?.signal(PROGRESS, DONE);
  current = DONE;
  fire();
  if (exchange !== undefined) {
    endWaitMs = exchange.waitFor(() => {
      pump();
      return emitted === DONE;
    });
  } else emit();
  return { ms: performance.now() - started, fold, crossed: exchange?.crossed ?? 0, blockedMs: exchange?.blockedMs ?? 0, endWaitMs };
}

if (!isMainThread) {
  parentPort!.postMessage(runThread(workerData as ThreadJob & ThreadWiring));
} else {
  await compareThreads(import.meta.url, "q5 by hand, one thread and two exchanging partial counts and window counts", (events) => ({ fold: q5Loop({ firstEventId: 0, events, config: nexmarkConfig() }) }));
}
