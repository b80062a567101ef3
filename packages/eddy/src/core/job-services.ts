/** Job-wide services the executor provides to operators and connectors. */
export interface JobServices {
  readonly jobName: string;
  /** Appends to the named in-memory result list (collect sinks). */
  collect(sinkName: string, value: unknown): void;
  /** Writes a line to the job's standard output (print sinks). */
  writeStdout(line: string): void;
}
