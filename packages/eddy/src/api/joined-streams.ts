/**
 * Window joins and co-groups (Flink's JoinedStreams / CoGroupedStreams):
 *
 *   a.join(b).where(ka).equalTo(kb).window(assigner).apply((left, right) => out)
 *   a.coGroup(b).where(ka).equalTo(kb).window(assigner).apply((lefts, rights, out) => ...)
 *
 * Both inputs are tagged with their side, unioned, keyed by their own key selector and cut into
 * the same windows; when a window fires, its elements are split back by side. A join emits every
 * (left, right) pair of a key and window (inner join); a co-group hands both lists to the
 * function, so left/right/full outer joins are written with it (one side may be empty).
 */
import type { Key } from "../core/key.ts";
import type { Collector, KeySelector } from "../runtime/functions.ts";
import type { WindowAssigner } from "../runtime/windows/assigners.ts";
import type { Evictor } from "../runtime/windows/evictors.ts";
import type { Trigger } from "../runtime/windows/triggers.ts";
import type { TimeWindow, Window } from "../runtime/windows/windows.ts";
import type { DataStream } from "./data-stream.ts";
import type { WindowedStream } from "./windowed-stream.ts";

export type JoinFunction<L, R, OUT> = (left: L, right: R) => OUT;
export type FlatJoinFunction<L, R, OUT> = (left: L, right: R, out: Collector<OUT>) => void;
export type CoGroupFunction<L, R, OUT> = (lefts: L[], rights: R[], out: Collector<OUT>) => void;

/** An element of either input, tagged with its side. */
interface Tagged<L, R> {
  readonly side: 1 | 2;
  readonly value: L | R;
}

export type JoinKind = "join" | "coGroup";

/** What `apply` takes: a pair function for joins, a group function for co-groups. */
export type JoinApplyFunction<KIND extends JoinKind, L, R, OUT> = KIND extends "join" ? JoinFunction<L, R, OUT> : CoGroupFunction<L, R, OUT>;

interface JoinSpec<L, R, K extends Key> {
  readonly kind: JoinKind;
  readonly left: DataStream<L>;
  readonly right: DataStream<R>;
  readonly leftKey: KeySelector<L, K>;
  readonly rightKey: KeySelector<R, K>;
}

export class JoinedStreams<L, R, KIND extends JoinKind = JoinKind> {
  readonly #kind: KIND;
  readonly #left: DataStream<L>;
  readonly #right: DataStream<R>;

  /** @internal */
  constructor(kind: KIND, left: DataStream<L>, right: DataStream<R>) {
    this.#kind = kind;
    this.#left = left;
    this.#right = right;
  }

  /** The key of the left input. */
  where<K extends Key>(leftKey: KeySelector<L, K>): { equalTo(rightKey: KeySelector<R, K>): JoinWhereEqual<L, R, K, KIND> } {
    if (typeof leftKey !== "function") throw new TypeError(`${this.#kind}().where needs a key selector`);
    return {
      equalTo: (rightKey) => {
        if (typeof rightKey !== "function") throw new TypeError(`${this.#kind}().where(...).equalTo needs a key selector`);
        return new JoinWhereEqual<L, R, K, KIND>({ kind: this.#kind, left: this.#left, right: this.#right, leftKey, rightKey });
      },
    };
  }
}

export class JoinWhereEqual<L, R, K extends Key, KIND extends JoinKind = JoinKind> {
  readonly #spec: JoinSpec<L, R, K>;

  /** @internal */
  constructor(spec: JoinSpec<L, R, K>) {
    this.#spec = spec;
  }

  window<W extends Window = TimeWindow>(assigner: WindowAssigner<unknown, W>): WindowedJoin<L, R, K, W, KIND> {
    return new WindowedJoin<L, R, K, W, KIND>(this.#spec, assigner);
  }
}

export class WindowedJoin<L, R, K extends Key, W extends Window, KIND extends JoinKind = JoinKind> {
  readonly #spec: JoinSpec<L, R, K>;
  readonly #assigner: WindowAssigner<unknown, W>;
  #trigger: Trigger<unknown, W> | undefined;
  #evictor: Evictor<unknown, W> | undefined;
  #allowedLateness = 0;

  /** @internal */
  constructor(spec: JoinSpec<L, R, K>, assigner: WindowAssigner<unknown, W>) {
    this.#spec = spec;
    this.#assigner = assigner;
  }

  trigger(trigger: Trigger<unknown, W>): this {
    this.#trigger = trigger;
    return this;
  }

  evictor(evictor: Evictor<unknown, W>): this {
    this.#evictor = evictor;
    return this;
  }

  allowedLateness(ms: number): this {
    this.#allowedLateness = ms;
    return this;
  }

  /** Join: `fn(left, right)` per pair; co-group: `fn(lefts, rights, out)` per key and window. */
  apply<OUT = never>(fn: JoinApplyFunction<KIND, L, R, OUT>): DataStream<OUT> {
    if (typeof fn !== "function") throw new TypeError(`${this.#spec.kind}(...).apply needs a function`);
    if (this.#spec.kind === "coGroup") return this.#build(fn as unknown as CoGroupFunction<L, R, OUT>);
    const join = fn as unknown as JoinFunction<L, R, OUT>;
    return this.#build<OUT>((lefts, rights, out) => {
      for (const l of lefts) for (const r of rights) out.collect(join(l, r));
    });
  }

  /** Join only: `fn(left, right, out)` may emit any number of records per pair. */
  flatApply<OUT = never>(fn: FlatJoinFunction<L, R, OUT>): DataStream<OUT> {
    if (this.#spec.kind !== "join") throw new TypeError("flatApply is for joins; a co-group's apply already gets a collector");
    if (typeof fn !== "function") throw new TypeError("join(...).flatApply needs a function (left, right, out) => void");
    return this.#build<OUT>((lefts, rights, out) => {
      for (const l of lefts) for (const r of rights) fn(l, r, out);
    });
  }

  #build<OUT>(coGroup: CoGroupFunction<L, R, OUT>): DataStream<OUT> {
    const { kind, left, right, leftKey, rightKey } = this.#spec;
    const name = kind === "join" ? "Join" : "CoGroup";
    const a = left.map((value): Tagged<L, R> => ({ side: 1, value })).name(`${name}: left`);
    const b = right.map((value): Tagged<L, R> => ({ side: 2, value })).name(`${name}: right`);
    let windowed: WindowedStream<Tagged<L, R>, K, W> = a
      .union(b)
      .keyBy((t): K => (t.side === 1 ? leftKey(t.value as L) : rightKey(t.value as R)))
      .window(this.#assigner as WindowAssigner<Tagged<L, R>, W>);
    if (this.#trigger !== undefined) windowed = windowed.trigger(this.#trigger as Trigger<Tagged<L, R>, W>);
    if (this.#evictor !== undefined) windowed = windowed.evictor(this.#evictor as Evictor<Tagged<L, R>, W>);
    if (this.#allowedLateness > 0) windowed = windowed.allowedLateness(this.#allowedLateness);
    return windowed
      .apply<OUT>((_key, _window, elements, out) => {
        const lefts: L[] = [];
        const rights: R[] = [];
        for (const t of elements) {
          if (t.side === 1) lefts.push(t.value as L);
          else rights.push(t.value as R);
        }
        coGroup(lefts, rights, out);
      })
      .name(`${name}(${this.#assigner.description})`);
  }
}
