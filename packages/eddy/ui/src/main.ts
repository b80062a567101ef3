/**
 * The web UI of a running Eddy job (docs/web-ui.md), organised as Flink's: a header with the job's
 * state and its actions, then tabs: Overview (the job graph; a click on a vertex shows its
 * subtasks), Checkpoints, Exceptions (a timeline of failures and restarts), Configuration and
 * Queryable state. Live numbers come from the server-sent event stream GET /v1/job/events (about
 * one update a second); the rest is read from the REST API when shown. Only DOM APIs and text
 * nodes: no innerHTML, no inline script or style (the server's Content-Security-Policy forbids both).
 */
import "./app.css";
import { get, post } from "./api.ts";
import { describe, h, table, type Child } from "./dom.ts";
import { exceptionsPanel } from "./exceptions-panel.ts";
import { drawGraph, type GraphView } from "./graph.ts";
import { formatBytes, formatCount, formatDuration, formatRate, formatTime, formatWatermark, percent } from "./format.ts";
import { profilePanel } from "./profile-panel.ts";
import { statePanel } from "./state-panel.ts";
import type { CheckpointSummary, Checkpoints, JobGraph, LiveUpdate, VertexDetail } from "./types.ts";

const TABS = ["overview", "checkpoints", "exceptions", "configuration", "state", "profile"] as const;
type Tab = (typeof TABS)[number];
const TAB_TITLES: Record<Tab, string> = { overview: "Overview", checkpoints: "Checkpoints", exceptions: "Exceptions", configuration: "Configuration", state: "Queryable state", profile: "CPU profile" };

const app = document.getElementById("app")!;
const title = h("h1", {}, "Eddy");
const status = h("span", { class: "badge", id: "job-state" }, "…");
const facts = h("span", { class: "facts", id: "job-facts" });
const live = h("span", { class: "live", id: "live" }, "connecting…");
const notice = h("div", { class: "notice", id: "notice", role: "status" });
const savepointButton = h("button", { type: "button", id: "action-savepoint" }, "Trigger savepoint");
const stopButton = h("button", { type: "button", id: "action-stop" }, "Stop with savepoint");
const cancelButton = h("button", { type: "button", id: "action-cancel", class: "danger" }, "Cancel job");
const tabButtons = new Map<Tab, HTMLButtonElement>(TABS.map((t) => [t, h("button", { type: "button", class: "tab", "data-tab": t }, TAB_TITLES[t])]));
const panels = new Map<Tab, HTMLElement>(TABS.map((t) => [t, h("section", { class: "panel", id: `panel-${t}`, hidden: "" })]));

app.append(
  h("header", {}, h("div", { class: "title" }, title, status, facts, live), h("div", { class: "actions" }, savepointButton, stopButton, cancelButton)),
  notice,
  h("nav", {}, ...tabButtons.values()),
  ...panels.values(),
);

const exceptions = exceptionsPanel(panels.get("exceptions")!);
const states = statePanel(panels.get("state")!);
profilePanel(panels.get("profile")!);

let current: Tab = "overview";
function show(tab: Tab): void {
  current = tab;
  for (const [t, panel] of panels) panel.hidden = t !== tab;
  for (const [t, button] of tabButtons) button.classList.toggle("active", t === tab);
  if (tab === "exceptions") void exceptions.load();
  if (tab === "configuration") void loadConfiguration();
  if (tab === "state") void states.load();
}
for (const [t, button] of tabButtons) button.addEventListener("click", () => show(t));

function say(message: string, kind: "ok" | "error" | "info" = "info"): void {
  notice.className = `notice ${kind}`;
  notice.textContent = message;
}

// --- Overview: the graph and the selected vertex -----------------------------------------------

const graphBox = h("div", { class: "graph-box", id: "graph" }, "laying out the job graph…");
const vertexBox = h("div", { class: "vertex-detail", id: "vertex-detail" }, h("p", { class: "hint" }, "Click a vertex to see its subtasks."));
panels.get("overview")!.append(graphBox, vertexBox);
let graph: GraphView | undefined;
let selected: string | undefined;
let lastUpdate: LiveUpdate | undefined;

async function loadGraph(): Promise<void> {
  try {
    const plan = await get<JobGraph>("/v1/job/vertices");
    graph = await drawGraph(graphBox, plan, (id) => {
      selected = id;
      for (const g of graphBox.querySelectorAll(".vertex")) g.classList.toggle("selected", (g as SVGGElement).dataset.vertex === id);
      void loadVertex();
    });
    if (lastUpdate !== undefined) graph.update(lastUpdate.vertices);
  } catch (e) {
    graphBox.textContent = `The job graph cannot be shown: ${describe(e)}`;
  }
}

/** Gauges in milliseconds, shown as durations. */
const DURATION_GAUGES = new Set(["sourceIdleTime", "watermarkAlignmentDrift"]);

