/** The human-readable form of the bench's reports: one Markdown table row per query. */
import type { QueryReport } from "./report.ts";

/** Events per second as `1.23 M` or `456 K` (— for none). */
export const rate = (n: number | null): string => {
  if (n === null) return "—";
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  return `${(n / 1e3).toFixed(0)} K`;
};
const times = (n: number | null): string => (n === null ? "—" : `${n.toFixed(2)}×`);
const verdict = (ok: boolean | null): string => (ok === null ? "" : ok ? " ✓" : " ✗");

export const TABLE_HEADER = [
  "| query | events/s | events/s/core | ex start-up | loop events/s | loop ÷ Eddy/core | Flink V2/core | Eddy/core ÷ Flink V2 | peak RSS | output |",
  "|---|---|---|---|---|---|---|---|---|---|",
].join("\n");

export function tableRow(r: QueryReport): string {
  return [
    "",
    r.query + (r.stateless ? "" : " (state)"),
    rate(r.eventsPerSecond),
    rate(r.eventsPerSecondPerCore),
    rate(r.eventsPerSecondPerCoreExStartup),
    rate(r.handLoopEventsPerSecond),
    times(r.ratioLoopToEddy) + verdict(r.meetsLoopTarget),
    rate(r.flinkV2PerCore),
    times(r.ratioToFlinkPerCore) + verdict(r.meetsFlinkTarget) + ` (${times(r.ratioToFlinkPerCoreExStartup)})`,
    `${r.peakRssMb.toFixed(0)} MB`,
    r.outputCheck === "agrees" ? `${r.outputRecords.toLocaleString("en")} ✓` : `${r.outputRecords.toLocaleString("en")}: ${r.outputCheck}`,
    "",
  ].join(" | ").trim();
}
