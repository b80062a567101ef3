/**
 * Compiles transformations into the physical plan: operators with resolved parallelism and ids,
 * edges with partitioners, and chains (operators fused into one task). Pure and deterministic:
 * every worker compiling the same job gets the same plan (docs/design/architecture.md,
 * "A job is a module").
 */
import { EddyError } from "../core/errors.ts";
import { checkParallelism, defaultMaxParallelism } from "../core/key-group.ts";
import type { Logger } from "../core/logger.ts";
import { DEAD_LETTERS } from "../core/error-policy.ts";
import type { PartitionerSpec } from "../runtime/channels/partitioner.ts";
import type { AnyKeySelector } from "../runtime/operator.ts";
import { isPhysical, type PhysicalTransformation, type Transformation } from "./transformation.ts";

export interface PlanEdge {
  readonly source: PlanNode;
  readonly target: PlanNode;
  /** 0 for one-input operators; 0 or 1 for two-input operators. */
  readonly inputIndex: 0 | 1;
  readonly partitioner: PartitionerSpec;
  /** Side output tag id, or undefined for the main output. */
  readonly sideTag: string | undefined;
  /** Whether source and target run in one task with direct calls. */
  readonly chained: boolean;
}

export interface PlanNode {
  readonly transformation: PhysicalTransformation;
  readonly name: string;
  /**
   * What its counters are registered under (and the run summary says): the name, or for the
   * second, third, … operator of the plan with that name, "name (2)", "name (3)", …, so that
   * same-named operators (two unnamed print() sinks) are not counted as one. Unique in the plan.
   */
  readonly metricName: string;
  /** Stable id: the uid, or one derived from the position in the graph. */
  readonly operatorId: string;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly keySelectors: readonly (AnyKeySelector | undefined)[] | undefined;
  readonly inputs: PlanEdge[];
  readonly outputs: PlanEdge[];
}

/** Operators that run as one task: `nodes[0]` is the head, the rest are chained behind it. */
export interface PlanChain {
  readonly index: number;
  readonly nodes: readonly PlanNode[];
  readonly parallelism: number;
  readonly name: string;
}

export interface Plan {
  readonly jobName: string;
  /** In topological order. */
  readonly nodes: readonly PlanNode[];
  readonly chains: readonly PlanChain[];
}

export interface PlanOptions {
  readonly jobName: string;
  readonly parallelism: number;
  readonly maxParallelism: number | undefined;
  /**
   * Max parallelism per operator id recorded by the savepoint or checkpoint the job restores:
   * an operator whose max parallelism is not set keeps the one its state was written with
   * (keyed state is stored per key group, so it could not restore with another).
   */
  readonly restoredMaxParallelism?: Readonly<Record<string, number>> | undefined;
  readonly logger: Logger;
}

/**
 * Whether `source` and `target` run in one task, for an edge that is the target's only input.
 * Only a one-input target can be chained. A forward edge always is (equal parallelism is checked
 * before). So is a keyBy edge from one subtask to a keyed operator of one subtask: the one
 * receiver owns every key group, and a keyed operator selects and checks the key itself. (Flink
 * keeps such an edge; here it would cost batching every record and a second task.) Every other
 * edge is a task boundary: a keyBy into an operator that is not keyed (its partitioner is what
 * checks the key), rebalance, rescale, broadcast and custom partitioners.
 */
function chainable(partitioner: PartitionerSpec, source: PlanNode, target: PlanNode): boolean {
  const t = target.transformation;
  if (t.kind !== "one-input") return false;
  if (partitioner.type === "forward") return true;
  return partitioner.type === "key-group" && source.parallelism === 1 && target.parallelism === 1 && t.keySelector !== undefined;
}

interface ResolvedInput {
  readonly node: PhysicalTransformation;
  readonly partitioner: PartitionerSpec | undefined;
  readonly sideTag: string | undefined;
}

function resolveInputs(t: Transformation): ResolvedInput[] {
  switch (t.kind) {
    case "source":
    case "one-input":
    case "two-input":
      return [{ node: t, partitioner: undefined, sideTag: undefined }];
    case "partition":
      return resolveInputs(t.input).map((r) => ({ ...r, partitioner: t.partitioner }));
    case "union":
      return t.inputs.flatMap(resolveInputs);
    case "side-output":
      return resolveInputs(t.input).map((r) => ({ ...r, sideTag: t.tag.id }));
  }
}

/**
 * Dead letters nothing reads are dropped (a side output without consumers), counted but nowhere
 * to inspect: most likely a forgotten `deadLetters()`, so say so. (For the stream fromSource
 * returns, the source and its timestamp assigner share the policy; either one's consumer counts.)
 */
function warnIfDeadLettersUnread(node: PlanNode, nodes: ReadonlyMap<PhysicalTransformation, PlanNode>, logger: Logger): void {
  const t = node.transformation;
  if (t.errorPolicy?.policy !== "dead-letter" || t.ofSource !== undefined) return;
  const read = (n: PlanNode | undefined): boolean => n !== undefined && n.outputs.some((e) => e.sideTag === DEAD_LETTERS.id);
  const timed = t.kind === "source" ? [...nodes.values()].find((n) => n.transformation.ofSource === t) : undefined;
  if (read(node) || read(timed)) return;
  logger.warn('operator has the "dead-letter" error policy but nothing reads its dead letters (stream.deadLetters()); they are counted and dropped', {
    operator: node.name,
  });
}

