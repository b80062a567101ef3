/**
 * A real browser for the web UI's tests: Debian's Chromium (/usr/bin/chromium) driven by
 * playwright-core (`npx playwright install` cannot download browsers here). When the browser is
 * missing, it is installed with apt-get when this process is root; otherwise the test FAILS
 * saying what to install (never skips). Each launch gets a fresh profile directory, removed on close.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Makes sure /usr/bin/chromium exists: installs Debian's package when root, else throws saying what is missing. */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  if (process.getuid?.() !== 0) {
    throw new Error(`${CHROMIUM} is missing and this test is not root, so it cannot install it: run 'sudo apt-get install -y chromium' (Debian's package) first`);
  }
  const apt = (args: string[]): void => {
    execFileSync("apt-get", args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }, timeout: 10 * 60_000 });
  };
  try {
    apt(["install", "-y", "chromium"]);
  } catch {
    // The package lists may be missing (a fresh container): fetch them once, then install.
    try {
      apt(["update"]);
      apt(["install", "-y", "chromium"]);
    } catch (e) {
      throw new Error(`${CHROMIUM} is missing and 'apt-get install -y chromium' failed: ${(e as Error).message}`);
    }
  }
  if (!existsSync(CHROMIUM)) throw new Error(`'apt-get install -y chromium' ran but ${CHROMIUM} is still missing`);
}

/** A headless Chromium with a fresh profile; `close()` ends it and removes the profile. */
export async function launchBrowser(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  ensureChromium();
  const profile = mkdtempSync(join(tmpdir(), "eddy-chromium-"));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, timeout: 60_000 });
  } catch (e) {
    rmSync(profile, { recursive: true, force: true });
    throw new Error(`Chromium (${CHROMIUM}) did not start: ${(e as Error).message}`);
  }
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
