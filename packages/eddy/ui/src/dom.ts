/** Building the page from elements and text nodes only (no innerHTML: names and messages cannot inject markup). */
import { ApiError } from "./api.ts";

export type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Record<string, string> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) element.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined && c !== false) element.append(c);
  return element;
}

export function table(headers: readonly string[], rows: readonly (readonly Child[])[], className = ""): HTMLTableElement {
  return h(
    "table",
    { class: className },
    h("thead", {}, h("tr", {}, ...headers.map((t) => h("th", {}, t)))),
    h("tbody", {}, ...rows.map((r) => h("tr", {}, ...r.map((c) => h("td", {}, c))))),
  );
}

/** An error as the page says it: the API's code and message. */
export function describe(e: unknown): string {
  return e instanceof ApiError ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
}
