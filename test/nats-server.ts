/**
 * A real NATS server with JetStream for one test file: Debian's `nats-server` (`-js`), started on
 * a free loopback port with a fresh store directory under a temp dir. When the binary is missing
 * and the tests run as root, it is installed first (`apt-get install -y nats-server`); otherwise
 * `startNats` rejects saying exactly what is missing: the tests fail, never skip.
 */
import { freePort } from "./free-port.ts";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

export interface NatsServer {
  /** nats://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGTERM, then SIGKILL) and starts it again on the same port and store: an outage. */
  restart(downMs: number): Promise<void>;
  /** Stops the server (SIGTERM, then SIGKILL) and deletes its store; may be called twice. */
  stop(): Promise<void>;
}

const CANDIDATES = ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"];

function findBinary(): string | undefined {
  const fromEnv = process.env.EDDY_NATS_SERVER;
  if (fromEnv !== undefined && fromEnv !== "") return existsSync(fromEnv) ? fromEnv : undefined;
  const found = CANDIDATES.find((p) => existsSync(p));
  if (found !== undefined) return found;
  const which = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" });
  return which.status === 0 && which.stdout.trim() !== "" ? which.stdout.trim() : undefined;
}

/** The path of `nats-server`, installing Debian's package when missing and running as root. */
export function natsServerBinary(): string {
  const found = findBinary();
  if (found !== undefined) return found;
  if (userInfo().uid !== 0) {
    throw new Error("the NATS tests need Debian's nats-server (2.9 or later, with JetStream) and it is not installed: run `sudo apt-get install -y nats-server` (or set EDDY_NATS_SERVER to the binary)");
  }
  // Another apt-get may hold the dpkg lock (a CI image installing something else): wait for it.
  const apt = (...args: string[]) => spawnSync("apt-get", ["-o", "DPkg::Lock::Timeout=300", ...args], { encoding: "utf8", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  let installed = apt("install", "-y", "nats-server");
  // A fresh image has no package lists yet.
  if (installed.status !== 0) installed = (apt("update"), apt("install", "-y", "nats-server"));
  const after = findBinary();
  if (after === undefined) {
    throw new Error(`the NATS tests need nats-server, which is not installed, and \`apt-get install -y nats-server\` did not install it (status ${installed.status}):\n${(installed.stderr ?? "").slice(-2000)}`);
  }
  return after;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

interface Running {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
}

/** Runs the server on `port` with `store`; resolves once it accepts connections with JetStream ready, rejects with its output if not within 20 s. */
async function launch(binary: string, port: number, store: string): Promise<Running> {
  const child: ChildProcess = spawn(binary, ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store, "--http_port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr!.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nats-server (${binary}) exited at start (${child.exitCode ?? child.signalCode}):\n${log}`);
    // JetStream is ready once the server logs it (the port may accept a moment earlier).
    if ((await accepts(port)) && /Server is ready/.test(log)) return { child, exited };
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`nats-server (${binary}) did not accept connections on 127.0.0.1:${port} within 20 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function terminate(running: Running): Promise<void> {
  const { child, exited } = running;
  if (child.exitCode === null && child.signalCode === null) {
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

/** Starts `nats-server -js` on loopback; rejects with the server's output if it does not accept connections within 20 s. */
export async function startNats(): Promise<NatsServer> {
  const binary = natsServerBinary();
  const store = mkdtempSync(join(tmpdir(), "eddy-nats-"));
  const port = await freePort();
  let running: Running;
  try {
    running = await launch(binary, port, store);
  } catch (e) {
    rmSync(store, { recursive: true, force: true });
    throw e;
  }
  let stopped: Promise<void> | undefined;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    async restart(downMs) {
      await terminate(running);
      await new Promise((r) => setTimeout(r, downMs));
      running = await launch(binary, port, store);
    },
    stop() {
      stopped ??= (async () => {
        await terminate(running);
        rmSync(store, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
