/**
 * The web UI of a running job, served by its control server (control-server.ts) next to the REST
 * API: the page at `/`, its bundle at `/ui/app.js` and `/ui/app.css`, the one-time login at
 * `/ui/login?nonce=…`, and the live stream `GET /v1/job/events` (server-sent events: the overview,
 * every vertex's rates, shares and watermarks, and the checkpoint counts and history, about once a
 * second). The page reads the rest from the REST API with its session cookie, and posts actions
 * (savepoint, stop, cancel) with its CSRF token. docs/web-ui.md describes what it shows and the
 * security model; web-ui-auth.ts keeps the nonces and sessions.
 *
 * Files: only the names in ASSETS, from the package's own dist/ui directory (built by `npm run
 * build`, which `prepare` runs), never a path from the request. Run from sources (the
 * eddy-source condition: tests, the repository), the bundle is built in memory by esbuild from
 * packages/eddy/ui/ on first use, with the same build (ui/build.mjs).
 *
 * Bounds: at most MAX_EVENT_STREAMS live streams at once (one per open page; more get 503
 * TOO_MANY_EVENT_STREAMS); a stream whose client does not read (its socket buffer full) skips
 * updates until it drains, so a slow page costs no memory; streams are ended when the server closes.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { readFile } from "node:fs/promises";
import { describeCause } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { ObservedJob } from "../coordinator/control.ts";
import { errorReply, sendReply, type Reply } from "../http/http-endpoint.ts";
import { jobOverview } from "./rest-api.ts";
import { checkpointsView, liveVerticesView } from "./rest-views.ts";
import { CSRF_HEADER, sessionCookie, WebSessions, type WebSession } from "./web-ui-auth.ts";

export const MAX_EVENT_STREAMS = 8;
export const EVENT_INTERVAL_MS = 1_000;
/** How many checkpoints each live update carries (the newest). */
const EVENT_CHECKPOINTS = 10;

/**
 * Every answer of the control server carries these: no script, style, frame or connection from
 * anywhere but the server itself (no inline script or style either), not framed by any page,
 * types not sniffed, no Referer (a login link's nonce is spent already, but is not passed on).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
};

export function setSecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
}

/** Who sent a request: the holder of the bearer token (the CLI, scripts) or a logged-in browser. */
export type Caller = { readonly kind: "bearer" } | { readonly kind: "session"; readonly session: WebSession };

const ASSETS: Readonly<Record<string, string>> = {
  "/ui/app.js": "text/javascript; charset=utf-8",
  "/ui/app.css": "text/css; charset=utf-8",
};

type Bundle = ReadonlyMap<string, Buffer>;

export interface WebUi {
  readonly sessions: WebSessions;
  readonly cookieName: string;
  /** The session a request's cookie names, if any. */
  session(req: IncomingMessage): WebSession | undefined;
  /**
   * Serves the request when it is the UI's own (page, assets, login, events) and says so;
   * `caller` is who sent it (undefined: nobody known).
   */
  serve(req: IncomingMessage, res: ServerResponse, url: URL, caller: Caller | undefined): boolean;
  /**
   * For a POST of the REST API made with the session cookie: a 403 unless it carries the session's
   * CSRF token and, when the browser says where it comes from (Origin), comes from this server.
   */
  refusePost(req: IncomingMessage, caller: Caller): Reply | undefined;
  /** A new one-time login link, for `serverUrl`. */
  loginLink(serverUrl: string): { url: string; expiresAtMs: number };
  /** Ends the live streams. */
  close(): void;
}

export interface WebUiOptions {
  readonly logger: Logger;
  /** The port the server listens on (names the session cookie). */
  readonly port: () => number;
  readonly now?: () => number;
}

