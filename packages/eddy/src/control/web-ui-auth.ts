/**
 * Who may use the web UI of a job (docs/web-ui.md, "Security model"): one-time login nonces,
 * browser sessions held in an HttpOnly, SameSite=Strict cookie, and a CSRF token per session.
 * Pure bookkeeping (no HTTP): web-ui.ts applies it to requests; the clock is passed in, so every
 * rule is tested without waiting (web-ui-auth.test.ts).
 *
 * - A login nonce is made for a caller that holds the job's bearer token (`eddy ui`), lives
 *   LOGIN_NONCE_TTL_MS, and is redeemed at most once: the first visit of the login link turns it
 *   into a session, every later visit (or one after its deadline) is refused. The token itself is
 *   never put in a URL.
 * - A session is 256 random bits, known only to the browser's cookie jar (HttpOnly: no script
 *   reads it) and to this process; it lasts SESSION_TTL_MS. Its CSRF token is other 256 random
 *   bits, served to the page (a meta tag of the HTML the server makes) and sent back by the page
 *   with every POST in the X-Eddy-CSRF header; a cross-site form or script cannot read it.
 * - Bounded: at most MAX_LOGIN_NONCES outstanding nonces and MAX_SESSIONS sessions; past that the
 *   oldest is dropped (its login link, or its browser, must log in again). Expired ones are
 *   dropped whenever a new one is made.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

export const LOGIN_NONCE_TTL_MS = 60_000;
export const SESSION_TTL_MS = 12 * 60 * 60_000;
export const MAX_LOGIN_NONCES = 16;
export const MAX_SESSIONS = 32;
/** The header a page's POST carries its session's CSRF token in. */
export const CSRF_HEADER = "x-eddy-csrf";

export interface WebSession {
  readonly id: string;
  readonly csrfToken: string;
  readonly expiresAtMs: number;
}

/** 32 random bytes as URL- and cookie-safe text (base64url, 43 characters). */
function secret(): string {
  return randomBytes(32).toString("base64url");
}

/** Whether `given` equals `expected`, compared in constant time for equal lengths. */
export function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given, "utf8");
  const b = Buffer.from(expected, "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}

export class WebSessions {
  /** Outstanding login nonces → their deadline; a Map keeps them oldest first. */
  private readonly nonces = new Map<string, number>();
  private readonly sessions = new Map<string, WebSession>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A new single-use login nonce and when it expires. */
  issueLoginNonce(): { nonce: string; expiresAtMs: number } {
    const now = this.now();
    dropExpired(this.nonces, (deadline) => deadline <= now);
    dropOldest(this.nonces, MAX_LOGIN_NONCES - 1);
    const nonce = secret();
    const expiresAtMs = now + LOGIN_NONCE_TTL_MS;
    this.nonces.set(nonce, expiresAtMs);
    return { nonce, expiresAtMs };
  }

  /** Redeems `nonce` (consumed whatever the outcome): a new session, or undefined when it is unknown, used or expired. */
  redeem(nonce: string): WebSession | undefined {
    // A Map lookup by the nonce: its timing says nothing useful about other nonces (each is 256 random bits).
    const deadline = this.nonces.get(nonce);
    if (deadline === undefined) return undefined;
    this.nonces.delete(nonce);
    const now = this.now();
    if (deadline <= now) return undefined;
    dropExpired(this.sessions, (s) => s.expiresAtMs <= now);
    dropOldest(this.sessions, MAX_SESSIONS - 1);
    const session: WebSession = { id: secret(), csrfToken: secret(), expiresAtMs: now + SESSION_TTL_MS };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session whose id `cookieHeader` carries in `cookieName`, if any. */
  session(cookieHeader: string | undefined, cookieName: string): WebSession | undefined {
    const id = parseCookies(cookieHeader).get(cookieName);
    if (id === undefined) return undefined;
    const session = this.sessions.get(id);
    if (session === undefined) return undefined;
    if (session.expiresAtMs <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    return session;
  }

  /** Whether a POST of `session` carries its CSRF token (`header`: the X-Eddy-CSRF value). */
  csrfValid(session: WebSession, header: string | string[] | undefined): boolean {
    return typeof header === "string" && sameSecret(header, session.csrfToken);
  }

  /** Ends the session (logout). */
  end(session: WebSession): void {
    this.sessions.delete(session.id);
  }
}

function dropExpired<V>(map: Map<string, V>, expired: (v: V) => boolean): void {
  for (const [k, v] of map) if (expired(v)) map.delete(k);
}

function dropOldest<V>(map: Map<string, V>, keep: number): void {
  for (const k of map.keys()) {
    if (map.size <= keep) return;
    map.delete(k);
  }
}

/** The cookies of a Cookie header (`a=1; b=2`); a name given twice keeps its first value, as browsers send the most specific first. */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (header === undefined) return out;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    const name = part.slice(0, i).trim();
    if (name !== "" && !out.has(name)) out.set(name, part.slice(i + 1).trim());
  }
  return out;
}

/**
 * The session cookie's name for a server on `port`. Browsers keep cookies per host, not per port,
 * so the UIs of two jobs on 127.0.0.1 would overwrite each other's one name.
 */
export function sessionCookieName(port: number): string {
  return `eddy-ui-${port}`;
}

/** The Set-Cookie value for `session`: HttpOnly, SameSite=Strict, the whole server, until the session expires. */
export function sessionCookie(name: string, session: WebSession, nowMs: number): string {
  const maxAge = Math.max(0, Math.floor((session.expiresAtMs - nowMs) / 1000));
  return `${name}=${session.id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}`;
}

/** The Set-Cookie value that removes the cookie. */
export function clearedCookie(name: string): string {
  return `${name}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
}
