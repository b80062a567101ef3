/**
 * The Nexmark queries of examples/nexmark/ as test jobs: each query's stream into a collect sink
 * named "out". Top-level exports, so worker threads can import this module and rebuild the very
 * same job; the event count and rate come from NEXMARK_* environment variables, which the test sets
 * before starting a job and worker threads inherit.
 */
import { defineJob, type DataStream, type JobDefinition, type StreamExecutionEnvironment } from "eddy";
import { collectSink } from "eddy/testing";
import { q0 } from "../../examples/nexmark/q0.ts";
import { q1 } from "../../examples/nexmark/q1.ts";
import { q2 } from "../../examples/nexmark/q2.ts";
import { q3 } from "../../examples/nexmark/q3.ts";
import { q4 } from "../../examples/nexmark/q4.ts";
import { q5 } from "../../examples/nexmark/q5.ts";
import { q7 } from "../../examples/nexmark/q7.ts";
import { q8 } from "../../examples/nexmark/q8.ts";
import { q9 } from "../../examples/nexmark/q9.ts";
import { q13 } from "../../examples/nexmark/q13.ts";
import { q11 } from "../../examples/nexmark/q11.ts";
import { q12 } from "../../examples/nexmark/q12.ts";
import { q14 } from "../../examples/nexmark/q14.ts";
import { q15 } from "../../examples/nexmark/q15.ts";
import { q16 } from "../../examples/nexmark/q16.ts";
import { q17 } from "../../examples/nexmark/q17.ts";
import { q18 } from "../../examples/nexmark/q18.ts";
import { q19 } from "../../examples/nexmark/q19.ts";
import { q20 } from "../../examples/nexmark/q20.ts";
import { q21 } from "../../examples/nexmark/q21.ts";
import { q22 } from "../../examples/nexmark/q22.ts";

const collected = <T>(name: string, query: (env: StreamExecutionEnvironment) => DataStream<T>): JobDefinition =>
  defineJob(`nexmark-${name}-test`, (env) => {
    query(env).sinkTo(collectSink<T>("out"));
  });

export const q0Job = collected("q0", q0);
export const q1Job = collected("q1", q1);
export const q2Job = collected("q2", q2);
export const q3Job = collected("q3", q3);
export const q4Job = collected("q4", q4);
export const q5Job = collected("q5", q5);
export const q7Job = collected("q7", q7);
export const q8Job = collected("q8", q8);
export const q9Job = collected("q9", q9);
export const q13Job = collected("q13", (env) => q13(env));
export const q11Job = collected("q11", q11);
export const q12Job = collected("q12", q12);
export const q14Job = collected("q14", q14);
export const q15Job = collected("q15", q15);
export const q16Job = collected("q16", q16);
export const q17Job = collected("q17", q17);
export const q18Job = collected("q18", q18);
export const q19Job = collected("q19", q19);
export const q20Job = collected("q20", q20);
export const q21Job = collected("q21", q21);
export const q22Job = collected("q22", q22);
