import { runJob } from "eddy/testing";
const jobs = await import("./jobs/windows.ts");
const which = process.argv[2] ?? "tumbling10s";
const ev = Number(process.env.EDDY_BENCH_EVENTS);
const cpu: number[] = [];
for (let r = 0; r < Number(process.argv[3] ?? 4); r++) {
  const c0 = process.cpuUsage();
  const handle = runJob((jobs as any)[which], { mode: "inline", parallelism: 1 });
  const res = await handle.done;
  const c = process.cpuUsage(c0);
  cpu.push(ev / ((c.user + c.system) / 1e6) / 1e6);
  if (process.env.VERBOSE) console.log(which, (ev / res.runningMs / 1e3).toFixed(3), "M ev/s wall", cpu.at(-1)!.toFixed(3), "M ev/cpu-s");
}
cpu.sort((a, b) => a - b);
console.log(which, "median", cpu[cpu.length >> 1]!.toFixed(3), "M ev/cpu-s", cpu.map((x) => x.toFixed(2)).join(" "));
