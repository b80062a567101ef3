/**
 * librdkafka's mock Kafka cluster as a process (test/kafka-mock/kafka-mock.c), compiled against
 * Debian's `librdkafka-dev` into a temp dir and started on loopback ports: it speaks Kafka's wire
 * protocol (produce, fetch, metadata, groups, offsets) but not transactions faithfully (a zombie
 * producer is not fenced; measured in docs/connectors/kafka.md). When `librdkafka-dev` is missing
 * and this runs as root, it is installed first; otherwise `startKafkaMock` rejects saying what is
 * missing (a test using it fails, never skips).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join, resolve } from "node:path";

const SOURCE = resolve(import.meta.dirname, "kafka-mock/kafka-mock.c");
const HEADER = "/usr/include/librdkafka/rdkafka_mock.h";

export interface KafkaMock {
  /** host:port,… of the mock brokers. */
  readonly bootstrap: string;
  /** Stops the cluster (closes its stdin, then SIGKILL after 5 s); may be called twice. */
  stop(): Promise<void>;
}

let compiled: string | undefined;

/** The mock's binary, compiled once per process (installing librdkafka-dev when missing and running as root). */
export function kafkaMockBinary(): string {
  if (compiled !== undefined) return compiled;
  if (!existsSync(HEADER)) {
    if (userInfo().uid !== 0) throw new Error("the Kafka mock cluster needs Debian's librdkafka-dev (and gcc): run `sudo apt-get install -y librdkafka-dev gcc`");
    const apt = (...args: string[]) => spawnSync("apt-get", ["-o", "DPkg::Lock::Timeout=300", ...args], { encoding: "utf8", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
    let installed = apt("install", "-y", "librdkafka-dev", "gcc");
    if (installed.status !== 0) installed = (apt("update"), apt("install", "-y", "librdkafka-dev", "gcc"));
    if (!existsSync(HEADER)) throw new Error(`\`apt-get install -y librdkafka-dev gcc\` did not install librdkafka's mock header (status ${installed.status}):\n${(installed.stderr ?? "").slice(-2000)}`);
  }
  const out = join(mkdtempSync(join(tmpdir(), "eddy-kafka-mock-")), "kafka-mock");
  const cc = spawnSync("gcc", ["-O2", "-Wall", "-o", out, SOURCE, "-lrdkafka"], { encoding: "utf8" });
  if (cc.status !== 0) throw new Error(`could not compile ${SOURCE} (gcc status ${cc.status}):\n${cc.stderr}`);
  compiled = out;
  return out;
}

/** Starts a mock cluster of `brokers` brokers with `topics` (name → partitions). */
export async function startKafkaMock(topics: Readonly<Record<string, number>>, brokers = 1): Promise<KafkaMock> {
  const child = spawn(kafkaMockBinary(), [String(brokers), ...Object.entries(topics).map(([t, n]) => `${t}:${n}`)], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += String(d)));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const bootstrap = await new Promise<string>((resolveLine, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += String(d);
      const m = /^bootstrap (\S+)$/m.exec(out);
      if (m !== null) resolveLine(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`the Kafka mock cluster exited (status ${code}) before it was ready:\n${stderr}`)));
  });
  return {
    bootstrap,
    async stop() {
      if (child.exitCode !== null) return;
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