export function createWebUi(job: ObservedJob, options: WebUiOptions): WebUi {
  const now = options.now ?? Date.now;
  const sessions = new WebSessions(now);
  const cookieName = (): string => `eddy-ui-${options.port()}`;
  let bundle: Promise<Bundle> | undefined;
  const streams = eventStreams(() => liveUpdate(job, now()), options.logger);

  const serveAsset = (res: ServerResponse, path: string): void => {
    bundle ??= loadBundle();
    bundle.then(
      (files) => {
        const body = files.get(path)!;
        res.writeHead(200, { "Content-Type": ASSETS[path]!, "Content-Length": body.length, "Cache-Control": "no-cache" });
        res.end(body);
      },
      (e: unknown) => {
        bundle = undefined;
        options.logger.error("web UI: its bundle cannot be loaded", { job: job.id, cause: describeCause(e) });
        sendReply(res, errorReply(503, "UI_NOT_BUILT", `the web UI's bundle cannot be loaded: ${describeCause(e)}`), false);
      },
    );
  };

  return {
    sessions,
    get cookieName() {
      return cookieName();
    },
    session: (req) => sessions.session(req.headers.cookie, cookieName()),
    serve(req, res, url, caller) {
      const path = url.pathname;
      if (path === "/ui/login") {
        // GET only: a HEAD (a link preview, a checker) must not spend the nonce.
        if (!onlyGet(req, res, path, false)) return true;
        const nonce = url.searchParams.get("nonce");
        const session = nonce === null ? undefined : sessions.redeem(nonce);
        if (session === undefined) {
          sendHtml(res, 403, messagePage("This login link is not valid", `It was used already, or it expired (a link works once, within a minute). Run <code>eddy ui ${escapeHtml(job.id)}</code> for a new one.`));
          return true;
        }
        // 303 to the page: the nonce does not stay in the address bar or the history's current entry.
        res.writeHead(303, { Location: "/", "Set-Cookie": sessionCookie(cookieName(), session, now()), "Cache-Control": "no-store", "Content-Length": 0 });
        res.end();
        return true;
      }
      if (path === "/" || path === "/index.html") {
        if (!onlyGet(req, res, path)) return true;
        if (caller?.kind !== "session") {
          sendHtml(res, 401, messagePage("Log in to this job's UI", `Open the one-time link that <code>eddy ui ${escapeHtml(job.id)}</code> prints.`));
          return true;
        }
        sendHtml(res, 200, appPage(job, caller.session));
        return true;
      }
      if (path in ASSETS) {
        if (!onlyGet(req, res, path)) return true;
        serveAsset(res, path);
        return true;
      }
      if (path === "/v1/job/events") {
        if (caller === undefined) return false; // the API's 401
        if (!onlyGet(req, res, path)) return true;
        streams.open(req, res);
        return true;
      }
      return false;
    },
    refusePost(req, caller) {
      if (caller.kind !== "session") return undefined;
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== `http://${req.headers.host ?? ""}`) {
        return errorReply(403, "CSRF_REJECTED", `a POST with the UI's cookie must come from the UI itself, not from ${origin}`);
      }
      if (!sessions.csrfValid(caller.session, req.headers[CSRF_HEADER])) {
        return errorReply(403, "CSRF_REJECTED", `a POST with the UI's cookie needs the session's CSRF token in the ${CSRF_HEADER} header`);
      }
      return undefined;
    },
    loginLink(serverUrl) {
      const { nonce, expiresAtMs } = sessions.issueLoginNonce();
      return { url: `${serverUrl}/ui/login?nonce=${nonce}`, expiresAtMs };
    },
    close: () => streams.closeAll(),
  };
}

function onlyGet(req: IncomingMessage, res: ServerResponse, path: string, head = true): boolean {
  if (req.method === "GET" || (head && req.method === "HEAD")) return true;
  res.setHeader("Allow", "GET");
  sendReply(res, errorReply(405, "METHOD_NOT_ALLOWED", `${path} takes GET, not ${req.method}`), true);
  return false;
}

/** What each live update carries (`event: update`, JSON data). */
export function liveUpdate(job: ObservedJob, nowMs: number) {
  const metrics = job.metricsSnapshot();
  return {
    timeMs: nowMs,
    overview: jobOverview(job, process.pid, nowMs),
    vertices: liveVerticesView(job.plan, metrics),
    checkpoints: checkpointsView(job.checkpointHistory(), job.checkpointCounts(), EVENT_CHECKPOINTS),
    exceptions: job.exceptions().total,
  };
}

