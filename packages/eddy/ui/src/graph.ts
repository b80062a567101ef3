/**
 * The job graph as SVG: one box per vertex (a task: an operator chain), laid out left to right by
 * elkjs's layered algorithm, edges labelled with their partitioner. The layout is made once (the
 * graph of a running job does not change); each live update only rewrites the boxes' numbers and
 * colours.
 *
 * Colours as Flink's web UI: a vertex is filled by what its busiest subtask does, from blue
 * (idle) through red (busy) to dark grey (backpressured), and a bar under its name shows the three
 * shares; its border is the backpressure level (ok / low / high, Flink's thresholds).
 */
import ELK from "elkjs/lib/elk.bundled.js";
import type { ElkExtendedEdge, ElkNode } from "elkjs/lib/elk-api.js";
import type { JobGraph, LiveVertex, Watermark } from "./types.ts";
import { formatRate, formatCount, formatWatermark, percent } from "./format.ts";

const SVG = "http://www.w3.org/2000/svg";
const BOX_WIDTH = 260;
const BOX_HEIGHT = 118;

function svg<K extends keyof SVGElementTagNameMap>(name: K, attributes: Record<string, string | number>, parent?: Element): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) element.setAttribute(k, String(v));
  parent?.appendChild(element);
  return element;
}

function text(parent: Element, x: number, y: number, className: string, content: string): SVGTextElement {
  const t = svg("text", { x, y, class: className }, parent);
  t.textContent = content;
  return t;
}

/** Flink's colouring: idle → blue, busy → red, backpressured → dark grey, mixed by their shares. */
export function vertexFill(v: Pick<LiveVertex, "busyRatio" | "backPressuredRatio" | "idleRatio">): string {
  if (v.busyRatio === null && v.backPressuredRatio === null) return "#eef1f5";
  const busy = v.busyRatio ?? 0;
  const back = v.backPressuredRatio ?? 0;
  const idle = Math.max(0, 1 - busy - back);
  const mix = (a: number, b: number, c: number): number => Math.round(a * idle + b * busy + c * back);
  // idle #dbeafe, busy #ef4444, backpressured #374151
  return `rgb(${mix(0xdb, 0xef, 0x37)}, ${mix(0xea, 0x44, 0x41)}, ${mix(0xfe, 0x44, 0x51)})`;
}

export interface GraphView {
  update(vertices: readonly LiveVertex[]): void;
}

