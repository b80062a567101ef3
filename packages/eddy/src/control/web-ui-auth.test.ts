import assert from "node:assert/strict";
import { test } from "node:test";
import {
  clearedCookie,
  CSRF_HEADER,
  LOGIN_NONCE_TTL_MS,
  MAX_LOGIN_NONCES,
  MAX_SESSIONS,
  parseCookies,
  sameSecret,
  SESSION_TTL_MS,
  sessionCookie,
  sessionCookieName,
  WebSessions,
} from "./web-ui-auth.ts";

const NAME = sessionCookieName(41234);

function clock(start = 1_000_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

test("a login nonce is 256 random bits, URL-safe, and redeems into a session once only", () => {
  const sessions = new WebSessions();
  const { nonce, expiresAtMs } = sessions.issueLoginNonce();
  assert.match(nonce, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(expiresAtMs > Date.now() && expiresAtMs <= Date.now() + LOGIN_NONCE_TTL_MS);
  assert.notEqual(sessions.issueLoginNonce().nonce, nonce);
  const session = sessions.redeem(nonce);
  assert.ok(session !== undefined);
  assert.match(session.id, /^[A-Za-z0-9_-]{43}$/);
  assert.match(session.csrfToken, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(session.id, session.csrfToken);
  assert.equal(sessions.redeem(nonce), undefined, "a second use is refused");
  assert.equal(sessions.redeem("made-up"), undefined);
  assert.equal(sessions.redeem(""), undefined);
});

test("a login nonce expires after LOGIN_NONCE_TTL_MS, and an expired one is spent too", () => {
  const c = clock();
  const sessions = new WebSessions(c.now);
  const early = sessions.issueLoginNonce().nonce;
  const late = sessions.issueLoginNonce().nonce;
  c.advance(LOGIN_NONCE_TTL_MS - 1);
  assert.ok(sessions.redeem(early) !== undefined, "still good a millisecond before its deadline");
  c.advance(1);
  assert.equal(sessions.redeem(late), undefined, "expired at its deadline");
  c.advance(-10);
  assert.equal(sessions.redeem(late), undefined, "the expired nonce was consumed, not kept");
});

test("a session is found by its cookie until SESSION_TTL_MS, not after", () => {
  const c = clock();
  const sessions = new WebSessions(c.now);
  const session = sessions.redeem(sessions.issueLoginNonce().nonce)!;
  const header = `other=1; ${NAME}=${session.id}; third=x`;
  assert.equal(sessions.session(header, NAME), session);
  assert.equal(sessions.session(`${NAME}=${session.id}`, sessionCookieName(41235)), undefined, "another server's cookie name");
  assert.equal(sessions.session(undefined, NAME), undefined);
  assert.equal(sessions.session(`${NAME}=${session.id}x`, NAME), undefined);
  c.advance(SESSION_TTL_MS - 1);
  assert.equal(sessions.session(header, NAME), session);
  c.advance(1);
  assert.equal(sessions.session(header, NAME), undefined);
  c.advance(-10);
  assert.equal(sessions.session(header, NAME), undefined, "an expired session is dropped, not kept");
});

test("a POST's CSRF token must be the session's own, as one header value", () => {
  const sessions = new WebSessions();
  const a = sessions.redeem(sessions.issueLoginNonce().nonce)!;
  const b = sessions.redeem(sessions.issueLoginNonce().nonce)!;
  assert.equal(CSRF_HEADER, "x-eddy-csrf");
  assert.equal(sessions.csrfValid(a, a.csrfToken), true);
  assert.equal(sessions.csrfValid(a, b.csrfToken), false, "another session's token");
  assert.equal(sessions.csrfValid(a, undefined), false);
  assert.equal(sessions.csrfValid(a, ""), false);
  assert.equal(sessions.csrfValid(a, a.csrfToken.slice(1)), false);
  assert.equal(sessions.csrfValid(a, [a.csrfToken, a.csrfToken]), false, "a repeated header");
  assert.equal(sessions.csrfValid(a, a.id), false, "the session id is not the CSRF token");
  sessions.end(a);
  assert.equal(sessions.session(`${NAME}=${a.id}`, NAME), undefined);
  assert.equal(sameSecret("abc", "abc"), true);
  assert.equal(sameSecret("abd", "abc"), false);
  assert.equal(sameSecret(undefined, "abc"), false);
});

test("outstanding nonces and sessions are bounded: past the bound the oldest goes", () => {
  const sessions = new WebSessions();
  const nonces = Array.from({ length: MAX_LOGIN_NONCES + 1 }, () => sessions.issueLoginNonce().nonce);
  assert.equal(sessions.redeem(nonces[0]!), undefined, "the oldest nonce was dropped");
  assert.ok(sessions.redeem(nonces[1]!) !== undefined);
  const all = Array.from({ length: MAX_SESSIONS + 1 }, () => sessions.redeem(sessions.issueLoginNonce().nonce)!);
  // MAX_SESSIONS + 2 made in all (one above): the two oldest are gone, the newest MAX_SESSIONS live.
  assert.equal(sessions.session(`${NAME}=${all[0]!.id}`, NAME), undefined);
  assert.equal(sessions.session(`${NAME}=${all[1]!.id}`, NAME), all[1]);
  assert.equal(sessions.session(`${NAME}=${all.at(-1)!.id}`, NAME), all.at(-1));
});

test("the session cookie is HttpOnly, SameSite=Strict, for the whole server, until the session ends", () => {
  const c = clock();
  const sessions = new WebSessions(c.now);
  const session = sessions.redeem(sessions.issueLoginNonce().nonce)!;
  assert.equal(sessionCookie(NAME, session, c.now()), `eddy-ui-41234=${session.id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_TTL_MS / 1000}`);
  assert.equal(clearedCookie(NAME), "eddy-ui-41234=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
});

test("parseCookies reads a Cookie header; a repeated name keeps its first value", () => {
  assert.deepEqual([...parseCookies("a=1; b=2;c = 3 ; a=9; junk; =x")], [["a", "1"], ["b", "2"], ["c", "3"]]);
  assert.deepEqual([...parseCookies(undefined)], []);
  assert.deepEqual([...parseCookies("")], []);
});
