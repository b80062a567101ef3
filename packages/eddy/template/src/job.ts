import { defineJob } from "eddy";
import { averages, type Reading } from "./pipeline.js";

const START_MS = Date.UTC(2026, 0, 1);
const SENSORS = 5;

/** Reading number `i`: five sensors, one reading each per second, a few arriving out of order. */
export function readingAt(i: number): Reading {
  const sensor = i % SENSORS;
  const second = Math.floor(i / SENSORS);
  const jitter = (i * 7919) % 1_500; // up to 1.5 s late, within the watermark's 2 s
  return {
    sensor: `sensor-${sensor}`,
    celsius: 20 + sensor + Math.sin(second / 30) * 5,
    ts: START_MS + second * 1_000 - jitter,
  };
}

// `npm start` runs this job: `eddy run src/job.ts` (add -p 2 for two parallel subtasks).
export default defineJob("{{name}}", (env) => {
  const readings = env.fromSequence(0, 10 * 60 * SENSORS - 1).map(readingAt).name("readings");
  averages(readings).print();
});
