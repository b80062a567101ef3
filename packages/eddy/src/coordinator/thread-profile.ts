/**
 * A CPU profile of one worker thread for a few seconds, for the web UI's flame graph: the
 * coordinator attaches to the thread through Node's inspector (the NodeWorker domain, as
 * thread-stack.ts does) and runs V8's sampling profiler in that thread (Profiler.start … stop),
 * so only the thread's own JavaScript is sampled, while the job runs on (no pause).
 *
 * Bounds: 1..MAX_PROFILE_SECONDS seconds; one profile at a time per job (the caller checks); the
 * answer is a call tree folded by function and location, without nodes under MIN_SHARE of the
 * samples and at most MAX_FLAME_NODES nodes, so its size does not grow with the profile's.
 */
import { Session } from "node:inspector";
import type { Worker } from "node:worker_threads";
import { EddyError } from "../core/errors.ts";

export const MAX_PROFILE_SECONDS = 30;
export const MAX_FLAME_NODES = 2_000;
/** Nodes with fewer samples than this share of all are left out (and counted in their parent's self time). */
const MIN_SHARE = 0.002;
/** V8's sampling interval, µs. */
const SAMPLING_INTERVAL_US = 1_000;

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number };
  readonly hitCount?: number;
  readonly children?: readonly number[];
}

/** One frame of the flame graph: its samples with its callees (`total`) and without (`self`). */
export interface FlameNode {
  readonly name: string;
  /** url:line:column (1-based), or "" for V8's own nodes. */
  readonly location: string;
  total: number;
  self: number;
  readonly children: FlameNode[];
}

export interface ThreadProfile {
  readonly thread: number;
  /** The tasks the thread runs, `<vertex>.<subtask>` as the REST API names them. */
  readonly tasks: readonly string[];
  readonly durationMs: number;
  readonly samplingIntervalUs: number;
  readonly samples: number;
  readonly root: FlameNode;
}

/** Profiles `worker` (thread index `thread`) for `seconds`. */
export async function profileThread(worker: Worker, thread: number, seconds: number, tasks: readonly string[]): Promise<ThreadProfile> {
  const session = new Session();
  session.connect();
  const post = (method: string, params: object = {}): Promise<unknown> =>
    new Promise((resolve, reject) => session.post(method, params, (e, r) => (e === null ? resolve(r) : reject(e))));
  try {
    const sessionId = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new EddyError("PROFILE_FAILED", `worker thread ${thread} did not accept the profiler within 5 s`)), 5_000);
      session.on("NodeWorker.attachedToWorker", (event: { params: { sessionId: string; workerInfo: { title: string } } }) => {
        if (!event.params.workerInfo.title.startsWith(`[worker ${worker.threadId}]`)) return;
        clearTimeout(timer);
        resolve(event.params.sessionId);
      });
      post("NodeWorker.enable", { waitForDebuggerOnStart: false }).catch(reject);
    });
    let next = 0;
    const pending = new Map<number, { resolve(r: unknown): void; reject(e: Error): void }>();
    session.on("NodeWorker.receivedMessageFromWorker", (m: { params: { sessionId: string; message: string } }) => {
      if (m.params.sessionId !== sessionId) return;
      const message = JSON.parse(m.params.message) as { id?: number; result?: unknown; error?: { message: string } };
      const waiter = message.id === undefined ? undefined : pending.get(message.id);
      if (waiter === undefined) return;
      pending.delete(message.id!);
      if (message.error !== undefined) waiter.reject(new EddyError("PROFILE_FAILED", `the profiler of worker thread ${thread} answered: ${message.error.message}`));
      else waiter.resolve(message.result);
    });
    const send = (method: string, params: object = {}): Promise<unknown> =>
      new Promise((resolve, reject) => {
        const id = ++next;
        pending.set(id, { resolve, reject });
        post("NodeWorker.sendMessageToWorker", { sessionId, message: JSON.stringify({ id, method, params }) }).catch(reject);
      });
    await send("Profiler.enable");
    await send("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
    const started = performance.now();
    await send("Profiler.start");
    await new Promise((resolve) => setTimeout(resolve, seconds * 1_000));
    const { profile } = (await send("Profiler.stop")) as { profile: { nodes: ProfileNode[]; samples?: number[] } };
    const durationMs = performance.now() - started;
    await send("Profiler.disable").catch(() => undefined);
    const root = flameTree(profile.nodes);
    return { thread, tasks, durationMs, samplingIntervalUs: SAMPLING_INTERVAL_US, samples: root.total, root };
  } catch (e) {
    if (e instanceof EddyError) throw e;
    throw new EddyError("PROFILE_FAILED", `cannot profile worker thread ${thread}: ${(e as Error).message}`, { cause: e });
  } finally {
    session.disconnect();
  }
}

/**
 * V8's profile nodes as a flame tree: children with the same function and location merged, small
 * nodes dropped (their samples stay in their parent's self), at most MAX_FLAME_NODES nodes.
 */
export function flameTree(nodes: readonly ProfileNode[]): FlameNode {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const build = (n: ProfileNode): FlameNode => {
    const f = n.callFrame;
    const node: FlameNode = {
      name: f.functionName === "" ? (f.url === "" ? `(${n.id === nodes[0]?.id ? "root" : "anonymous"})` : "(anonymous)") : f.functionName,
      location: f.url === "" ? "" : `${f.url}:${f.lineNumber + 1}:${f.columnNumber + 1}`,
      self: n.hitCount ?? 0,
      total: 0,
      children: [],
    };
    const merged = new Map<string, FlameNode>();
    for (const id of n.children ?? []) {
      const child = byId.get(id);
      if (child === undefined) continue;
      const c = build(child);
      const key = `${c.name}\u0000${c.location}`;
      const same = merged.get(key);
      if (same === undefined) merged.set(key, c);
      else mergeInto(same, c);
    }
    node.children.push(...merged.values());
    node.total = node.self + node.children.reduce((sum, c) => sum + c.total, 0);
    return node;
  };
  const root = nodes[0] === undefined ? { name: "(root)", location: "", self: 0, total: 0, children: [] } : build(nodes[0]);
  prune(root, Math.max(1, Math.ceil(root.total * MIN_SHARE)));
  return root;
}

function mergeInto(into: FlameNode, from: FlameNode): void {
  into.self += from.self;
  into.total += from.total;
  for (const c of from.children) {
    const same = into.children.find((x) => x.name === c.name && x.location === c.location);
    if (same === undefined) into.children.push(c);
    else mergeInto(same, c);
  }
}

/** Drops nodes under `min` samples, breadth first, and stops at MAX_FLAME_NODES nodes. */
function prune(root: FlameNode, min: number): void {
  let kept = 1;
  const queue: FlameNode[] = [root];
  while (queue.length > 0) {
    const node = queue.shift()!;
    const keep = node.children.filter((c) => c.total >= min).sort((a, b) => b.total - a.total);
    const room = Math.max(0, MAX_FLAME_NODES - kept);
    const taken = keep.slice(0, room);
    kept += taken.length;
    node.self = node.total - taken.reduce((sum, c) => sum + c.total, 0);
    node.children.splice(0, node.children.length, ...taken);
    queue.push(...taken);
  }
}
