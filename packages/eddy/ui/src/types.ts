/** The shapes of the REST API's answers the page reads (docs/rest-api.md has them all). */

export type Watermark = number | "none" | "end" | null;

export interface GraphVertex {
  id: string;
  name: string;
  parallelism: number;
  maxParallelism: number;
  operators: { id: string; name: string; uid: string | null }[];
}

export interface GraphEdge {
  from: string;
  to: string;
  fromOperator: string;
  toOperator: string;
  partitioner: string;
  chained: boolean;
  inputIndex: number;
  sideOutput: string | null;
}

export interface JobGraph {
  id: string;
  vertices: GraphVertex[];
  edges: GraphEdge[];
}

export interface LiveVertex {
  id: string;
  name: string;
  parallelism: number;
  numRecordsIn: number | null;
  numRecordsOut: number | null;
  numRecordsInPerSecond: number | null;
  numRecordsOutPerSecond: number | null;
  busyRatio: number | null;
  backPressuredRatio: number | null;
  idleRatio: number | null;
  backpressureLevel: "ok" | "low" | "high" | "unknown";
  inputWatermark: Watermark;
  outputWatermark: Watermark;
}

export interface CheckpointSummary {
  id: number;
  status: "in-progress" | "completed" | "failed";
  isSavepoint: boolean;
  triggerTimeMs: number;
  durationMs: number | null;
  acknowledgedSubtasks: number;
  totalSubtasks: number;
  sizeBytes: number;
  syncMs: number;
  asyncMs: number;
  alignmentMs: number;
  failureReason: string | null;
}

export interface Checkpoints {
  enabled: boolean;
  counts: { completed: number; failed: number; inProgress: number };
  kept: number;
  history: CheckpointSummary[];
}

export interface Overview {
  id: string;
  name: string;
  status: string;
  state: string;
  startedAtMs: number;
  durationMs: number;
  parallelism: number;
  vertices: number;
  subtasks: number;
  restarts: number;
}

export interface LiveUpdate {
  timeMs: number;
  overview: Overview;
  vertices: LiveVertex[];
  checkpoints: Checkpoints;
  exceptions: number;
}

export interface OperatorMetrics {
  id: string;
  name: string;
  numRecordsIn: number | null;
  numRecordsOut: number | null;
  numRecordsInPerSecond: number | null;
  numRecordsOutPerSecond: number | null;
  currentInputWatermark: Watermark;
  currentOutputWatermark: Watermark;
  watermarkLagMs: number | null;
  /** A source's sourceIdleTime, pendingRecords and pendingBytes; an aligned source's watermarkAlignmentDrift. */
  gauges: Record<string, number | null>;
}

export interface VertexDetail extends GraphVertex {
  subtasks: {
    subtask: number;
    reported: boolean;
    busyTimeMsPerSecond: number | null;
    idleTimeMsPerSecond: number | null;
    backPressuredTimeMsPerSecond: number | null;
    numBytesIn: number | null;
    numBytesOut: number | null;
    operators: OperatorMetrics[];
  }[];
}

export interface JobException {
  timeMs: number;
  attempt: number;
  code: string | null;
  message: string;
  rootCause: string | null;
  operator: string | null;
  subtask: number | null;
  location: string | null;
  stack: string | null;
  restarted: boolean;
}

export interface Exceptions {
  total: number;
  truncated: boolean;
  history: JobException[];
}

export interface QueryLocation {
  name: string;
  operatorName: string;
}
