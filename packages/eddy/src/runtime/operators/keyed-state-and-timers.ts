/**
 * What every keyed operator needs, as Flink's keyed operators get it from their state context:
 * the keyed state backend (scoped to the current key; KeyedStateBackend, chosen per job) and the
 * internal timer service, plus the per-record step that extracts, validates and sets the key. One
 * instance per operator subtask.
 */
import type { ScheduledCallback } from "../../core/clock.ts";
import type { ByteWriter } from "../../core/codec/bytes.ts";
import { EddyError } from "../../core/errors.ts";
import { describeKey, requireValidKey, type Key } from "../../core/key.ts";
import { computeOperatorIndexForKeyGroup, KeyGroupAssigner } from "../../core/key-group.ts";
import type { KeyedSnapshotOptions, KeyedStateBackend } from "../../state/keyed-state-backend.ts";
import { VOID_NAMESPACE, type Namespace } from "../../state/namespace.ts";
import type { KeyedStateStore, TimerService } from "../functions.ts";
import type { AnyKeySelector, OperatorContext } from "../operator.ts";
import { CopyNoneCheck } from "./copy-none-check.ts";
import { InternalTimerService, readTimers, type RestoredTimer } from "../timer-service.ts";
import type { KeyedSnapshotPart, RestoredKeyed } from "../checkpointing.ts";

export type TimerDomain = "event" | "processing";
export type OnTimer = (domain: TimerDomain, timestamp: number, key: Key, keyGroup: number, namespace: string | number) => void;

/** Processing time between two background TTL cleanup steps (StateTtlCleanup.background). */
export const TTL_BACKGROUND_CLEANUP_INTERVAL_MS = 1_000;
/** Keys of each state examined per background cleanup step: bounded work between records. */
export const TTL_BACKGROUND_CLEANUP_KEYS = 1_000;

export class KeyedStateAndTimers {
  readonly backend: KeyedStateBackend;
  readonly timers: InternalTimerService;
  /** User-facing timer service bound to the current key and the void namespace. */
  readonly timerService: TimerService;
  /** User-facing keyed state access (handles follow the current key). */
  readonly stateStore: KeyedStateStore;
  readonly #ctx: OperatorContext;
  readonly #keyGroups: KeyGroupAssigner;
  /** The next background TTL cleanup step, once a state asks for it; undefined after close. */
  #backgroundCleanup: ScheduledCallback | undefined;
  /** `state.verify-copy-none`: the check of the user's `copy: "none"` states, when on. */
  readonly #copyNone: CopyNoneCheck | undefined;
  #endedInputs = 0;
  #closed = false;