function slug(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "operator";
}

/** The user's uid, or an id derived from the name and the creation order. */
function derivedOperatorId(t: PhysicalTransformation): string {
  return t.uid ?? `${slug(t.name)}-${t.id}`;
}

export function compilePlan(transformations: readonly Transformation[], options: PlanOptions): Plan {
  const physical = transformations.filter(isPhysical).sort((a, b) => a.id - b.id);
  const nodes = new Map<PhysicalTransformation, PlanNode>();
  const uids = new Set<string>();
  /** Operators so far per name (metricName). */
  const named = new Map<string, number>();

  for (const t of physical) {
    let parallelism = t.parallelism ?? options.parallelism;
    if (t.kind === "source" && t.source.maxParallelism !== undefined) {
      if (t.parallelism !== undefined && t.parallelism > t.source.maxParallelism) {
        throw new EddyError(
          "SOURCE_PARALLELISM",
          `source '${t.name}' supports parallelism ≤ ${t.source.maxParallelism}, got ${t.parallelism}`,
        );
      }
      parallelism = Math.min(parallelism, t.source.maxParallelism);
    }
    // fromSource's timestamps and watermarks run where its source runs, chained to it (Flink
    // generates them inside the source operator): at the job's parallelism over a source of
    // fewer subtasks, a hidden round-robin edge would come between them and lose per-key order.
    if (t.ofSource !== undefined) parallelism = nodes.get(t.ofSource)!.parallelism;
    // An operator the API inserted (local window aggregation) runs where its input runs.
    const inserted = t.kind === "one-input" ? t.insertedFor : undefined;
    if (inserted !== undefined && t.kind === "one-input" && isPhysical(t.input)) parallelism = nodes.get(t.input)!.parallelism;
    const operatorId = inserted !== undefined ? `${derivedOperatorId(inserted)}-local` : derivedOperatorId(t);
    const restored = options.restoredMaxParallelism;
    const maxParallelism =
      t.maxParallelism ??
      options.maxParallelism ??
      (restored !== undefined && Object.hasOwn(restored, operatorId) ? restored[operatorId] : undefined) ??
      defaultMaxParallelism(parallelism);
    try {
      checkParallelism(parallelism, maxParallelism);
    } catch (e) {
      throw new EddyError("INVALID_PARALLELISM", `operator '${t.name}': ${(e as Error).message}`);
    }
    if (t.uid !== undefined) {
      if (uids.has(t.uid)) throw new EddyError("DUPLICATE_UID", `uid '${t.uid}' is used by more than one operator`);
      uids.add(t.uid);
    } else if (t.stateful) {
      options.logger.warn("stateful operator has no uid; savepoints match state by uid, so set one with .uid(...)", {
        operator: t.name,
      });
    }
    const keySelectors =
      t.kind === "one-input" ? (t.keySelector === undefined ? undefined : [t.keySelector]) : t.kind === "two-input" ? t.keySelectors : undefined;
    const sameName = (named.get(t.name) ?? 0) + 1;
    named.set(t.name, sameName);
    nodes.set(t, {
      transformation: t,
      name: t.name,
      metricName: sameName === 1 ? t.name : `${t.name} (${sameName})`,
      operatorId,
      parallelism,
      maxParallelism,
      keySelectors,
      inputs: [],
      outputs: [],
    });
  }

  for (const t of physical) {
    const target = nodes.get(t)!;
    const inputLists: (readonly Transformation[])[] =
      t.kind === "source" ? [] : t.kind === "one-input" ? [[t.input]] : [[t.input1], [t.input2]];
    const resolved = inputLists.map((list, inputIndex) => list.flatMap(resolveInputs).map((r) => ({ ...r, inputIndex })));
    const all = resolved.flat();
    for (const r of all) {
      const source = nodes.get(r.node)!;
      const partitioner: PartitionerSpec =
        r.partitioner ?? (source.parallelism === target.parallelism ? { type: "forward" } : { type: "rebalance" });
      if (partitioner.type === "forward" && source.parallelism !== target.parallelism) {
        throw new EddyError(
          "FORWARD_PARALLELISM_MISMATCH",
          `forward edge '${source.name}' → '${target.name}' needs equal parallelism (${source.parallelism} vs ${target.parallelism})`,
        );
      }
      const chained = all.length === 1 && chainable(partitioner, source, target);
      const edge: PlanEdge = {
        source,
        target,
        inputIndex: r.inputIndex as 0 | 1,
        partitioner,
        sideTag: r.sideTag,
        chained,
      };
      source.outputs.push(edge);
      target.inputs.push(edge);
    }
  }

  for (const node of nodes.values()) warnIfDeadLettersUnread(node, nodes, options.logger);

  const ordered = physical.map((t) => nodes.get(t)!);
  const chains: PlanChain[] = [];
  for (const node of ordered) {
    const isHead = !(node.inputs.length === 1 && node.inputs[0]!.chained);
    if (!isHead) continue;
    const members: PlanNode[] = [];
    const visit = (n: PlanNode): void => {
      members.push(n);
      for (const e of n.outputs) if (e.chained) visit(e.target);
    };
    visit(node);
    members.sort((a, b) => a.transformation.id - b.transformation.id);
    chains.push({
      index: chains.length,
      nodes: members,
      parallelism: node.parallelism,
      name: members.map((m) => m.name).join(" -> "),
    });
  }
  return { jobName: options.jobName, nodes: ordered, chains };
}