export async function drawGraph(container: HTMLElement, graph: JobGraph, onSelect: (vertexId: string) => void): Promise<GraphView> {
  const elk = new ELK();
  // One edge per pair of vertices (chained edges are inside a vertex); several partitioners between the same pair are listed together.
  const between = new Map<string, { from: string; to: string; partitioners: Set<string> }>();
  for (const e of graph.edges) {
    if (e.chained || e.from === e.to) continue;
    const key = `${e.from}-${e.to}`;
    const found = between.get(key) ?? { from: e.from, to: e.to, partitioners: new Set<string>() };
    found.partitioners.add(e.sideOutput === null ? e.partitioner : `${e.partitioner} (${e.sideOutput})`);
    between.set(key, found);
  }
  const edges: ElkExtendedEdge[] = [...between.entries()].map(([key, e]) => ({
    id: key,
    sources: [`v${e.from}`],
    targets: [`v${e.to}`],
    labels: [{ text: [...e.partitioners].join(", "), width: 8 * [...e.partitioners].join(", ").length, height: 14 }],
  }));
  const layout: ElkNode = await elk.layout({
    id: "job",
    layoutOptions: {
      "elk.algorithm": "layered",
      "elk.direction": "RIGHT",
      "elk.layered.spacing.nodeNodeBetweenLayers": "90",
      "elk.spacing.nodeNode": "40",
      "elk.edgeLabels.inline": "true",
    },
    children: graph.vertices.map((v) => ({ id: `v${v.id}`, width: BOX_WIDTH, height: BOX_HEIGHT })),
    edges,
  });

  const width = (layout.width ?? 0) + 20;
  const height = (layout.height ?? 0) + 20;
  const root = svg("svg", { viewBox: `-10 -10 ${width} ${height}`, width, height, class: "graph", role: "img", "aria-label": "job graph" });
  const defs = svg("defs", {}, root);
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" }, defs);
  svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }, marker);

  for (const edge of layout.edges ?? []) {
    const group = svg("g", { class: "edge", "data-edge": edge.id }, root);
    for (const section of edge.sections ?? []) {
      const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint];
      svg("path", { d: points.map((p, i) => `${i === 0 ? "M" : "L"} ${p.x} ${p.y}`).join(" "), "marker-end": "url(#arrow)" }, group);
    }
    for (const label of edge.labels ?? []) text(group, (label.x ?? 0) + 2, (label.y ?? 0) + 11, "edge-label", label.text ?? "");
  }

  const boxes = new Map<string, { rect: SVGRectElement; bars: SVGRectElement[]; lines: SVGTextElement[]; group: SVGGElement }>();
  for (const node of layout.children ?? []) {
    const vertex = graph.vertices.find((v) => `v${v.id}` === node.id)!;
    const group = svg("g", { class: "vertex", "data-vertex": vertex.id, transform: `translate(${node.x ?? 0}, ${node.y ?? 0})`, tabindex: 0, role: "button" }, root);
    const title = svg("title", {}, group);
    title.textContent = `${vertex.name}\n${vertex.operators.map((o) => `• ${o.name}`).join("\n")}`;
    const rect = svg("rect", { width: BOX_WIDTH, height: BOX_HEIGHT, rx: 6, class: "box level-unknown", fill: vertexFill({ busyRatio: null, backPressuredRatio: null, idleRatio: null }) }, group);
    const name = vertex.name.length > 31 ? `${vertex.name.slice(0, 30)}…` : vertex.name;
    text(group, 10, 20, "name", name);
    // The share bar: busy, backpressured, idle.
    const bars = ["busy", "backpressured", "idle"].map((kind) => svg("rect", { x: 10, y: 28, height: 6, width: 0, class: `share ${kind}` }, group));
    const lines = [50, 68, 86, 104].map((y) => text(group, 10, y, "metric", ""));
    group.addEventListener("click", () => onSelect(vertex.id));
    group.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") onSelect(vertex.id);
    });
    boxes.set(vertex.id, { rect, bars, lines, group });
  }
  container.replaceChildren(root);

  return {
    update(vertices) {
      for (const v of vertices) {
        const box = boxes.get(v.id);
        if (box === undefined) continue;
        box.rect.setAttribute("fill", vertexFill(v));
        box.rect.setAttribute("class", `box level-${v.backpressureLevel}`);
        const shares = [v.busyRatio ?? 0, v.backPressuredRatio ?? 0, v.idleRatio ?? 0];
        let x = 10;
        shares.forEach((share, i) => {
          const w = Math.max(0, Math.min(1, share)) * (BOX_WIDTH - 20);
          box.bars[i]!.setAttribute("x", String(x));
          box.bars[i]!.setAttribute("width", String(w));
          x += w;
        });
        const dark = (v.backPressuredRatio ?? 0) + (v.busyRatio ?? 0) > 0.55;
        box.group.classList.toggle("dark", dark);
        box.group.dataset.recordsIn = String(v.numRecordsIn ?? "");
        box.group.dataset.recordsOut = String(v.numRecordsOut ?? "");
        const [l1, l2, l3, l4] = box.lines as [SVGTextElement, SVGTextElement, SVGTextElement, SVGTextElement];
        l1.textContent = `Parallelism ${v.parallelism} · ${v.backpressureLevel === "unknown" ? "backpressure ?" : `backpressure ${v.backpressureLevel}`}`;
        l2.textContent = `In ${formatRate(v.numRecordsInPerSecond)} (${formatCount(v.numRecordsIn)}) · Out ${formatRate(v.numRecordsOutPerSecond)} (${formatCount(v.numRecordsOut)})`;
        l3.textContent = `Busy ${percent(v.busyRatio)} · Backpressured ${percent(v.backPressuredRatio)} · Idle ${percent(v.idleRatio)}`;
        l4.textContent = `Watermark ${watermarkPair(v.inputWatermark, v.outputWatermark)}`;
      }
    },
  };
}

function watermarkPair(input: Watermark, output: Watermark): string {
  return input === output ? formatWatermark(input) : `in ${formatWatermark(input)} / out ${formatWatermark(output)}`;
}