  constructor(ctx: OperatorContext, onTimer: OnTimer) {
    this.#ctx = ctx;
    this.#keyGroups = new KeyGroupAssigner(ctx.maxParallelism);
    this.backend = ctx.stateBackend({
      keyGroupRange: ctx.keyGroupRange,
      clock: ctx.clock,
      operatorName: ctx.operatorName,
      onQueryable: (queryableName, stateName) =>
        ctx.queryable?.register(queryableName, {
          operatorId: ctx.operatorId,
          operatorName: ctx.operatorName,
          subtask: ctx.subtaskIndex,
          parallelism: ctx.parallelism,
          maxParallelism: ctx.maxParallelism,
          keyGroupRange: ctx.keyGroupRange,
          read: (key, keyGroup) => this.backend.getValueForKey(stateName, key, keyGroup),
        }),
      onBackgroundCleanup: () => this.#scheduleBackgroundCleanup(),
      scope: { job: ctx.job.jobName, operatorId: ctx.operatorId, subtaskIndex: ctx.subtaskIndex },
    });
    this.timers = new InternalTimerService({
      clock: ctx.clock,
      keyGroupRange: ctx.keyGroupRange,
      postMail: (action) => ctx.postMail(action),
      onTimer: (domain, timestamp, key, keyGroup, namespace) => {
        this.backend.setCurrentKey(key, keyGroup);
        onTimer(domain, timestamp, key, keyGroup, namespace);
      },
    });
    const backend = this.backend;
    const timers = this.timers;
    const checkTime = (timestamp: number, what: string): void => {
      if (typeof timestamp !== "number" || Number.isNaN(timestamp)) {
        throw new EddyError("INVALID_TIMER", `${what} needs a timestamp in ms, got ${String(timestamp)}`);
      }
    };
    this.timerService = {
      currentProcessingTime: () => ctx.clock.now(),
      currentWatermark: () => timers.currentWatermark,
      registerEventTimeTimer(timestamp) {
        checkTime(timestamp, "registerEventTimeTimer");
        timers.registerEventTimeTimer(backend.getCurrentKey(), backend.getCurrentKeyGroup(), VOID_NAMESPACE, timestamp);
      },
      registerProcessingTimeTimer(timestamp) {
        checkTime(timestamp, "registerProcessingTimeTimer");
        timers.registerProcessingTimeTimer(backend.getCurrentKey(), backend.getCurrentKeyGroup(), VOID_NAMESPACE, timestamp);
      },
      deleteEventTimeTimer(timestamp) {
        timers.deleteEventTimeTimer(backend.getCurrentKey(), backend.getCurrentKeyGroup(), VOID_NAMESPACE, timestamp);
      },
      deleteProcessingTimeTimer(timestamp) {
        timers.deleteProcessingTimeTimer(backend.getCurrentKey(), backend.getCurrentKeyGroup(), VOID_NAMESPACE, timestamp);
      },
    };
    const checkpointing = ctx.checkpointing;
    if (checkpointing !== undefined) {
      checkpointing.setKeyed((options) => this.#snapshot(options));
      const backend = this.backend;
      if (backend.notifyCheckpointComplete !== undefined) checkpointing.addListener({ notifyCheckpointComplete: (id) => backend.notifyCheckpointComplete!(id) });
      const restored = checkpointing.restored?.keyed;
      if (restored !== undefined) this.#restore(restored);
    }
    const store: KeyedStateStore = {
      getState: (d) => backend.getState(d),
      getListState: (d) => backend.getListState(d),
      getMapState: (d) => backend.getMapState(d),
      getReducingState: (d) => backend.getReducingState(d),
      getAggregatingState: (d) => backend.getAggregatingState(d),
    };
    if (ctx.verifyCopyNone === true) {
      this.#copyNone = new CopyNoneCheck(ctx.operatorName, ctx.subtaskIndex, () => backend.getCurrentKey());
      this.stateStore = this.#copyNone.wrap(store);
    } else {
      this.stateStore = store;
    }
  }

  /**
   * `store` as user functions get it: with `state.verify-copy-none`, its `copy: "none"` states
   * checked in the namespace `namespace()` says (a process window function's window state).
   */
  checked(store: KeyedStateStore, namespace: () => Namespace): KeyedStateStore {
    return this.#copyNone?.wrap(store, namespace) ?? store;
  }

  /**
   * The end of one of the operator's `inputs` inputs. After the last: fails with
   * STATE_MUTATED_IN_PLACE when a `copy: "none"` value was changed in place and not written back
   * (`state.verify-copy-none`; nothing when that is off).
   */
  endInput(inputs: 1 | 2): void {
    if (++this.#endedInputs === inputs) this.#copyNone?.verifyAll("end of input");
  }

  /**
   * hot path: sets the current key from a record, validating what the key selector returned.
   * `keyGroup` comes from the partitioner that routed the record (the same key selector and max
   * parallelism), which saves hashing the key twice; it is computed here when absent (a chained
   * or forward input, as after reinterpretAsKeyedStream), and checked to be this subtask's.
   */
  setKeyFromRecord(keySelector: AnyKeySelector, value: unknown, keyGroup: number | undefined): void {
    // keyOf's body written out: one call level less inside the record loops of handle-based
    // operators (~1.5 % fewer instructions per record in a keyed process function's loop).
    const selected = keySelector(value);
    if (keyGroup === undefined && typeof selected !== "number") {
      // A string or composite key the backend resolved recently (its row): valid, and its key
      // group known; validating and hashing it again was ~4 % of q16's CPU.
      const known = this.backend.knownKeyGroup(selected);
      if (known >= 0) {
        this.backend.setCurrentKey(selected as Key, known);
        return;
      }
    }
    const key = requireValidKey(selected, this.#ctx.operatorName);
    this.backend.setCurrentKey(key, keyGroup ?? this.keyGroupOf(key));
  }

  /** hot path: the key of a record, validated (an INVALID_KEY error names the operator). */
  keyOf(keySelector: AnyKeySelector, value: unknown): Key {
    return requireValidKey(keySelector(value), this.#ctx.operatorName);
  }

  /**
   * hot path: the key group of a valid key, for records the partitioner did not compute it for
   * (chained or forward inputs). Such a record may come from a stream reinterpreted as keyed
   * whose input was not partitioned by the key after all: a key of another subtask's key group
   * fails with KEY_NOT_IN_SUBTASK instead of reaching state or timers it does not own.
   */
  keyGroupOf(key: Key): number {
    const keyGroup = this.#keyGroups.keyGroupOf(key);
    const range = this.#ctx.keyGroupRange;
    if (keyGroup < range.start || keyGroup > range.end) throw this.#notInSubtask(key, keyGroup);
    return keyGroup;
  }

  #notInSubtask(key: Key, keyGroup: number): EddyError {
    const ctx = this.#ctx;
    const owner = computeOperatorIndexForKeyGroup(ctx.maxParallelism, ctx.parallelism, keyGroup);
    return new EddyError(
      "KEY_NOT_IN_SUBTASK",
      `operator '${ctx.operatorName}' subtask ${ctx.subtaskIndex} got a record with key ${describeKey(key)} of key group ${keyGroup}, ` +
        `which subtask ${owner} owns (this one owns key groups ${ctx.keyGroupRange.start}-${ctx.keyGroupRange.end} of ${ctx.maxParallelism}): ` +
        `its input is not partitioned by this key (reinterpretAsKeyedStream needs input partitioned exactly as keyBy would, with the same max parallelism)`,
      { operator: ctx.operatorName, subtask: ctx.subtaskIndex },
    );
  }

  /** Keys holding any state of the operator, and its pending timers (leak tests: both reach 0). */
  stateSize(): { keys: number; timers: number } {
    let keys = 0;
    for (const name of this.backend.stateNames()) keys += this.backend.numKeys(name);
    return { keys, timers: this.timers.numEventTimeTimers() + this.timers.numProcessingTimeTimers() };
  }

  /**
   * The synchronous part of a checkpoint: keyed state (copy-on-write) and timers. Incremental
   * (the backend gave a `shared` part): the state and the timers both go to the shared file —
   * in a base every timer, in a delta the keys whose timers changed since the previous
   * incremental snapshot (which the timer service hands over here) — and the task file has no
   * key-group sections. A failed snapshot makes the backend's next one a base, timers included.
   */
  #snapshot(options: KeyedSnapshotOptions): KeyedSnapshotPart {
    this.#copyNone?.verifyAll("checkpoint");
    const state = this.backend.snapshot(options);
    const shared = state.shared;
    const timers = this.timers.snapshotTimers(shared !== undefined);
    const part: KeyedSnapshotPart = {
      keyGroupRange: this.backend.keyGroupRange,
      states: state.states,
      watermark: timers.watermark,
      hasKeyGroup: (kg) => shared === undefined && (state.hasKeyGroup(kg) || timers.hasKeyGroup(kg)),
      writeKeyGroup: (kg, out) => {
        state.writeKeyGroup(kg, out);
        timers.writeKeyGroup(kg, out);
      },
      releaseKeyGroup: (kg) => state.releaseKeyGroup(kg),
      release: () => state.release(),
    };
    if (shared === undefined) return part;
    const writeSharedTimers =
      shared.kind === "base"
        ? (kg: number, out: ByteWriter): boolean => {
            if (!timers.hasKeyGroup(kg)) return false;
            timers.writeKeyGroup(kg, out);
            return true;
          }
        : (kg: number, out: ByteWriter): boolean => timers.writeKeyGroupChanges(kg, out);
    return { ...part, shared, writeSharedTimers };
  }

  #restore(restored: RestoredKeyed): void {
    const { start, end } = this.backend.keyGroupRange;
    const timers: RestoredTimer[] = [];
    const local = restored.local;
    const outcome = local === undefined ? undefined : this.backend.restoreLocally?.(local.checkpointId, local.chain, restored.states);
    if (outcome !== undefined) {
      const fields = { operator: this.#ctx.operatorName, subtask: this.#ctx.subtaskIndex, checkpointId: local!.checkpointId, ms: Math.round(outcome.ms) };
      if (outcome.used) this.#ctx.logger.info("keyed state restored from the local store", { ...fields, read: outcome.read, written: outcome.records });
      else this.#ctx.logger.info(`keyed state restored from the checkpoint's files: ${outcome.reason ?? "local recovery not possible"}`, fields);
    }
    if (local !== undefined && outcome?.used === true) {
      // The state is back from what the backend kept here; the timers come from the checkpoint.
      for (let kg = start; kg <= end; kg++) {
        const input = local.timers(kg);
        if (input !== undefined) readTimers(kg, input, timers);
      }
      this.timers.restoreWatermark(restored.watermark);
      this.timers.restoreTimers(timers);
      return;
    }
    for (let kg = start; kg <= end; kg++) {
      if (restored.keyGroupCells !== undefined) {
        const group = restored.keyGroupCells(kg);
        if (group === undefined) continue;
        if (group.cells !== undefined) this.backend.restoreKeyGroupCells(kg, group.cells, restored.states);
        readTimers(kg, group.rest, timers);
        continue;
      }
      const input = restored.keyGroup(kg);
      if (input === undefined) continue;
      this.backend.restoreKeyGroup(kg, input, restored.states);
      readTimers(kg, input, timers);
    }
    this.timers.restoreWatermark(restored.watermark);
    this.timers.restoreTimers(timers);
  }

  get currentWatermark(): number {
    return this.timers.currentWatermark;
  }

  /**
   * Background TTL cleanup: every TTL_BACKGROUND_CLEANUP_INTERVAL_MS of processing time, a bounded
   * step between records (the mailbox), as Flink's heap backend cleans up in background.
   */
  #scheduleBackgroundCleanup(): void {
    if (this.#closed) return;
    const clock = this.#ctx.clock;
    this.#backgroundCleanup = clock.schedule(clock.now() + TTL_BACKGROUND_CLEANUP_INTERVAL_MS, () =>
      this.#ctx.postMail(() => {
        if (this.#closed) return;
        this.backend.cleanupExpired(TTL_BACKGROUND_CLEANUP_KEYS);
        this.#scheduleBackgroundCleanup();
      }),
    );
  }

