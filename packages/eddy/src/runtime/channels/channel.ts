/**
 * The two ends of a channel between tasks, whatever carries it: a queue on the same thread
 * (local-channel.ts) or shared memory between threads (remote-channel.ts). A task reads its
 * inputs and writes its outputs through these only. Neither end is called concurrently.
 */
import type { StreamElement } from "../../core/elements.ts";

/** InputChannel.headSeq of a channel whose next element is not a records batch (a `seq` is a uint32). */
export const CONTROL_AT_HEAD = -1;

export interface InputChannel {
  /** Next element, or undefined when none is queued. Never blocks. */
  poll(): StreamElement | undefined;
  /** Whether `poll` would return an element. */
  readonly hasData: boolean;
  /**
   * The `seq` of the element `poll` would return when that is a records batch with one;
   * CONTROL_AT_HEAD when it is another element (a watermark, status or barrier, which may hide a
   * batch behind it); undefined when nothing is queued (or the batch has no `seq`). Called only
   * between elements: the element polled last has been handled.
   */
  headSeq(): number | undefined;
  /** Encoded bytes received so far (channels that cross threads). */
  readonly bytesIn?: number;
  /**
   * A channel from another thread whose transport is at least half full: that thread's task
   * waits for this one, or soon will (the executor's source yield). Undefined on a thread's own
   * channels.
   */
  readonly backlogged?: boolean;
}

export interface OutputChannel {
  /** Appends an element. Callers check `isWritable` before producing more records. */
  push(element: StreamElement): void;
  /** Whether the receiver has credit for more records. */
  readonly isWritable: boolean;
  /** Encoded bytes sent so far (channels that cross threads). */
  readonly bytesOut?: number;
  /**
   * True when `push` is done with a records element's arrays once it returns (it encoded them):
   * the writer may fill them again. Otherwise the element is queued as it is.
   */
  readonly consumesOnPush?: boolean;
}