async function loadVertex(): Promise<void> {
  const id = selected;
  if (id === undefined) return;
  try {
    const [vertex, watermarks] = await Promise.all([
      get<VertexDetail>(`/v1/job/vertices/${encodeURIComponent(id)}`),
      get<{ vertices: { id: string; subtasks: { subtask: number; inputWatermark: unknown; outputWatermark: unknown; watermarkLagMs: number | null }[] }[] }>("/v1/job/watermarks"),
    ]);
    if (id !== selected) return;
    const marks = watermarks.vertices.find((v) => v.id === id)?.subtasks ?? [];
    const ms = (n: number | null): string => (n === null ? "–" : percent(n / 1000));
    const head = vertex.operators[0]!;
    const tail = vertex.operators.at(-1)!;
    vertexBox.replaceChildren(
      h("h2", {}, `Vertex ${vertex.id}: ${vertex.name}`),
      h("p", {}, `Parallelism ${vertex.parallelism} (max ${vertex.maxParallelism}) · operators: ${vertex.operators.map((o) => o.name + (o.uid === null ? "" : ` [uid ${o.uid}]`)).join(" → ")}`),
      table(
        ["Subtask", "Records in", "In/s", "Records out", "Out/s", "Busy", "Backpressured", "Idle", "Input watermark", "Output watermark", "Watermark lag"],
        vertex.subtasks.map((s) => {
          const first = s.operators.find((o) => o.id === head.id);
          const last = s.operators.find((o) => o.id === tail.id);
          const mark = marks.find((m) => m.subtask === s.subtask);
          return [
            String(s.subtask),
            formatCount(first?.numRecordsIn ?? null),
            formatRate(first?.numRecordsInPerSecond ?? null),
            formatCount(last?.numRecordsOut ?? null),
            formatRate(last?.numRecordsOutPerSecond ?? null),
            ms(s.busyTimeMsPerSecond),
            ms(s.backPressuredTimeMsPerSecond),
            ms(s.idleTimeMsPerSecond),
            formatWatermark((mark?.inputWatermark ?? null) as never),
            formatWatermark((mark?.outputWatermark ?? null) as never),
            mark?.watermarkLagMs == null ? "–" : formatDuration(mark.watermarkLagMs),
          ];
        }),
        "subtasks",
      ),
      h("h3", {}, "Operators per subtask"),
      table(
        ["Subtask", "Operator", "Records in", "Records out", "Input watermark", "Output watermark", "Gauges"],
        vertex.subtasks.flatMap((s) =>
          s.operators.map((o) => [
            String(s.subtask),
            o.name,
            formatCount(o.numRecordsIn),
            formatCount(o.numRecordsOut),
            formatWatermark(o.currentInputWatermark),
            formatWatermark(o.currentOutputWatermark),
            formatGauges(o.gauges),
          ]),
        ),
      ),
    );
  } catch (e) {
    vertexBox.replaceChildren(h("p", { class: "error" }, `Vertex ${id} cannot be shown: ${describe(e)}`));
  }
}

// --- Checkpoints ----------------------------------------------------------------------------------

const checkpointBox = h("div", { id: "checkpoints" });
panels.get("checkpoints")!.append(checkpointBox);
let shownCheckpoints = "";

function checkpointRow(c: CheckpointSummary): Child[] {
  return [
    String(c.id),
    c.isSavepoint ? "savepoint" : "checkpoint",
    h("span", { class: `status ${c.status}` }, c.status),
    formatTime(c.triggerTimeMs),
    formatDuration(c.durationMs),
    `${c.acknowledgedSubtasks}/${c.totalSubtasks}`,
    formatBytes(c.sizeBytes),
    formatDuration(c.alignmentMs),
    `${formatDuration(c.syncMs)} / ${formatDuration(c.asyncMs)}`,
    c.failureReason ?? "",
  ];
}

function renderCheckpoints(c: Checkpoints): void {
  const key = JSON.stringify(c);
  if (key === shownCheckpoints) return;
  shownCheckpoints = key;
  if (!c.enabled && c.history.length === 0) {
    checkpointBox.replaceChildren(h("p", {}, "Checkpointing is off for this job (savepoints still work)."));
    return;
  }
  const completed = c.history.filter((x) => x.status === "completed" && !x.isSavepoint && x.durationMs !== null);
  const durations = completed.map((x) => x.durationMs!);
  checkpointBox.replaceChildren(
    h(
      "p",
      { class: "counts" },
      `Completed ${c.counts.completed} · failed ${c.counts.failed} · in progress ${c.counts.inProgress}`,
      durations.length === 0 ? "" : ` · duration of the last ${durations.length}: min ${formatDuration(Math.min(...durations))}, max ${formatDuration(Math.max(...durations))}`,
    ),
    table(["ID", "Type", "Status", "Triggered", "Duration", "Acknowledged", "Size", "Alignment (max)", "Sync / async (max)", "Failure reason"], c.history.map(checkpointRow), "checkpoint-history"),
    h("p", { class: "hint" }, `The newest ${c.history.length} of the ${c.kept} the job keeps; GET /v1/job/checkpoints/<id> has each subtask's figures.`),
  );
}

