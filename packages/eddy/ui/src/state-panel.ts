/** The Queryable state tab: the job's queryable states, and a key's value looked up through the control API. */
import { get, jobId } from "./api.ts";
import { describe, h } from "./dom.ts";
import type { QueryLocation } from "./types.ts";

export function statePanel(panel: HTMLElement): { load(): Promise<void> } {
  const stateSelect = h("select", { id: "state-name" });
  const keyInput = h("input", { id: "state-key", type: "text", placeholder: "key (JSON if it parses: 7, \"a\", [1,2]; else a string)", autocomplete: "off" });
  const lookupButton = h("button", { type: "submit", id: "state-lookup" }, "Look up");
  const stateResult = h("pre", { id: "state-result", class: "result" });
  const stateForm = h("form", { class: "lookup" }, h("label", {}, "State ", stateSelect), h("label", {}, "Key ", keyInput), lookupButton);
  panel.append(stateForm, stateResult);

  async function loadStates(): Promise<void> {
    try {
      const { states } = await get<{ states: QueryLocation[] }>("/v1/job/state");
      const chosen = stateSelect.value;
      stateSelect.replaceChildren(...states.map((s) => h("option", { value: s.name }, `${s.name} (${s.operatorName})`)));
      if (states.some((s) => s.name === chosen)) stateSelect.value = chosen;
      if (states.length === 0) stateResult.textContent = "This job has no queryable state (yet).";
    } catch (e) {
      stateResult.textContent = describe(e);
    }
  }

  stateForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const name = stateSelect.value;
    const key = keyInput.value;
    if (name === "" || key === "") {
      stateResult.textContent = "Choose a state and type a key.";
      return;
    }
    stateResult.textContent = "…";
    get<{ found: boolean; value?: unknown }>(`/v1/jobs/${encodeURIComponent(jobId())}/state/${encodeURIComponent(name)}/${encodeURIComponent(key)}`).then(
      (answer) => {
        stateResult.dataset.found = String(answer.found);
        stateResult.textContent = answer.found ? JSON.stringify(answer.value, null, 2) : `absent: ${name} has no value for key ${key}`;
      },
      (e: unknown) => {
        stateResult.dataset.found = "error";
        stateResult.textContent = describe(e);
      },
    );
  });
  return { load: loadStates };
}
