/** Job-wide services the executor provides to operators and connectors. */
export interface JobServices {
  readonly jobName: string;
  /** Appends to the named in-memory result list (collect sinks). */
  collect(sinkName: string, value: unknown): void;
  /**
   * Appends `values` to the named result list unless a commit with id `txnId` of that sink was
   * applied before (two-phase test sinks: commits repeated after a restore have no effect).
   */
  commitOnce(sinkName: string, txnId: string, values: readonly unknown[]): void;
  /** Writes a line to the job's standard output (print sinks). */
  writeStdout(line: string): void;
}
