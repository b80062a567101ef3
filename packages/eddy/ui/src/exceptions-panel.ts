/** The Exceptions tab: the job's failures and restarts as a timeline, newest first. */
import { get } from "./api.ts";
import { describe, h } from "./dom.ts";
import { formatTime } from "./format.ts";
import type { Exceptions } from "./types.ts";

export function exceptionsPanel(panel: HTMLElement): { load(): Promise<void>; seen(): number } {
  const exceptionBox = h("div", { id: "exceptions" });
  panel.append(exceptionBox);
  let exceptionsSeen = -1;

  async function loadExceptions(): Promise<void> {
    try {
      const e = await get<Exceptions>("/v1/job/exceptions");
      exceptionsSeen = e.total;
      if (e.history.length === 0) {
        exceptionBox.replaceChildren(h("p", {}, "No failures: the job has not restarted."));
        return;
      }
      exceptionBox.replaceChildren(
        h("p", {}, `${e.total} failure${e.total === 1 ? "" : "s"}${e.truncated ? " (the oldest are not kept)" : ""}, newest first.`),
        h(
          "ol",
          { class: "timeline" },
          ...e.history.map((x) =>
            h(
              "li",
              { class: x.restarted ? "restarted" : "final" },
              h("div", { class: "when" }, `${formatTime(x.timeMs)} · attempt ${x.attempt} · ${x.restarted ? "restarted" : "not restarted"}`),
              h("div", { class: "what" }, `${x.code === null ? "" : `${x.code}: `}${x.message}`),
              x.operator === null ? null : h("div", { class: "where" }, `in ${x.operator}${x.subtask === null ? "" : ` (subtask ${x.subtask})`}${x.location === null ? "" : ` at ${x.location}`}`),
              x.rootCause === null ? null : h("div", { class: "cause" }, `root cause: ${x.rootCause}`),
              x.stack === null ? null : h("details", {}, h("summary", {}, "stack trace"), h("pre", {}, x.stack)),
            ),
          ),
        ),
      );
    } catch (e) {
      exceptionBox.replaceChildren(h("p", { class: "error" }, describe(e)));
    }
  }
  return { load: loadExceptions, seen: () => exceptionsSeen };
}
