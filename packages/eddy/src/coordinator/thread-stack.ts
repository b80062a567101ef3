/**
 * Where a worker thread is, read from outside while it runs: the coordinator attaches to the
 * thread through Node's inspector (the NodeWorker domain), pauses it and reads its call frames.
 * This works while the thread is stuck in JavaScript (the pause is an interrupt V8 takes at the
 * next loop back-edge or call), which no message to the thread can do. Used by the task watchdog
 * to say which line of user code has not returned; best effort: undefined when the inspector is
 * unavailable or the thread does not pause within `timeoutMs`.
 */
import { Session } from "node:inspector";
import type { Worker } from "node:worker_threads";

interface CallFrame {
  readonly functionName: string;
  readonly location: { readonly scriptId: string; readonly lineNumber: number; readonly columnNumber?: number };
}

/** Stack lines in V8's `    at fn (url:line:column)` form, innermost first, at most `maxFrames`. */
export async function readThreadStack(worker: Worker, timeoutMs: number, maxFrames = 12): Promise<string | undefined> {
  const session = new Session();
  try {
    session.connect();
  } catch {
    return undefined;
  }
  const post = (method: string, params?: object): Promise<unknown> =>
    new Promise((resolve, reject) => session.post(method, params ?? {}, (e, r) => (e === null ? resolve(r) : reject(e))));
  let timer: NodeJS.Timeout | undefined;
  try {
    /** Script URLs by id: frames name their script by id (Debugger.scriptParsed, sent on enable). */
    const scripts = new Map<string, string>();
    const frames = new Promise<readonly CallFrame[]>((resolve, reject) => {
      session.on("NodeWorker.attachedToWorker", (event: { params: { sessionId: string; workerInfo: { title: string } } }) => {
        // The inspector numbers workers its own way; the title names the thread id ("[worker 2] name").
        if (!event.params.workerInfo.title.startsWith(`[worker ${worker.threadId}]`)) return;
        const sessionId = event.params.sessionId;
        let id = 0;
        const send = (method: string): Promise<unknown> =>
          post("NodeWorker.sendMessageToWorker", { sessionId, message: JSON.stringify({ id: ++id, method, params: {} }) });
        session.on("NodeWorker.receivedMessageFromWorker", (m: { params: { sessionId: string; message: string } }) => {
          if (m.params.sessionId !== sessionId) return;
          const message = JSON.parse(m.params.message) as { method?: string; params?: { callFrames?: CallFrame[]; scriptId?: string; url?: string } };
          if (message.method === "Debugger.scriptParsed" && message.params?.scriptId !== undefined) scripts.set(message.params.scriptId, message.params.url ?? "");
          if (message.method !== "Debugger.paused") return;
          // Resumed before anything else: a thread left paused cannot be terminated.
          void send("Debugger.resume")
            .then(() => send("Debugger.disable"))
            .catch(() => undefined);
          resolve(message.params?.callFrames ?? []);
        });
        send("Debugger.enable")
          .then(() => send("Debugger.pause"))
          .catch(reject);
      });
    });
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
      timer.unref();
    });
    await post("NodeWorker.enable", { waitForDebuggerOnStart: false });
    const found = await Promise.race([frames, timeout]);
    if (found === undefined) return undefined;
    return found
      .slice(0, maxFrames)
      .map((f) => {
        const url = scripts.get(f.location.scriptId) ?? "<unknown>";
        return `    at ${f.functionName === "" ? "<anonymous>" : f.functionName} (${url}:${f.location.lineNumber + 1}:${(f.location.columnNumber ?? 0) + 1})`;
      })
      .join("\n");
  } catch {
    return undefined;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    // Detaches from the worker too; the caller terminates the thread next, paused or not.
    session.disconnect();
  }
}
