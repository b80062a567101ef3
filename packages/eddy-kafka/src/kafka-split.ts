/**
 * A KafkaSource split: one partition of one topic, and where the reader is in it (Flink's
 * KafkaPartitionSplit). Offsets are resolved before a split is assigned (earliest, latest,
 * committed, by timestamp or explicit), so a split in a checkpoint holds numbers only.
 */
import { EddyError } from "eddy";

export interface KafkaSplit {
  readonly v: 1;
  /** `<topic>-<partition>`. */
  readonly splitId: string;
  readonly topic: string;
  readonly partition: number;
  /** The offset of the next record to emit. */
  readonly next: number;
  /** Bounded: the offset to stop before (the end of the partition when the job started); -1: unbounded. */
  readonly stop: number;
}

export const splitIdOf = (topic: string, partition: number): string => `${topic}-${partition}`;

const isNat = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/** A split as read from a checkpoint, checked. */
export function readKafkaSplit(x: unknown): KafkaSplit {
  const s = x as Partial<KafkaSplit> | null;
  if (s === null || typeof s !== "object" || s.v !== 1 || typeof s.topic !== "string" || !isNat(s.partition) || !isNat(s.next) || !(s.stop === -1 || isNat(s.stop))) {
    throw new EddyError("KAFKA_SOURCE_FAILED", `KafkaSource: a split in the restored checkpoint is not valid (${JSON.stringify(x)?.slice(0, 200)})`);
  }
  return { v: 1, splitId: splitIdOf(s.topic, s.partition), topic: s.topic, partition: s.partition, next: s.next, stop: s.stop };
}

/** Which reader owns a partition (Flink's KafkaSourceEnumerator.getSplitOwner): spread by topic, then round robin by partition. */
export function ownerOf(topic: string, partition: number, parallelism: number): number {
  let h = 0;
  for (let i = 0; i < topic.length; i++) h = (Math.imul(31, h) + topic.charCodeAt(i)) | 0;
  const start = (Math.imul(h, 31) & 0x7fffffff) % parallelism;
  return (start + partition) % parallelism;
}