interface EventStreams {
  open(req: IncomingMessage, res: ServerResponse): void;
  closeAll(): void;
}

/** The live streams: one timer for all, each update made once and written to every client that keeps up. */
function eventStreams(update: () => unknown, logger: Logger): EventStreams {
  const clients = new Set<ServerResponse>();
  let timer: NodeJS.Timeout | undefined;
  const message = (): string | undefined => {
    try {
      return `event: update\ndata: ${JSON.stringify(update())}\n\n`;
    } catch (e) {
      logger.warn("web UI: a live update could not be made", { cause: describeCause(e) });
      return undefined;
    }
  };
  const send = (res: ServerResponse, text: string): void => {
    // A client that does not read: skip until its buffer drains (bounded memory).
    if (res.writableNeedDrain) return;
    res.write(text);
  };
  const tick = (): void => {
    const text = message();
    if (text !== undefined) for (const res of clients) send(res, text);
  };
  return {
    open(req, res) {
      if (clients.size >= MAX_EVENT_STREAMS) {
        sendReply(res, errorReply(503, "TOO_MANY_EVENT_STREAMS", `the job serves at most ${MAX_EVENT_STREAMS} live streams at once; close another page of its UI`), true);
        return;
      }
      res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", "X-Accel-Buffering": "no" });
      res.write(`retry: 2000\n\n`);
      clients.add(res);
      const first = message();
      if (first !== undefined) send(res, first);
      const drop = (): void => {
        clients.delete(res);
        if (clients.size === 0 && timer !== undefined) {
          clearInterval(timer);
          timer = undefined;
        }
      };
      req.on("close", drop);
      res.on("close", drop);
      if (timer === undefined) {
        timer = setInterval(tick, EVENT_INTERVAL_MS);
        timer.unref();
      }
    },
    closeAll() {
      clearInterval(timer);
      timer = undefined;
      for (const res of clients) res.end();
      clients.clear();
    },
  };
}

/** The bundle's files: from dist/ui in the installed package, or built in memory when run from sources. */
async function loadBundle(): Promise<Bundle> {
  const packageDir = new URL("../../", import.meta.url);
  if (import.meta.url.endsWith(".ts")) {
    // Run from sources: ui/build.mjs is in the repository (not in the published package, which has dist/ui).
    const build = (await import(new URL("ui/build.mjs", packageDir).href)) as { bundleUi(): Promise<Map<string, Uint8Array>> };
    const files = await build.bundleUi();
    return new Map(Object.keys(ASSETS).map((path) => [path, Buffer.from(required(files, path.slice("/ui/".length)))]));
  }
  const dir = new URL("dist/ui/", packageDir);
  const entries = await Promise.all(Object.keys(ASSETS).map(async (path) => [path, await readFile(new URL(path.slice("/ui/".length), dir))] as const));
  return new Map(entries);
}

function required(files: Map<string, Uint8Array>, name: string): Uint8Array {
  const file = files.get(name);
  if (file === undefined) throw new Error(`the UI build made no ${name} (it made: ${[...files.keys()].join(", ")})`);
  return file;
}

function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, { "Content-Type": "text/html; charset=utf-8", "Content-Length": Buffer.byteLength(html), "Cache-Control": "no-store" });
  res.end(html);
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, head: string, body: string): string {
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/ui/app.css">${head}</head><body>${body}</body></html>\n`;
}

function messagePage(title: string, html: string): string {
  return page(title, "", `<main class="message"><h1>${escapeHtml(title)}</h1><p>${html}</p></main>`);
}

/** The page of a logged-in browser: its CSRF token and the job's id in meta tags, the app from /ui/app.js. */
function appPage(job: ObservedJob, session: WebSession): string {
  return page(
    `Eddy — ${job.name}`,
    `<meta name="eddy-csrf" content="${escapeHtml(session.csrfToken)}"><meta name="eddy-job" content="${escapeHtml(job.id)}"><script type="module" src="/ui/app.js"></script>`,
    `<div id="app"></div>`,
  );
}
