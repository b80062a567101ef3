/**
 * A CPU profile (POST /v1/job/profile: a call tree folded by function) as a flame graph in SVG:
 * the root at the top, each callee under its caller, widths proportional to samples (time on
 * the CPU, the callees' included), widest first. Hover a frame for its location and times.
 */
const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 1200;
const ROW = 18;

export interface FlameNode {
  name: string;
  location: string;
  total: number;
  self: number;
  children: FlameNode[];
}

export interface ThreadProfile {
  thread: number;
  /** `<vertex>.<subtask>` of the tasks the thread runs. */
  tasks: string[];
  durationMs: number;
  samplingIntervalUs: number;
  samples: number;
  root: FlameNode;
}

function depth(node: FlameNode): number {
  return 1 + Math.max(0, ...node.children.map(depth));
}

/** Warm colours by the name (stable from one profile to the next), grey for V8's own frames. */
function colour(node: FlameNode): string {
  if (node.location === "") return "#cbd2d9";
  let h = 0;
  for (const c of node.name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${10 + (h % 40)}, ${70 + (h % 20)}%, ${60 + (h % 15)}%)`;
}

export function flameGraph(profile: ThreadProfile): SVGSVGElement {
  const rows = depth(profile.root);
  const root = document.createElementNS(SVG, "svg");
  root.setAttribute("class", "flame");
  root.setAttribute("viewBox", `0 0 ${WIDTH} ${rows * ROW}`);
  root.setAttribute("width", String(WIDTH));
  root.setAttribute("height", String(rows * ROW));
  const total = Math.max(1, profile.root.total);
  const msPerSample = profile.samplingIntervalUs / 1000;
  const draw = (node: FlameNode, x: number, level: number): void => {
    const w = (node.total / total) * WIDTH;
    if (w < 0.5) return;
    const g = document.createElementNS(SVG, "g");
    g.setAttribute("class", "frame");
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${node.name}${node.location === "" ? "" : `\n${node.location}`}\n${Math.round((node.total / total) * 1000) / 10}% · ${Math.round(node.total * msPerSample)} ms (self ${Math.round(node.self * msPerSample)} ms)`;
    const rect = document.createElementNS(SVG, "rect");
    for (const [k, v] of Object.entries({ x, y: level * ROW, width: Math.max(0.5, w - 0.5), height: ROW - 1, fill: colour(node) })) rect.setAttribute(k, String(v));
    g.append(title, rect);
    if (w > 40) {
      const text = document.createElementNS(SVG, "text");
      text.setAttribute("x", String(x + 3));
      text.setAttribute("y", String(level * ROW + 13));
      const chars = Math.floor((w - 6) / 7);
      text.textContent = node.name.length > chars ? `${node.name.slice(0, Math.max(1, chars - 1))}…` : node.name;
      g.append(text);
    }
    root.append(g);
    let offset = x;
    for (const c of node.children) {
      draw(c, offset, level + 1);
      offset += (c.total / total) * WIDTH;
    }
  };
  draw(profile.root, 0, 0);
  return root;
}
