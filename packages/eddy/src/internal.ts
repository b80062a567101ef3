/**
 * The one internal entry point of Eddy's own job-level tests (test/): what they need beyond the
 * public API (`eddy`, `eddy/testing`, `eddy/savepoint`, `eddy/query`), named here explicitly, so
 * that moving a file inside src/ changes this list, not the tests. Not a package export: users
 * never import it. test/layers.test.ts refuses any other path into src/ from test/.
 */
export { type CheckpointStats } from "./checkpoint/coordinator.ts";
export { SnapshotFile, encodeSnapshotFile } from "./checkpoint/format/container.ts";
export { LocalCheckpointStorage, fileChecksum } from "./checkpoint/storage.ts";
export { connectJob, listJobs } from "./control/control-client.ts";
export { MAX_EVENT_STREAMS } from "./control/web-ui.ts";
export { WebSessions, LOGIN_NONCE_TTL_MS, SESSION_TTL_MS, MAX_LOGIN_NONCES, MAX_SESSIONS, parseCookies, sessionCookie, sessionCookieName, clearedCookie } from "./control/web-ui-auth.ts";
export { startControlServer } from "./control/control-server.ts";
export { serialScavengeHolders } from "./coordinator/parallel-scavenge.ts";
export { type ControlledJob, type SavepointResult, type StopOptions } from "./coordinator/control.ts";
export { ManualClock } from "./core/clock.ts";
export { assignToKeyGroup, computeOperatorIndexForKeyGroup, defaultMaxParallelism, keyGroupRangeForOperator } from "./core/key-group.ts";
export { mapKeyOf, type MapKey } from "./core/key.ts";
export { silentLogger } from "./core/logger.ts";
export { NO_TIMESTAMP } from "./core/time.ts";
export { manifestFiles } from "./checkpoint/format/manifest.ts";
export { manifestSharedFiles, sharedFileCheckpointId } from "./checkpoint/shared-state-registry.ts";
export { readManifest } from "./checkpoint/format/manifest-reader.ts";
export { planJob } from "./executor/job-ref.ts";
export { SOURCE_SPLITS_STATE } from "./executor/task-executor.ts";
export { startStateServer } from "./queryable/state-server.ts";
export { decodeOperatorStates, operatorStateSection } from "./checkpoint/format/task-snapshot.ts";
export { CounterRegistry, type OneInputOperator, type OperatorContext, type Output } from "./runtime/operator.ts";
export { OperatorMetricGroup } from "./runtime/metrics/metric-group.ts";
export { intervalJoinOperator, inclusiveIntervalJoinBounds, type IntervalJoinBounds, type IntervalJoinLateData, type IntervalJoinOperator } from "./runtime/operators/interval-join-operator.ts";
export { keyedProcessOperator } from "./runtime/operators/keyed-process-operator.ts";
export { slidingPaneOperator } from "./runtime/windows/sliding-pane-operator.ts";
export { windowOperator } from "./runtime/windows/window-operator.ts";
export { heapStateBackend } from "./state/heap-keyed-state-backend.ts";
export { ByteReader } from "./core/codec/bytes.ts";
export { type KeyedStateMeta } from "./state/keyed-state-meta.ts";
export { fakeQueryableJob, mapStateBackend } from "./testing/fake-queryable.ts";
