/**
 * Benchmark jobs are top-level exports (worker threads rebuild them by importing their module), so
 * their sizes come from environment variables, which worker threads inherit. A setting is read when
 * a job is built, not at import, so the driver can change it between runs.
 */
export const setting =
  (name: string, fallback: number) =>
  (): number =>
    Number(process.env[name] ?? fallback);
