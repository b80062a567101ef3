/**
 * Partitioners decide which downstream subtask receives a record (Flink's StreamPartitioner).
 * A spec is what the graph records; `createChannelSelector` turns it into the per-subtask object
 * the record writer calls once per record.
 */
import { EddyError } from "../../core/errors.ts";
import { requireValidKey } from "../../core/key.ts";
import { checkParallelism, KeyGroupAssigner, operatorIndexOfKeyGroup } from "../../core/key-group.ts";
import type { AnyKeySelector } from "../operator.ts";

export type PartitionerSpec =
  /** Subtask i sends to subtask i. Needs equal parallelism; such edges are chained when possible. */
  | { readonly type: "forward" }
  /** Round-robin over all downstream subtasks. */
  | { readonly type: "rebalance" }
  /** Round-robin over a local subset of downstream subtasks (fewer connections than rebalance). */
  | { readonly type: "rescale" }
  /** Every record to every downstream subtask. */
  | { readonly type: "broadcast" }
  /** keyBy: to the subtask owning the key's key group. */
  | { readonly type: "key-group"; readonly keySelector: AnyKeySelector }
  /** A user function picks the partition from the key. */
  | {
      readonly type: "custom";
      readonly keySelector: AnyKeySelector;
      readonly partition: (key: never, numPartitions: number) => number;
    };

/** Picks the channel of a record. Returns BROADCAST for "every channel". Never called concurrently. */
export interface ChannelSelector {
  /** hot path */
  select(value: unknown): number;
  /**
   * Set by the key-group selector: the key group of the record `select` last saw, which the
   * record writer sends along so the keyed operator downstream does not hash the key again.
   */
  readonly keyGroup?: number;
  /**
   * Set by selectors that check each record (keyBy's key, a custom partitioner's result): they
   * run even when there is one channel, so bad input fails at every parallelism alike. Other
   * selectors are skipped when there is one channel.
   */
  readonly checksRecords?: true;
}

export const BROADCAST = -1;

export interface ChannelSelectorContext {
  readonly senderIndex: number;
  readonly senderParallelism: number;
  readonly receiverParallelism: number;
  readonly receiverMaxParallelism: number;
  /** Name of the receiving operator, for errors about keys. */
  readonly receiverName: string;
  /**
   * The receiver is a keyed operator whose error policy is not `fail` (docs/error-policy.md): a
   * record whose key cannot be computed (the key selector throws or returns an invalid key) is
   * not an error here but goes on to one receiver, whose own call of the key selector fails again
   * and hands it to its policy. Undefined: false.
   */
  readonly receiverHandlesBadKeys?: boolean;
}

export function createChannelSelector(spec: PartitionerSpec, ctx: ChannelSelectorContext): ChannelSelector {
  const n = ctx.receiverParallelism;
  switch (spec.type) {
    case "forward": {
      if (ctx.senderParallelism !== n) {
        throw new EddyError(
          "FORWARD_PARALLELISM_MISMATCH",
          `forward edge into '${ctx.receiverName}' needs equal parallelism (${ctx.senderParallelism} → ${n})`,
        );
      }
      const channel = ctx.senderIndex;
      return { select: () => channel };
    }
    case "rebalance":
      return roundRobin(range(0, n), ctx.senderIndex);
    case "rescale":
      return roundRobin(rescaleTargets(ctx.senderIndex, ctx.senderParallelism, n), 0);
    case "broadcast":
      return { select: () => BROADCAST };
    case "key-group":
      return keyGroupSelector(spec.keySelector, ctx);
    case "custom":
      return customSelector(spec.keySelector, spec.partition as (key: unknown, n: number) => number, ctx);
  }
}

function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i < to; i++) out.push(i);
  return out;
}

function roundRobin(targets: readonly number[], start: number): ChannelSelector {
  let next = start % targets.length;
  return {
    select(): number {
      const channel = targets[next]!;
      next = next + 1 === targets.length ? 0 : next + 1;
      return channel;
    },
  };
}

