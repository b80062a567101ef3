/**
 * Transformations: the logical graph the DataStream API builds. Physical ones become operators;
 * virtual ones (partition, union, side output) only shape the edges between them. Mutable while
 * the job function runs (`.uid()`, `.name()`, `.setParallelism()` set fields); `compilePlan`
 * reads them once and never changes them.
 */
import type { BatchCodec } from "../core/codec/codec.ts";
import type { ErrorPolicySpec } from "../core/error-policy.ts";
import type { OutputTag } from "../core/output-tag.ts";
import type { Source } from "../connector/source.ts";
import type { PartitionerSpec } from "../runtime/channels/partitioner.ts";
import type { AnyKeySelector, OneInputOperator, OperatorContext, Output, TwoInputOperator } from "../runtime/operator.ts";

export type OneInputFactory = (ctx: OperatorContext, output: Output<unknown>) => OneInputOperator<unknown>;
export type TwoInputFactory = (ctx: OperatorContext, output: Output<unknown>) => TwoInputOperator<unknown, unknown>;

interface PhysicalBase {
  /** Creation order; inputs always have smaller ids, so id order is a topological order. */
  readonly id: number;
  name: string;
  uid: string | undefined;
  /** Explicit parallelism, or undefined for the job default. */
  parallelism: number | undefined;
  maxParallelism: number | undefined;
  /** How this operator's output records are encoded when they cross threads (default: defaultCodec). */
  codec: BatchCodec | undefined;
  /**
   * The operator's error policy (`.onError(...)`; core/error-policy.ts). Undefined: the operator
   * has no per-record user call a policy applies to (a window, a join), and onError refuses it;
   * operators that apply one start with FAIL_POLICY. A sink's applies to the records its service
   * refuses (SinkContext.reportBadRecord); undefined there means `fail`.
   */
  errorPolicy?: ErrorPolicySpec;
  /** Whether the operator keeps state (it then should have a uid for savepoints). */
  readonly stateful: boolean;
  /**
   * The source this operator belongs to, for the timestamps/watermarks operator that `fromSource`
   * puts after it: `.uid(id)` on the stream `fromSource` returns names the source (which holds the
   * split positions) `id`, and this operator `${id}-watermarks`.
   */
  readonly ofSource?: SourceTransformation;
}

export interface SourceTransformation extends PhysicalBase {
  readonly kind: "source";
  readonly source: Source<unknown, unknown>;
}

export interface OneInputTransformation extends PhysicalBase {
  readonly kind: "one-input";
  readonly input: Transformation;
  readonly factory: OneInputFactory;
  /** The key selector when the input is a keyed stream. */
  readonly keySelector: AnyKeySelector | undefined;
  readonly isSink: boolean;
  /**
   * An operator the API inserted in front of `insertedFor` (local window aggregation): it runs at
   * its input's parallelism (so it chains to it) and its operator id is `insertedFor`'s plus
   * "-local". Such operators keep no state.
   */
  insertedFor?: PhysicalTransformation;
}

export interface TwoInputTransformation extends PhysicalBase {
  readonly kind: "two-input";
  readonly input1: Transformation;
  readonly input2: Transformation;
  readonly factory: TwoInputFactory;
  /** Key selectors of keyed inputs; the second is undefined for a broadcast input (keyed.connect(broadcastStream)). */
  readonly keySelectors: readonly [AnyKeySelector, AnyKeySelector | undefined] | undefined;
}

export interface PartitionTransformation {
  readonly kind: "partition";
  readonly id: number;
  readonly input: Transformation;
  readonly partitioner: PartitionerSpec;
}

export interface UnionTransformation {
  readonly kind: "union";
  readonly id: number;
  readonly inputs: readonly Transformation[];
}

export interface SideOutputTransformation {
  readonly kind: "side-output";
  readonly id: number;
  readonly input: Transformation;
  readonly tag: OutputTag<unknown>;
}

export type PhysicalTransformation = SourceTransformation | OneInputTransformation | TwoInputTransformation;
export type Transformation = PhysicalTransformation | PartitionTransformation | UnionTransformation | SideOutputTransformation;

export function isPhysical(t: Transformation): t is PhysicalTransformation {
  return t.kind === "source" || t.kind === "one-input" || t.kind === "two-input";
}