// --- Configuration ---------------------------------------------------------------------------------

const configBox = h("div", { id: "configuration" });
panels.get("configuration")!.append(configBox);

async function loadConfiguration(): Promise<void> {
  try {
    const c = await get<{ entries: { key: string; value: unknown }[] }>("/v1/job/config");
    configBox.replaceChildren(table(["Key", "Value"], c.entries.map((e) => [e.key, typeof e.value === "string" ? e.value : JSON.stringify(e.value)]), "config"));
  } catch (e) {
    configBox.replaceChildren(h("p", { class: "error" }, describe(e)));
  }
}

// --- Actions -----------------------------------------------------------------------------------------

const dialogText = h("p", { id: "confirm-text" });
const confirmYes = h("button", { type: "button", id: "confirm-yes", class: "danger" }, "Yes");
const confirmNo = h("button", { type: "button", id: "confirm-no" }, "No, keep it running");
const dialog = h("dialog", { id: "confirm" }, dialogText, h("div", { class: "actions" }, confirmNo, confirmYes));
document.body.append(dialog);

function confirmAction(question: string): Promise<boolean> {
  dialogText.textContent = question;
  dialog.showModal();
  return new Promise((resolve) => {
    const done = (answer: boolean) => () => {
      confirmYes.onclick = null;
      confirmNo.onclick = null;
      dialog.close();
      resolve(answer);
    };
    confirmYes.onclick = done(true);
    confirmNo.onclick = done(false);
    dialog.oncancel = done(false);
  });
}

async function act(button: HTMLButtonElement, running: string, action: () => Promise<string>): Promise<void> {
  button.disabled = true;
  say(running, "info");
  try {
    say(await action(), "ok");
  } catch (e) {
    say(describe(e), "error");
  } finally {
    button.disabled = false;
  }
}

savepointButton.addEventListener("click", () => {
  void act(savepointButton, "Taking a savepoint…", async () => {
    const s = await post<{ path: string; checkpointId: number; bytes: number }>("/v1/job/savepoint", {});
    return `Savepoint ${s.checkpointId} written to ${s.path} (${formatBytes(s.bytes)})`;
  });
});

stopButton.addEventListener("click", () => {
  void confirmAction("Stop the job with a final savepoint? It ends once the savepoint is written.").then((yes) => {
    if (!yes) return;
    void act(stopButton, "Stopping with a savepoint…", async () => {
      const s = await post<{ savepoint: { path: string } | null }>("/v1/job/stop", { savepoint: true });
      return `Stopped; savepoint at ${s.savepoint?.path ?? "(none)"}`;
    });
  });
});

cancelButton.addEventListener("click", () => {
  void confirmAction("Cancel the job now, without a savepoint? Records in flight are not committed.").then((yes) => {
    if (!yes) return;
    void act(cancelButton, "Cancelling…", async () => {
      await post("/v1/job/cancel", {});
      return "Cancelled.";
    });
  });
});

// --- Live updates -----------------------------------------------------------------------------------

function apply(update: LiveUpdate): void {
  lastUpdate = update;
  const o = update.overview;
  title.textContent = o.name;
  document.title = `Eddy — ${o.name} (${o.state})`;
  status.textContent = o.state;
  status.className = `badge state-${o.state}`;
  facts.textContent = `id ${o.id} · ${o.vertices} vertices, ${o.subtasks} subtasks · up ${formatDuration(o.durationMs)} · restarts ${o.restarts}`;
  live.textContent = `live · ${formatTime(update.timeMs)}`;
  const ended = !["running", "restarting", "stopping"].includes(o.state);
  for (const b of [savepointButton, stopButton, cancelButton]) b.toggleAttribute("disabled", ended);
  graph?.update(update.vertices);
  renderCheckpoints(update.checkpoints);
  tabButtons.get("exceptions")!.textContent = update.exceptions === 0 ? "Exceptions" : `Exceptions (${update.exceptions})`;
  if (current === "exceptions" && update.exceptions !== exceptions.seen()) void exceptions.load();
  if (current === "overview" && selected !== undefined) void loadVertex();
}

function connect(): void {
  const events = new EventSource("/v1/job/events");
  events.addEventListener("update", (e) => apply(JSON.parse((e as MessageEvent<string>).data) as LiveUpdate));
  events.addEventListener("error", () => {
    live.textContent = "reconnecting…";
  });
}

show("overview");
void loadGraph();
connect();

/** A source's gauges (backlog, idle time, watermark alignment's drift), "name value" joined; times as durations. */
function formatGauges(gauges: Record<string, number | null> | undefined): string {
  const entries = Object.entries(gauges ?? {});
  if (entries.length === 0) return "–";
  return entries.map(([name, v]) => `${name} ${DURATION_GAUGES.has(name) ? formatDuration(v) : formatCount(v)}`).join(" · ");
}