  close(): void {
    this.#closed = true;
    this.#backgroundCleanup?.cancel();
    this.#backgroundCleanup = undefined;
    this.timers.close();
    this.backend.dispose?.();
  }
}

/** The key selector of keyed input `index`, or a config error naming the operator. */
export function requireKeySelector(ctx: OperatorContext, index: number): AnyKeySelector {
  const selector = ctx.keySelectors?.[index];
  if (selector === undefined) {
    throw new EddyError("NOT_KEYED", `operator '${ctx.operatorName}' needs a keyed input (use keyBy first)`);
  }
  return selector;
}

/**
 * The timer service of a non-keyed process function (or of a broadcast function's broadcast side,
 * which has no current key): time queries only. `why` ends the error message of a registration.
 */
export function nonKeyedTimerService(
  ctx: OperatorContext,
  currentWatermark: () => number,
  why = `timers are only available on keyed streams (operator '${ctx.operatorName}'); use keyBy(...).process(...)`,
): TimerService {
  const fail = (): never => {
    throw new EddyError("TIMERS_NEED_KEYED_STREAM", why);
  };
  return {
    currentProcessingTime: () => ctx.clock.now(),
    currentWatermark,
    registerEventTimeTimer: fail,
    registerProcessingTimeTimer: fail,
    deleteEventTimeTimer: fail,
    deleteProcessingTimeTimer: fail,
  };
}

