/**
 * The web UI (docs/web-ui.md) in a real browser: Debian's Chromium driven by playwright-core
 * (test/browser.ts) opens the UI of a running job — the queryable job of test/jobs/queryable.ts on
 * worker threads at parallelism 2 with checkpoints, its source paced so that it runs for the
 * whole test — through a one-time login link made by the CLI's client (`eddy ui`'s path), and:
 * sees the graph with the job's vertices and edges, sees record counts grow through the live
 * stream (no reload), opens a vertex's subtasks, takes a savepoint with the button and sees it in
 * the checkpoint history, looks up a key of a queryable state, and cancels the job through the
 * confirmation dialog. Around that, with plain HTTP: refused without the cookie (401), a POST with
 * the cookie but without the CSRF token or from another origin refused (403), the login link
 * good once only, the live streams bounded, the security headers on every answer.
 *
 * Screenshots go to $EDDY_ARTIFACTS/web-ui (default .eddy/artifacts/web-ui, gitignored).
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import type { Page } from "playwright-core";
import { runJob } from "eddy/testing";
import { connectJob, MAX_EVENT_STREAMS, silentLogger, startControlServer } from "../packages/eddy/src/internal.ts";
import { launchBrowser } from "./browser.ts";

const ARTIFACTS = join(resolve(process.env.EDDY_ARTIFACTS ?? join(import.meta.dirname, "../.eddy/artifacts")), "web-ui");
const KEYS = 37;
type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
/** Generous: the machine may be loaded. */
const WAIT_MS = 20_000;

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = WAIT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last === undefined ? "" : `: ${(last as Error).message}`}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

