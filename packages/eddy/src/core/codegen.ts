/**
 * Functions compiled from source text at run time (`new Function`), for hot paths that are faster
 * with code of their own: per-shape copiers and codecs, and each chained edge's call. Every
 * caller has a general path that needs no compiled code, because a process may forbid compiling
 * code from strings (`node --disallow-code-generation-from-strings`, or an embedder's policy);
 * there Eddy runs, slower, instead of failing.
 *
 * Callers build the source from their own fixed text and from values they have escaped
 * (JSON.stringify of field names); never from anything else a job or a client supplies.
 */

/** False once the process has refused to compile code from strings (it will keep refusing). */
let allowed = true;

/**
 * Whether compiling may succeed: false once this process has refused. Callers that build sources
 * per batch check it first, so that the general path does not pay for building them.
 */
export function mayCompile(): boolean {
  return allowed;
}

/**
 * `new Function(...params, body)`, or undefined when this process forbids compiling code from
 * strings. Other errors (a syntax error in `body`: a bug) are thrown.
 */
export function compileFunction<F extends (...args: never[]) => unknown>(params: readonly string[], body: string): F | undefined {
  if (!allowed) return undefined;
  try {
    return new Function(...params, body) as F;
  } catch (e) {
    if (!(e instanceof EvalError)) throw e;
    allowed = false;
    return undefined;
  }
}
