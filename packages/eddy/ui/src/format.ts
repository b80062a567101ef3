/** How the page writes numbers, sizes, times and watermarks. */
import type { Watermark } from "./types.ts";

export function formatCount(n: number | null): string {
  if (n === null) return "–";
  return n.toLocaleString("en");
}

export function formatRate(n: number | null): string {
  if (n === null) return "–/s";
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M/s`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k/s`;
  return `${Math.round(n).toLocaleString("en")}/s`;
}

export function percent(ratio: number | null): string {
  return ratio === null ? "–" : `${Math.round(ratio * 100)}%`;
}

export function formatBytes(n: number | null): string {
  if (n === null) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

export function formatDuration(ms: number | null): string {
  if (ms === null) return "–";
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.floor(ms / 1_000);
  const h = Math.floor(s / 3_600);
  const m = Math.floor((s % 3_600) / 60);
  return h > 0 ? `${h} h ${m} min` : `${m} min ${s % 60} s`;
}

export function formatTime(ms: number): string {
  const d = new Date(ms);
  return `${d.toLocaleTimeString("en-GB", { hour12: false })}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

/** An event-time watermark: its time (UTC) and the raw number, or what "none"/"end" mean. */
export function formatWatermark(w: Watermark): string {
  if (w === null) return "–";
  if (w === "none") return "none yet";
  if (w === "end") return "end of input";
  const iso = new Date(w).toISOString();
  return Number.isNaN(Date.parse(iso)) ? String(w) : iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}