test("the web UI of a running job, in Chromium: login once, graph, live counts, a vertex, a savepoint, a state lookup, a CPU profile, cancel; refused without cookie or CSRF token", async () => {
  const home = mkdtempSync(join(tmpdir(), "eddy-web-ui-"));
  const jobId = "web-ui";
  // Paced so the job runs for the whole test (about 2,000 records a second), and holds at the end anyway.
  Object.assign(process.env, { EDDY_Q_HOLD: "1", EDDY_Q_RECORDS: "100000000", EDDY_Q_PER_MS: "1" });
  const { default: queryable } = await import("./jobs/queryable.ts");
  const job = runJob(queryable, {
    mode: "threads",
    parallelism: 2,
    workers: 2,
    metricsIntervalMs: 100,
    checkpointDir: join(home, "checkpoints"),
    savepointDir: join(home, "savepoints"),
    jobId,
  });
  const server = await startControlServer(job, { home, logger: silentLogger });
  const browser = await launchBrowser();
  const consoleErrors: string[] = [];
  try {
    const client = await connectJob(jobId, home);
    const link = await client.loginLink();
    assert.match(link.url, new RegExp(`^${server.url}/ui/login\\?nonce=[A-Za-z0-9_-]{43}$`));
    assert.ok(!link.url.includes(client.token), "the token is not in the link");

    const page = await browser.context.newPage();
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    page.on("pageerror", (e) => consoleErrors.push(String(e)));
    const response = await page.goto(link.url);
    // Redirected to the page: no secret left in the address.
    assert.equal(page.url(), `${server.url}/`);
    assert.equal(response?.status(), 200);
    const headers = response!.headers();
    assert.match(headers["content-security-policy"] ?? "", /default-src 'self'; script-src 'self'; style-src 'self'.*frame-ancestors 'none'/);
    assert.equal(headers["x-content-type-options"], "nosniff");
    const cookies = await browser.context.cookies(server.url);
    assert.equal(cookies.length, 1);
    const [cookie] = cookies;
    assert.equal(cookie!.httpOnly, true);
    assert.equal(cookie!.sameSite, "Strict");
    assert.equal(await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie), "", "the session cookie is out of scripts' reach");

    // The graph: the job's vertices and edges, as the REST API has them.
    const plan: Json = await (await fetch(`${server.url}/v1/job/vertices`, { headers: { authorization: `Bearer ${client.token}` } })).json();
    assert.deepEqual(
      plan.vertices.map((v: { name: string; parallelism: number }) => [v.name, v.parallelism]),
      [["numbers -> numbers: Timestamps/Watermarks", 2], ["KeyedProcess", 2], ["Queryable state 'latest'", 2]],
    );
    await page.waitForSelector("svg.graph [data-vertex]", { timeout: WAIT_MS });
    assert.deepEqual(await page.$$eval("svg.graph [data-vertex]", (els) => els.map((e) => e.getAttribute("data-vertex")).sort()), ["0", "1", "2"]);
    assert.deepEqual(await page.$$eval("svg.graph [data-edge]", (els) => els.map((e) => e.getAttribute("data-edge")).sort()), ["0-1", "0-2"]);
    assert.deepEqual(await page.$$eval("svg.graph .edge-label", (els) => els.map((e) => e.textContent)), ["hash", "hash"]);
    // Each box's title is the vertex's whole name (the box shows it shortened when long).
    const names = await page.$$eval("svg.graph .vertex > title", (els) => els.map((e) => e.textContent!.split("\n")[0]).sort());
    assert.deepEqual(names, ["KeyedProcess", "Queryable state 'latest'", "numbers -> numbers: Timestamps/Watermarks"]);

    // Live: the counts grow without a reload (a marker set in the page survives).
    await page.evaluate(() => ((globalThis as unknown as { eddyMarker: number }).eddyMarker = 42));
    const recordsOut = async (): Promise<number> => Number(await page.getAttribute('svg.graph [data-vertex="0"]', "data-records-out"));
    const first = await until("a first record count", async () => ((await recordsOut()) > 0 ? recordsOut() : undefined));
    const later = await until("the record count to grow", async () => {
      const n = await recordsOut();
      return n > first ? n : undefined;
    });
    assert.ok(later > first);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { eddyMarker?: number }).eddyMarker), 42, "no page reload");
    assert.match((await page.textContent('svg.graph [data-vertex="1"]')) ?? "", /Parallelism 2.*In .*\/s.*Busy \d+%.*Watermark/s);
    await shot(page, "1-graph");

    // A vertex: its two subtasks.
    await page.click('svg.graph [data-vertex="1"]');
    await page.waitForSelector("#vertex-detail table.subtasks tbody tr", { timeout: WAIT_MS });
    assert.equal(await page.locator("#vertex-detail table.subtasks tbody tr").count(), 2);
    assert.match((await page.textContent("#vertex-detail h2")) ?? "", /Vertex 1: KeyedProcess/);
    await shot(page, "2-vertex");
    // The source's vertex: its operators' gauges (the source's idle time; an aligned source's drift would be here too).
    await page.click('svg.graph [data-vertex="0"]');
    await page.locator("#vertex-detail h2", { hasText: "Vertex 0:" }).waitFor({ timeout: WAIT_MS });
    await page.locator("#vertex-detail td", { hasText: /sourceIdleTime \S+/ }).first().waitFor({ timeout: WAIT_MS });

    // A savepoint with the button, then listed in the checkpoint history.
    await page.click("#action-savepoint");
    await page.waitForSelector("#notice.ok", { timeout: WAIT_MS * 2 });
    const said = (await page.textContent("#notice")) ?? "";
    const savepoint = /Savepoint (\d+) written to (\S+)/.exec(said);
    assert.ok(savepoint !== null, `the notice: ${said}`);
    assert.ok(existsSync(savepoint[2]!), `the savepoint ${savepoint[2]} is on disk`);
    assert.ok(readdirSync(join(home, "savepoints")).length >= 1);
    await page.click('nav [data-tab="checkpoints"]');
    const row = page.locator("table.checkpoint-history tbody tr", { hasText: "savepoint" }).first();
    await row.waitFor({ timeout: WAIT_MS });
    assert.match((await row.textContent()) ?? "", new RegExp(`^${savepoint[1]}savepointcompleted`));
    await shot(page, "3-checkpoints");

    // A queryable state: the latest record of key 5 is a record number n with n % 37 === 5.
    await page.click('nav [data-tab="state"]');
    await page.waitForSelector('#state-name option[value="latest"]', { state: "attached", timeout: WAIT_MS });
    await page.selectOption("#state-name", "latest");
    await page.fill("#state-key", "5");
    await page.click("#state-lookup");
    await page.waitForSelector('#state-result[data-found="true"]', { timeout: WAIT_MS });
    const value = Number(await page.textContent("#state-result"));
    assert.ok(Number.isInteger(value) && value % KEYS === 5, `latest of key 5: ${value}`);
    await shot(page, "4-state");

    // A CPU profile of worker thread 0 for a second, as a flame graph.
    await page.click('nav [data-tab="profile"]');
    await page.fill("#profile-seconds", "1");
    await page.click("#profile-start");
    await page.waitForSelector("#profile-summary", { timeout: WAIT_MS });
    assert.match((await page.textContent("#profile-summary")) ?? "", /^Worker thread 0 \(tasks 0\.0, 1\.0, 2\.0\): [\d,]+ samples in \d/);
    const frames = await page.$$eval("svg.flame .frame title", (els) => els.map((e) => e.textContent ?? ""));
    assert.ok(frames.length > 3, `flame frames: ${frames.length}`);
    assert.ok(frames[0]!.startsWith("(root)"), frames[0]);
    await shot(page, "5-profile");

    // Refusals, with plain HTTP.
    const sessionCookie = `${cookie!.name}=${cookie!.value}`;
    const call = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, { redirect: "manual", ...init });
    assert.equal((await call("/")).status, 401, "the page without the cookie");
    assert.equal((await call("/v1/job")).status, 401, "the API without the cookie");
    assert.equal((await call("/v1/job/events")).status, 401, "the live stream without the cookie");
    assert.equal((await call("/v1/job", { headers: { cookie: `${cookie!.name}=not-a-session` } })).status, 401, "a made-up session");
    assert.equal((await call("/v1/job", { headers: { cookie: sessionCookie } })).status, 200, "the API with the cookie");
    const withoutCsrf = await call("/v1/job/savepoint", { method: "POST", headers: { cookie: sessionCookie, "content-type": "application/json" }, body: "{}" });
    assert.equal(withoutCsrf.status, 403);
    assert.equal(((await withoutCsrf.json()) as Json).error.code, "CSRF_REJECTED");
    const csrf = await page.getAttribute('meta[name="eddy-csrf"]', "content");
    const wrongCsrf = await call("/v1/job/cancel", { method: "POST", headers: { cookie: sessionCookie, "x-eddy-csrf": "x".repeat(43) }, body: "{}" });
    assert.equal(wrongCsrf.status, 403);
    const otherOrigin = await call("/v1/job/cancel", { method: "POST", headers: { cookie: sessionCookie, "x-eddy-csrf": csrf!, origin: "http://evil.example" }, body: "{}" });
    assert.equal(otherOrigin.status, 403);
    assert.equal((await call("/v1/ui/login-link", { method: "POST", headers: { cookie: sessionCookie, "x-eddy-csrf": csrf! }, body: "{}" })).status, 403, "a session cannot make login links");
    // In the page itself: a script's POST without the header is refused too.
    const errorsBefore = consoleErrors.length;
    assert.equal(await page.evaluate(() => fetch("/v1/job/cancel", { method: "POST", body: "{}" }).then((r) => r.status)), 403);
    // Chromium logs the refused request as an error of the page: that one is expected.
    await until("Chromium to log the refused POST", () => (consoleErrors.length > errorsBefore ? true : undefined));
    assert.match(consoleErrors.splice(errorsBefore, 1)[0]!, /403/);
    assert.equal(job.status(), "running", "nothing refused reached the job");

    // The login link works once: used, it is refused; a new one works (once).
    const reused = await call(new URL(link.url).pathname + new URL(link.url).search);
    assert.equal(reused.status, 403);
    assert.equal(reused.headers.get("set-cookie"), null);
    const fresh = new URL((await client.loginLink()).url);
    assert.equal((await call(fresh.pathname + fresh.search, { method: "HEAD" })).status, 405, "a HEAD does not spend the nonce");
    const redeemed = await call(fresh.pathname + fresh.search);
    assert.equal(redeemed.status, 303);
    assert.equal(redeemed.headers.get("location"), "/");
    assert.match(redeemed.headers.get("set-cookie") ?? "", /^eddy-ui-\d+=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=\d+$/);
    assert.equal((await call(fresh.pathname + fresh.search)).status, 403);

    const bearer = { authorization: `Bearer ${client.token}`, "content-type": "application/json" };
    for (const body of [{ thread: 0, seconds: 0 }, { thread: 0, seconds: 31 }, { thread: -1, seconds: 1 }, { thread: 0 }, { thread: 0, seconds: 1, path: "/tmp" }]) {
      const bad = await call("/v1/job/profile", { method: "POST", headers: bearer, body: JSON.stringify(body) });
      assert.equal(bad.status, 400, JSON.stringify(body));
    }
    const noSuchThread = await call("/v1/job/profile", { method: "POST", headers: bearer, body: JSON.stringify({ thread: 9, seconds: 1 }) });
    assert.equal(noSuchThread.status, 409);
    assert.equal(((await noSuchThread.json()) as Json).error.code, "PROFILE_NOT_AVAILABLE");

    // The live streams are bounded: the page holds one; the rest up to the bound, then 503.
    const streams: AbortController[] = [];
    try {
      for (let i = 1; i < MAX_EVENT_STREAMS; i++) {
        const abort = new AbortController();
        streams.push(abort);
        const res = await call("/v1/job/events", { headers: { authorization: `Bearer ${client.token}` }, signal: abort.signal });
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      }
      const refused = await call("/v1/job/events", { headers: { authorization: `Bearer ${client.token}` } });
      assert.equal(refused.status, 503);
      assert.equal(((await refused.json()) as Json).error.code, "TOO_MANY_EVENT_STREAMS");
    } finally {
      for (const s of streams) s.abort();
    }

    // Cancel, confirmed in the dialog (first declined: the job keeps running).
    await page.click("#action-cancel");
    await page.waitForSelector("dialog#confirm[open]");
    await page.click("#confirm-no");
    assert.equal(job.status(), "running");
    await page.click("#action-cancel");
    await page.click("#confirm-yes");
    await assert.rejects(job.done, (e: Error & { code?: string }) => e.code === "JOB_CANCELLED");
    await until("the page to show the job cancelled", async () => ((await page.textContent("#job-state")) === "cancelled" ? true : undefined));
    await shot(page, "6-cancelled");
    assert.deepEqual(consoleErrors, [], "no errors in the page (a CSP violation would be one)");
  } finally {
    await browser.close();
    job.cancel();
    await job.done.catch(() => undefined);
    await server.close();
    for (const k of ["EDDY_Q_HOLD", "EDDY_Q_RECORDS", "EDDY_Q_PER_MS"]) delete process.env[k];
    rmSync(home, { recursive: true, force: true });
  }
});
