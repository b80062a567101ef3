/**
 * Evaluating a fired window with the user's window function, shared by the general window operator
 * and the pane operator: the function's lifecycle (one instance per subtask, open/close), the
 * three shapes it may take (none: emit the pre-aggregated value; a plain function; a
 * ProcessWindowFunction with its context), and the output timestamp (the window's last
 * millisecond). User failures are reported with the operator's name.
 */
import { EddyError, userFunctionError } from "../../core/errors.ts";
import type { Key } from "../../core/key.ts";
import { requireOutputTag, type OutputTag } from "../../core/output-tag.ts";
import type { KeyedStateBackend } from "../../state/keyed-state-backend.ts";
import type { Namespace } from "../../state/namespace.ts";
import { VOID_NAMESPACE } from "../../state/namespace.ts";
import type { InternalKvState } from "../../state/internal-state.ts";
import type { KeyedStateStore } from "../functions.ts";
import type { OperatorContext, Output } from "../operator.ts";
import { perSubtaskInstance } from "../operators/function-instance.ts";
import type { KeyedStateAndTimers } from "../operators/keyed-state-and-timers.ts";
import { callUser, runtimeContextOf } from "../operators/process-operator.ts";
import { TimestampedCollector } from "../operators/timestamped-collector.ts";
import type { AnyWindowFunction, ProcessWindowContext, ProcessWindowFunction, WindowFunction } from "./window-functions.ts";
import type { Window } from "./windows.ts";

/** Keyed state handles of the current key, scoped to `namespace()` on every access. */
export function scopedStore(backend: KeyedStateBackend, namespace: () => Namespace): KeyedStateStore {
  const scoped = <S extends InternalKvState>(state: S): S => {
    state.setCurrentNamespace(namespace());
    return state;
  };
  return {
    getState: (d) => scoped(backend.getState(d)),
    getListState: (d) => scoped(backend.getListState(d)),
    getMapState: (d) => scoped(backend.getMapState(d)),
    getReducingState: (d) => scoped(backend.getReducingState(d)),
    getAggregatingState: (d) => scoped(backend.getAggregatingState(d)),
  };
}

class WindowProcessContext<W extends Window> implements ProcessWindowContext<W> {
  window!: W;
  readonly #keyed: KeyedStateAndTimers;
  readonly #output: Output<unknown>;
  readonly #windowState: KeyedStateStore | undefined;
  readonly #globalState: KeyedStateStore;

  constructor(keyed: KeyedStateAndTimers, output: Output<unknown>, windowNamespace: ((window: W) => Namespace) | undefined) {
    this.#keyed = keyed;
    this.#output = output;
    const inWindow = (): Namespace => windowNamespace!(this.window);
    const global = (): Namespace => VOID_NAMESPACE;
    this.#windowState = windowNamespace === undefined ? undefined : keyed.checked(scopedStore(keyed.backend, inWindow), inWindow);
    this.#globalState = keyed.checked(scopedStore(keyed.backend, global), global);
  }

  currentProcessingTime(): number {
    return this.#keyed.timers.currentProcessingTime();
  }
  currentWatermark(): number {
    return this.#keyed.currentWatermark;
  }
  windowState(): KeyedStateStore {
    if (this.#windowState === undefined) {
      // Called by a running window function, not while building: domain user.
      throw new EddyError("NOT_SUPPORTED", "windowState() is not available with pane-evaluated sliding windows; use globalState() or process()", {
        domain: "user",
      });
    }
    return this.#windowState;
  }
  globalState(): KeyedStateStore {
    return this.#globalState;
  }
  output<S>(tag: OutputTag<S>, value: S): void {
    requireOutputTag(tag, "ctx.output(tag, value)", "user");
    this.#output.collectSide(tag, value, this.window.maxTimestamp());
  }
}

export class WindowFunctionRunner<W extends Window> {
  readonly #ctx: OperatorContext;
  readonly #keyed: KeyedStateAndTimers;
  readonly #fn: WindowFunction<unknown, unknown, Key, W> | ProcessWindowFunction<unknown, unknown, Key, W> | undefined;
  readonly #collector: TimestampedCollector<unknown>;
  readonly #context: WindowProcessContext<W>;

  /**
   * `windowNamespace` scopes a ProcessWindowFunction's `windowState()`; undefined where windows
   * have no state of their own (panes), which makes `windowState()` an error.
   */
  constructor(
    ctx: OperatorContext,
    keyed: KeyedStateAndTimers,
    output: Output<unknown>,
    fn: AnyWindowFunction<unknown, unknown, Key, W> | undefined,
    windowNamespace: ((window: W) => Namespace) | undefined,
  ) {
    this.#ctx = ctx;
    this.#keyed = keyed;
    // One instance per subtask (and attempt): the factory's, or a copy of the object.
    this.#fn = fn === undefined || typeof fn === "function" ? fn : perSubtaskInstance(fn, ctx, ["process"]);
    this.#collector = new TimestampedCollector(output);
    this.#context = new WindowProcessContext<W>(keyed, output, windowNamespace);
  }

  open(): void {
    const fn = this.#fn;
    if (fn !== undefined && typeof fn !== "function") callUser(this.#ctx, () => fn.open?.(runtimeContextOf(this.#ctx)));
  }

  close(): void {
    const fn = this.#fn;
    if (fn !== undefined && typeof fn !== "function") callUser(this.#ctx, () => fn.close?.());
  }

  /**
   * Emits the window's result: `contents` is the element list when `isList`, else the one
   * pre-aggregated value, which either function form gets as a one-element array (Flink hands an
   * Iterable to every form). Once per firing, so the array costs nothing that matters.
   */
  evaluate(window: W, contents: unknown, isList: boolean): void {
    const collector = this.#collector;
    collector.timestamp = window.maxTimestamp();
    const fn = this.#fn;
    const key = this.#keyed.backend.getCurrentKey();
    try {
      if (fn === undefined) {
        collector.collect(contents);
      } else {
        const input = isList ? (contents as unknown[]) : [contents];
        if (typeof fn === "function") {
          fn(key, window, input, collector);
        } else {
          this.#context.window = window;
          (fn as ProcessWindowFunction<unknown, unknown, Key, W>).process(key, this.#context, input, collector);
        }
      }
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
  }

  /** The window is gone for good: the function cleans its per-window state. */
  clear(window: W): void {
    const fn = this.#fn;
    if (fn === undefined || typeof fn === "function" || fn.clear === undefined) return;
    this.#context.window = window;
    try {
      fn.clear(this.#context);
    } catch (e) {
      throw userFunctionError(this.#ctx, e);
    }
  }
}