/**
 * Flink's rescale: when the receiver is wider, sender i feeds the receivers
 * [floor(i*n/p), floor((i+1)*n/p)); when narrower, sender i feeds receiver floor(i*n/p).
 */
export function rescaleTargets(senderIndex: number, senderParallelism: number, receiverParallelism: number): number[] {
  if (receiverParallelism >= senderParallelism) {
    const from = Math.floor((senderIndex * receiverParallelism) / senderParallelism);
    const to = Math.floor(((senderIndex + 1) * receiverParallelism) / senderParallelism);
    return range(from, Math.max(to, from + 1));
  }
  return [Math.floor((senderIndex * receiverParallelism) / senderParallelism)];
}

function keyGroupSelector(keySelector: AnyKeySelector, ctx: ChannelSelectorContext): ChannelSelector {
  const maxP = ctx.receiverMaxParallelism;
  const p = ctx.receiverParallelism;
  // Checked once here, so the per-record step needs no checks.
  checkParallelism(p, maxP);
  if (ctx.receiverHandlesBadKeys === true) return tolerantKeyGroupSelector(keySelector, ctx);
  if (p === 1) {
    // One receiver owns every key group: only the key's validity is left to check.
    return {
      checksRecords: true,
      select(value: unknown): number {
        requireValidKey(keySelector(value), ctx.receiverName);
        return 0;
      },
    };
  }
  const assigner = new KeyGroupAssigner(maxP);
  const selector: { keyGroup: number; checksRecords: true; select(value: unknown): number } = {
    keyGroup: -1,
    checksRecords: true,
    select(value: unknown): number {
      // hot path
      const key = requireValidKey(keySelector(value), ctx.receiverName);
      const keyGroup = assigner.keyGroupOf(key);
      this.keyGroup = keyGroup;
      return operatorIndexOfKeyGroup(maxP, p, keyGroup);
    },
  };
  return selector;
}

/**
 * keyGroupSelector for a receiver that handles bad keys itself: a record whose key cannot be
 * computed goes to receiver `senderIndex mod p` (so its dead letters keep the order of this
 * sender's records) with key group -1, which the receiver never uses (keyed-process-operator.ts).
 * A selector of its own, so the `try` stays off the path of receivers that fail on bad keys.
 */
function tolerantKeyGroupSelector(keySelector: AnyKeySelector, ctx: ChannelSelectorContext): ChannelSelector {
  const maxP = ctx.receiverMaxParallelism;
  const p = ctx.receiverParallelism;
  const assigner = new KeyGroupAssigner(maxP);
  const fallback = ctx.senderIndex % p;
  const selector: { keyGroup: number; checksRecords: true; select(value: unknown): number } = {
    keyGroup: -1,
    checksRecords: true,
    select(value: unknown): number {
      let keyGroup: number;
      try {
        keyGroup = assigner.keyGroupOf(requireValidKey(keySelector(value), ctx.receiverName));
      } catch {
        this.keyGroup = -1;
        return fallback;
      }
      this.keyGroup = keyGroup;
      return operatorIndexOfKeyGroup(maxP, p, keyGroup);
    },
  };
  return selector;
}

function customSelector(
  keySelector: AnyKeySelector,
  partition: (key: unknown, n: number) => number,
  ctx: ChannelSelectorContext,
): ChannelSelector {
  const n = ctx.receiverParallelism;
  return {
    checksRecords: true,
    select(value: unknown): number {
      const key = keySelector(value);
      const channel = partition(key, n);
      if (!Number.isInteger(channel) || channel < 0 || channel >= n) {
        throw new EddyError(
          "INVALID_PARTITION",
          `custom partitioner before '${ctx.receiverName}' returned ${channel}; expected an integer in [0, ${n})`,
          { operator: ctx.receiverName },
        );
      }
      return channel;
    },
  };
}
