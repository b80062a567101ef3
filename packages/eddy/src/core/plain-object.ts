/**
 * Whether `v` is a plain object: its prototype is Object.prototype. hot path: the codec checks
 * every record sent to another thread with it, and state copies every object value it keeps.
 *
 * `constructor` is read first only so that TurboFan knows `v`'s hidden class where
 * getPrototypeOf is called, and folds the call into a constant; on its own the call cost ~9 ns
 * (Node 20, bench/idioms.ts), more than the rest of a record's check. The result does not depend
 * on what `constructor` holds (an own field of that name is data like any other); a getter of
 * that name, or a Proxy's get trap, runs once.
 */
export function isPlainObject(v: object): boolean {
  (v as { constructor?: unknown }).constructor;
  return Object.getPrototypeOf(v) === Object.prototype;
}
