/**
 * Every code an EddyError can carry, with whose fault it is (the domain), whether a restart or a
 * repeated request may succeed, what it means and what the user does about it. `EddyError` takes
 * only these codes, so a misspelt or new code fails to compile until it is added here, and
 * docs/errors.md lists exactly these (core/error-codes.test.ts checks both).
 *
 * The domain and the retry hint of a code live here once. A raising site overrides them only where
 * the same failure is someone else's fault there; `otherDomain` says when, and the site says why.
 *
 * The HTTP answers of the control API and the state servers use these codes too (the clients throw
 * them as EddyErrors), including the few only an HTTP endpoint raises (BAD_REQUEST, BUSY, ...).
 * A code that arrives as text (from a worker thread, in an HTTP answer) is checked with
 * `isErrorCode`; an unknown one becomes UNKNOWN_ERROR_CODE, the original kept in the message.
 */

/** Whose fault a failure is. */
export type ErrorDomain =
  /** User code threw, or user input (a key, a timestamp) was invalid. */
  | "user"
  /** An external system (broker, database, file system) failed. */
  | "external"
  /** The job was configured or built wrongly (graph, options). Detected before running. */
  | "config"
  /** A bug in Eddy itself. */
  | "internal";

export interface ErrorCodeSpec {
  /** Whose fault it is, unless the raising site overrides it (see `otherDomain`). */
  readonly domain: ErrorDomain;
  /** Whether restarting the failed task, or repeating the request, may succeed. */
  readonly retryable: boolean;
  /** What happened: one sentence, no `|` (it is a cell of docs/errors.md). */
  readonly meaning: string;
  /** What the user does about it: one sentence, no `|`. */
  readonly action: string;
  /** The one other domain some raising sites give this code, and when. */
  readonly otherDomain?: { readonly domain: ErrorDomain; readonly when: string };
}

const BUG = "Report it as a bug in Eddy, with the message and the job.";

export const ERROR_CODES = {
  // --- Building a job: the API and the graph ---
  NOT_A_JOB: { domain: "config", retryable: false, meaning: "The job module does not export a job made by defineJob.", action: 'Export the job: `export default defineJob("name", (env) => ...)`.' },
  JOB_BUILD_FAILED: { domain: "config", retryable: false, meaning: "The job's build function threw while building the graph.", action: "Fix the build function; the message has its error." },
  NOT_AN_OPERATOR: { domain: "config", retryable: false, meaning: "An operator setting (name, uid, parallelism, codec) was applied to a partitioning, a union or a side output.", action: "Apply it to the operator before it." },
  INVALID_PARALLELISM: { domain: "config", retryable: false, meaning: "An operator's parallelism or max parallelism is out of range or inconsistent.", action: "Give a parallelism between 1 and the max parallelism (at most 32768)." },
  SOURCE_PARALLELISM: { domain: "config", retryable: false, meaning: "A source was given a higher parallelism than it supports.", action: "Lower the source's parallelism to the limit in the message." },
  DUPLICATE_UID: { domain: "config", retryable: false, meaning: "Two operators have the same uid.", action: "Give every operator its own uid." },
  FORWARD_PARALLELISM_MISMATCH: { domain: "config", retryable: false, meaning: "A forward edge joins operators with different parallelism.", action: "Give both operators the same parallelism, or repartition (keyBy, rebalance) between them." },
  NOT_KEYED: { domain: "config", retryable: false, meaning: "An operator that needs a keyed input has none.", action: "Use keyBy(...) before it." },
  DUPLICATE_QUERYABLE_STATE: { domain: "config", retryable: false, meaning: "Two operators declare a queryable state of the same name.", action: "Give each queryable state a name unique in the job." },
  INVALID_STATE_DESCRIPTOR: {
    domain: "config", retryable: false, meaning: "A state descriptor has an invalid name, queryable name, TTL or option.", action: "Fix the descriptor as the message says.",
    otherDomain: { domain: "user", when: "an operator state is asked for with an invalid name in open()" },
  },
  INVALID_WINDOW: {
    domain: "config", retryable: false, meaning: "A window's size, slide, offset or allowed lateness is invalid.", action: "Fix the window assigner's arguments as the message says.",
    otherDomain: { domain: "user", when: "a session window's gap function returns an invalid gap, or a window stagger an invalid offset" },
  },
  AGGREGATE_NEEDS_MERGE: { domain: "config", retryable: false, meaning: "An AggregateFunction without merge(a, b) is used on merging (session) windows.", action: "Implement merge(a, b) in the AggregateFunction." },
  TRIGGER_CANNOT_MERGE: { domain: "config", retryable: false, meaning: "A trigger that cannot merge is used on merging (session) windows.", action: "Use a trigger with canMerge() and onMerge()." },
  STATE_NOT_MERGEABLE: { domain: "config", retryable: false, meaning: "Merging windows use state that cannot be merged (value state, state with a TTL, an aggregate without merge).", action: "Use reducing, aggregating (with merge) or list state without TTL in merging windows." },
  INVALID_OUTPUT_TAG: {
    domain: "config",
    retryable: false,
    meaning: "A side-output call (getSideOutput, sideOutputLateData, sideOutputLeftLateData, ctx.output...) was given something that is not an OutputTag, such as null or undefined.",
    action: "Pass the OutputTag the message's call needs, created with new OutputTag(name).",
    otherDomain: { domain: "user", when: "ctx.output is called with it by a running function" },
  },
  INVALID_INTERVAL: { domain: "config", retryable: false, meaning: "An interval join's bounds are not integer ms, reversed or empty.", action: "Give integer ms bounds with lower ≤ upper (and a non-empty interval once exclusive bounds are left out)." },
  INVALID_FILE_SOURCE: { domain: "config", retryable: false, meaning: "A file source was given an invalid path pattern or option.", action: "Fix the option named in the message." },
  INVALID_NEXMARK_CONFIG: { domain: "config", retryable: false, meaning: "The Nexmark generator or source was given an invalid setting.", action: "Fix the setting named in the message." },
  INVALID_ERROR_POLICY: { domain: "config", retryable: false, meaning: "onError() was given an unknown policy or invalid options, or was applied to an operator without a per-record user function, or deadLetters() was asked of an operator whose policy is not dead-letter.", action: "Fix the call as the message says (docs/error-policy.md lists the operators that take a policy)." },
  INVALID_ASYNC_IO_OPTIONS: { domain: "config", retryable: false, meaning: "AsyncDataStream.orderedWait or unorderedWait was given an invalid async function, timeout, capacity or retry strategy, or an unknown option.", action: "Fix the option named in the message (docs/async-io.md lists them)." },
  UNSUPPORTED_CONSISTENCY: { domain: "config", retryable: false, meaning: "The query client was asked for a consistency it does not offer.", action: 'Use consistency "latest".' },

  // --- Running user functions and records ---
  BAD_RECORD: { domain: "user", retryable: false, meaning: "A source read input it could not turn into a record (the message names the position), and its error policy is to fail.", action: "Fix the input, or give the source an error policy that skips or dead-letters bad records." },
  ASYNC_IO_FAILED: { domain: "external", retryable: true, meaning: "An async I/O function's request for a record failed (it rejected, threw, or resolved with something that is not a list of results) on its last attempt, and the operator's error policy is to fail; the message names the operator, the subtask and the attempts.", action: "Fix the service or the function (the message has its error), or give the operator a retry strategy or an error policy; the job restarts per its restart strategy and sends the requests of its checkpoint again." },
  ASYNC_IO_TIMEOUT: { domain: "external", retryable: true, meaning: "An async I/O request for a record did not complete within the operator's timeoutMs (retries included), the async function has no timeout(value) handler, and the operator's error policy is to fail.", action: "Raise timeoutMs, give the function a timeout(value) handler that emits a fallback, or an error policy; the job restarts per its restart strategy and sends the requests of its checkpoint again." },
  INVALID_SINK_OPTIONS: { domain: "config", retryable: false, meaning: "A sink was given an invalid option (a batch size, a bound, a timeout).", action: "Fix the option named in the message." },
  SINK_WRITE_FAILED: { domain: "external", retryable: true, meaning: "A batching sink could not send a batch: the service refused the request with an error that is not retryable, or every retry failed.", action: "Fix the service or the records (the message has its error); the job restarts per its restart strategy and sends the entries of its checkpoint again." },
  SINK_CLOSED: { domain: "internal", retryable: false, meaning: "A sink writer was used after it was closed.", action: BUG },
  SINK_COMMIT_FAILED: { domain: "external", retryable: true, meaning: "A sink's committer failed on every attempt of its retry policy (Sink.commitRetry); the committables stay pending in the checkpoint.", action: "Fix what the sink writes to; the job restarts per its restart strategy and commits them again." },
  ERROR_POLICY_BOUND_EXCEEDED: { domain: "user", retryable: false, meaning: "An operator skipped or dead-lettered more records within a minute than its error policy's bound (maxPerMinute) allows; the message has the last record's error.", action: "Fix the input or the function (the dead letters say what fails), or raise maxPerMinute." },
  FILE_SINK_IO_FAILED: { domain: "external", retryable: true, meaning: "The file sink could not create, write, sync, truncate or rename a file (disk full, permission denied, read-only file system); the message names the path.", action: "Free space or fix the permissions of the path named; the job restarts per its restart strategy from its latest checkpoint, and nothing committed is lost or written twice." },
  FILE_SINK_BAD_BUCKET: { domain: "user", retryable: false, meaning: "A file sink's bucket assigner returned a bucket id that is not a safe relative directory (not a string, absolute, with a `..` segment or a NUL character).", action: "Return a relative directory such as `dt=2026-12-01/hour=13` from the bucket assigner." },
  FILE_SINK_RECOVERY_FAILED: { domain: "external", retryable: false, meaning: "On restore, a part file the checkpoint recorded is missing or shorter than recorded, or committing it would overwrite another file.", action: "Restore the file sink's directory as it was at the checkpoint (the message names the file), or start the job without that checkpoint." },
  POSTGRES_CLIENT_MISSING: { domain: "config", retryable: false, meaning: "A PostgresSink was built but the PostgreSQL client package `pg` (an optional peer dependency of eddy) is not installed.", action: "Run `npm i pg` in the job's project." },
  POSTGRES_BAD_ROW: { domain: "user", retryable: false, meaning: "PostgreSQL refused a row for its values (a constraint violation such as NOT NULL or UNIQUE, a value of the wrong type or out of range); the message has the row and the server's error.", action: "Fix the row or the table, or give the sink the error policy skip or dead-letter (`.onError(...)` on what sinkTo returns) to go on without such rows." },
  POSTGRES_PREPARED_TRANSACTIONS_DISABLED: { domain: "config", retryable: false, meaning: "The exactly-once (append) PostgresSink needs prepared transactions, and the server has `max_prepared_transactions = 0` (its default).", action: "Set `max_prepared_transactions` to at least the sink's parallelism times the checkpoints in flight (e.g. 64) in postgresql.conf and restart the server (docs/connectors/postgres.md)." },
  POSTGRES_SINK_FAILED: { domain: "external", retryable: true, meaning: "The PostgreSQL sink could not write, prepare or recover a transaction: the server refused with an error that is not transient, or every retry of a transient one (connection refused or reset, serialization failure) failed.", action: "Fix the server or the connection named in the message; the job restarts per its restart strategy from its latest checkpoint, and nothing committed is lost or written twice." },
  INVALID_CDC_SOURCE: { domain: "config", retryable: false, meaning: "A PostgresCdcSource was given an invalid option (no tables, a bad slot or publication name, a bound that is not a positive integer).", action: "Fix the option named in the message (docs/connectors/postgres-cdc.md)." },
  POSTGRES_CDC_SETUP_FAILED: { domain: "config", retryable: false, meaning: "The PostgreSQL CDC source could not prepare its reading: the server is not configured for logical replication (wal_level, max_replication_slots, max_wal_senders), a table is missing, has no primary key, or has a key column of a type the source does not split by, or the slot or publication is missing and the source was told not to create it.", action: "Fix what the message names (docs/connectors/postgres-cdc.md lists the server settings and the privileges needed)." },
  POSTGRES_CDC_SLOT_AHEAD: { domain: "config", retryable: false, meaning: "The job was restored from a checkpoint whose log position is behind the replication slot's confirmed position: the server has already released the changes between them (an older checkpoint than the last completed one was chosen, or another consumer used the slot).", action: "Restore from the latest completed checkpoint of the job, or start the job afresh with a new slot (and a snapshot)." },
  POSTGRES_CDC_SCHEMA_CHANGE: { domain: "external", retryable: false, meaning: "A column the CDC source reads changed its type (ALTER TABLE ... ALTER COLUMN ... TYPE): rows of the new type cannot be passed on as the records the job was built for. Added columns pass through; this is not one of them.", action: "Stop the job, migrate its state or output for the new type, and start it afresh (new slot and snapshot), or undo the change." },
  POSTGRES_CDC_STREAM_FAILED: { domain: "external", retryable: true, meaning: "The PostgreSQL CDC source lost its connection or the server refused a replication command while reading the snapshot or the change stream.", action: "Fix the server or the connection named in the message; the job restarts per its restart strategy from its latest checkpoint, and no change is lost or read twice." },
  NATS_CLIENT_MISSING: { domain: "config", retryable: false, meaning: "A NatsSource or NatsSink was built but the NATS client packages `@nats-io/jetstream` and `@nats-io/transport-node` (optional peer dependencies of eddy) are not installed.", action: "Run `npm i @nats-io/jetstream @nats-io/transport-node` in the job's project." },
  NATS_SOURCE_FAILED: { domain: "external", retryable: true, meaning: "The NATS JetStream source could not connect, find its stream or read from it: the connection was closed for good (the client gave up reconnecting), the stream does not exist, or every retry of a failed fetch failed.", action: "Fix the server, the stream or the connection named in the message; the job restarts per its restart strategy and resumes from the stream positions of its latest checkpoint." },
  NATS_SINK_FAILED: { domain: "external", retryable: true, meaning: "The NATS JetStream sink could not publish: the connection was closed for good, no stream takes the subject, or every retry of a publish that failed with a transient error (a timeout, a lost connection) failed.", action: "Fix the server, the stream or the connection named in the message; the job restarts per its restart strategy, and the messages published again carry the same Nats-Msg-Id, so the stream's duplicate window drops the ones it already holds (docs/connectors/nats.md)." },
  NATS_BAD_MESSAGE: { domain: "user", retryable: false, meaning: "The NATS sink could not turn a record into a message (its serializer or subject function threw), or the server refused the message for its content (larger than max_payload or the stream's max_msg_size, an invalid subject).", action: "Fix the record or the serializer, or give the sink the error policy skip or dead-letter (`.onError(...)` on what sinkTo returns) to go on without such records." },
  NATS_POSITION_GONE: { domain: "config", retryable: false, meaning: "A NATS source reading with acknowledgements was restored from a position its work-queue or interest-retention stream no longer holds: messages after that position were acknowledged since (by a later checkpoint of the job, or another run) and the stream removed them. Reading on would silently skip them.", action: "Restore from the job's latest checkpoint (or a savepoint taken after the last acknowledgement), or start the job without a checkpoint to read what the stream holds now (docs/connectors/nats.md)." },
  INVALID_NATS_OPTIONS: { domain: "config", retryable: false, meaning: "A NatsSource or NatsSink was given options it cannot use (no servers, no stream or subject, a start position or a number out of range).", action: "Fix the option named in the message (docs/connectors/nats.md)." },
  INVALID_KAFKA_OPTIONS: { domain: "config", retryable: false, meaning: "A KafkaSource or KafkaSink (eddy-kafka) was given options it cannot use (no client, no topic, a delivery guarantee it does not know, exactly-once without a transactional id prefix, a number out of range).", action: "Fix the option named in the message (docs/connectors/kafka.md)." },
  KAFKA_CLIENT_UNAVAILABLE: { domain: "config", retryable: false, meaning: "eddy-kafka could not load its Kafka client, @confluentinc/kafka-javascript: it is not installed or its native part (librdkafka) was not built.", action: "Build it: `CKJS_LINKING=dynamic npm rebuild @confluentinc/kafka-javascript` (needs gcc, make, python3 and libssl-dev); README, Kafka." },
  KAFKA_SOURCE_FAILED: { domain: "external", retryable: true, meaning: "The Kafka source could not read: a topic or partition does not exist, an offset is out of range, or the client failed talking to the brokers.", action: "Fix the topic, the offsets or the brokers named in the message; the job restarts per its restart strategy and resumes from the offsets of its latest checkpoint." },
  KAFKA_SINK_FAILED: { domain: "external", retryable: true, meaning: "The Kafka sink could not write: the topic does not exist, the brokers did not acknowledge, its transactional producer was fenced by a newer one with the same transactional id (a second job or attempt using the same transactionalIdPrefix), or exactly-once by write-ahead buffered more than maxBufferedBytes between two checkpoints.", action: "Fix the topic or the brokers named in the message, give each job its own transactionalIdPrefix, or checkpoint more often (or raise maxBufferedBytes); the job restarts per its restart strategy and what was not committed is written again." },
  KAFKA_TRANSACTION_LOST: { domain: "external", retryable: false, meaning: "The Kafka sink could not commit a transaction that a completed checkpoint holds: the broker aborted it (its transaction timeout passed before the commit, e.g. while the job was down) or another producer took over its transactional id, so its records are lost.", action: "Raise the sink's transactionTimeoutMs (and the broker's transaction.max.timeout.ms) above the longest expected downtime; to go on, restore from a later checkpoint or start the job without this checkpoint and replay the input." },
  SCHEMA_REGISTRY_NOT_INSTALLED: { domain: "config", retryable: false, meaning: "A KafkaSource or KafkaSink was given a schema registry serde (schemaRegistry.avro / json / protobuf), and its client library, @confluentinc/schemaregistry (an optional peer dependency of eddy-kafka), could not be loaded.", action: "Install it next to eddy-kafka: `npm install @confluentinc/schemaregistry`." },
  SCHEMA_REGISTRY_FAILED: { domain: "external", retryable: true, meaning: "A schema registry serde could not ask the schema registry: no connection, a timeout, an HTTP 5xx or 429 answer, or refused credentials (401/403). The record is not at fault, so it does not go to the error policy.", action: "Check the registry's URL, that it runs and the credentials; the job restarts per its restart strategy and resumes from its latest checkpoint." },
  SCHEMA_NOT_REGISTERED: { domain: "config", retryable: false, meaning: "A KafkaSink's schema registry serializer found no schema under its subject: the `schema` it was given is not registered (and autoRegister is off), or the subject has no version (useLatestVersion).", action: "Register the schema under the subject (`<topic>-value` or `<topic>-key` by default), or set autoRegister." },
  USER_FUNCTION_ASYNC: {
    domain: "user",
    retryable: false,
    meaning: "A map, filter, flatMap or process function is async: it returned a promise, or called out.collect after it returned.",
    action: "Keep these functions synchronous; for calls that wait (HTTP, databases) use async I/O (AsyncDataStream.orderedWait or unorderedWait).",
    otherDomain: { domain: "config", when: "an async function is given when the job is built" },
  },
  INVALID_FUNCTION_FACTORY: {
    domain: "config",
    retryable: false,
    meaning: "A function object argument (process function, ProcessWindowFunction) is neither an object with the methods needed nor a factory () => object, or is a function without parameters where a plain function means something else, or a factory returned no such object.",
    action: "Pass the object, a zero-argument factory such as () => new MyFunction(), or functionFactory(() => new MyFunction()) where a plain function is also accepted (window functions).",
    otherDomain: { domain: "user", when: "a factory returned something that is not a function object, when the operator was created" },
  },
  KEY_NOT_IN_SUBTASK: {
    domain: "user",
    retryable: false,
    meaning: "reinterpretAsKeyedStream: a record's key belongs to a key group another subtask owns, so the input was not partitioned by that key as promised; the message names the key, its key group and both subtasks.",
    action: "Partition the input by the same key (keyBy) instead of reinterpreting it, or fix the key selector so it matches how the input is partitioned.",
  },
  INVALID_METRIC_NAME: { domain: "user", retryable: false, meaning: "A user function registered a metric with an invalid name (or a gauge without a function).", action: "Use letters, digits and '_' (not first a digit), at most 100 characters, not ending in _total, _count, _sum or _bucket." },
  DUPLICATE_METRIC_NAME: { domain: "user", retryable: false, meaning: "A user function registered two metrics of the same name in one operator.", action: "Register each metric once, in open(), and keep the handle." },
  TOO_MANY_METRICS: { domain: "user", retryable: false, meaning: "A user function registered more metrics in one operator than the limit (100).", action: "Register fewer metrics: put variable parts in the value, not in the name." },
  USER_FUNCTION_FAILED: { domain: "user", retryable: false, meaning: "A user function threw; the message names the operator, the subtask and the cause.", action: "Fix the function (or the input that makes it throw)." },
  INVALID_KEY: { domain: "user", retryable: false, meaning: "A key selector returned an invalid key (undefined, null, an object, NaN).", action: "Return a string, number, bigint, boolean or an array of them from the key selector." },
  INVALID_TIMESTAMP: { domain: "user", retryable: false, meaning: "A timestamp assigner returned a value that is not a finite number of ms.", action: "Return a finite number of ms from the timestamp assigner." },
  INVALID_WATERMARK: { domain: "user", retryable: false, meaning: "A watermark generator emitted a watermark that is not a number.", action: "Emit numeric watermarks (ms) from the generator." },
  WATERMARK_ALIGNMENT_WITHOUT_SOURCE: { domain: "config", retryable: false, meaning: "A watermark strategy with alignment (withWatermarkAlignment) was given where Eddy cannot pause a source for it: to assignTimestampsAndWatermarks, or to a source whose Timestamps/Watermarks operator is not chained to it.", action: "Give the strategy with alignment to fromSource, and keep chaining on between the source and its watermarks." },
  NO_TIMESTAMP: { domain: "user", retryable: false, meaning: "An event-time operator (window, interval join) got a record without a timestamp.", action: "Use assignTimestampsAndWatermarks(...) or a source that sets timestamps." },
  INVALID_TIMER: { domain: "user", retryable: false, meaning: "A timer was registered or deleted with a timestamp that is not a number of ms.", action: "Pass a finite number of ms." },
  TIMERS_NEED_KEYED_STREAM: { domain: "user", retryable: false, meaning: "A function used timers on a stream that is not keyed.", action: "Use keyBy(...).process(...) for timers." },
  INVALID_PARTITION: { domain: "user", retryable: false, meaning: "A custom partitioner returned a channel outside [0, parallelism).", action: "Return an integer in [0, numPartitions) from the partitioner." },
  NOT_A_NUMBER: { domain: "user", retryable: false, meaning: "sum, min or max met a field that is not a number.", action: "Make the field numeric, or use reduce(...)." },
  NOT_MERGING: { domain: "user", retryable: false, meaning: "A trigger called mergePartitionedState outside onMerge.", action: "Call mergePartitionedState only in onMerge." },
  NOT_SUPPORTED: {
    domain: "config", retryable: false, meaning: "A call is not available in this mode (whenIdle() on worker threads, windowState() with pane-evaluated windows).", action: "Use the alternative named in the message.",
    otherDomain: { domain: "user", when: "a running window function calls windowState() under pane evaluation" },
  },
  RECORD_NOT_ENCODABLE: { domain: "user", retryable: false, meaning: "A record cannot be encoded to cross to another thread (a function, a class instance, a symbol...).", action: "Emit plain data, or give the operator a codec (setCodec)." },
  CORRUPT_FRAME: {
    domain: "internal", retryable: false, meaning: "Bytes between threads could not be decoded.", action: BUG,
    otherDomain: { domain: "user", when: "a user codec's decode threw" },
  },
  TASK_STUCK: { domain: "user", retryable: false, meaning: "User code did not return within the task watchdog's limit.", action: "Find the endless loop or blocking call in the function, or raise execution.watchdog.timeout." },
  WORKER_OUT_OF_MEMORY: { domain: "user", retryable: false, meaning: "A worker thread ran out of heap; the job is not restarted, as the same state would run out again.", action: "Raise the heap limit or reduce the state or the records held." },

  // --- Files read by a file source ---
  FILE_NOT_FOUND: { domain: "external", retryable: false, meaning: "A file source's path does not exist, or a file it was reading vanished (deleted or moved) before it was read to the end.", action: "Check the path in the message; files must stay in place until the job has read them." },
  FILE_ACCESS_DENIED: { domain: "external", retryable: false, meaning: "A file source may not read a file or list a directory (permissions).", action: "Give the job's user read access to the path in the message (and list access to its directories)." },
  FILE_READ_FAILED: { domain: "external", retryable: true, meaning: "Reading or listing a file source's path failed for another reason (an I/O error, too many open files).", action: "Check the file system; the message names the path and the system's error." },

  // --- State ---
  NO_CURRENT_KEY: { domain: "user", retryable: false, meaning: "Keyed state or the current key was used without a current key (outside a record or timer of a keyed stream).", action: "Use keyed state only while processing a record or timer of a keyed stream." },
  UNKNOWN_STATE: { domain: "user", retryable: false, meaning: "A state of that name is not registered, not queryable here, or not in the savepoint.", action: "Check the state name (the message lists the known ones)." },
  STATE_KIND_MISMATCH: { domain: "user", retryable: false, meaning: "One state name is used for two kinds of state.", action: "Give the second state another name." },
  STATE_DESCRIPTOR_MISMATCH: { domain: "user", retryable: false, meaning: "One state name is used with different options (TTL, copy).", action: "Use one name with the same options every time." },
  INVALID_MAP_STATE_KEY: { domain: "user", retryable: false, meaning: "A map state key is not a string, number, bigint or boolean.", action: "Use a primitive map key (e.g. a string made from the object)." },
  BROADCAST_STATE_READ_ONLY: { domain: "user", retryable: false, meaning: "Broadcast state was written outside processBroadcastElement (in processElement or onTimer, where it is read-only).", action: "Change broadcast state only in processBroadcastElement, so every subtask makes the same change." },
  UNKNOWN_BROADCAST_STATE: { domain: "user", retryable: false, meaning: "A broadcast function asked for a broadcast state whose descriptor was not given to stream.broadcast(...).", action: "Pass every MapStateDescriptor the function uses to broadcast(...) (the message lists the declared ones)." },
  INVALID_BROADCAST_STATE: { domain: "config", retryable: false, meaning: "stream.broadcast(...) got something other than MapStateDescriptors with unique names and no TTL, codec or queryable name.", action: "Give broadcast(...) MapStateDescriptors with distinct names, without ttl, codec or setQueryable." },
  INVALID_STATE_VALUE: { domain: "user", retryable: false, meaning: "Operator list state was updated with something that is not an array.", action: "Pass an array to update()." },
  STATE_MUTATED_IN_PLACE: {
    domain: "user",
    retryable: false,
    meaning: 'With state.verify-copy-none on: a value of a state declared copy: "none" was changed in place after the state took it in or handed it out, and not written back; the message names the state and the key.',
    action: 'Write the changed value back (update, put, add), build a new value instead, or drop copy: "none" from the state.',
  },
  VALUE_NOT_COPYABLE: { domain: "user", retryable: false, meaning: "A value put in state cannot be copied (a class instance, a function, too deep or cyclic).", action: 'Keep plain data in state, or declare the state with copy "none" and never mutate the value.' },
  STATE_KIND_CHANGED: { domain: "config", retryable: false, meaning: "A restored state is now asked for as another kind of state.", action: "Keep the state's kind, or give the new state another name." },
  STATE_CODEC_MISMATCH: { domain: "config", retryable: false, meaning: "A restored state was written with another codec, or a newer version of it.", action: "Restore with the codec (and version) that wrote it, or a newer job." },
  STATE_MIGRATION_MISSING: { domain: "config", retryable: false, meaning: "A restored state was written by an older codec version and the new one declares no migrate().", action: "Add migrate(value, fromVersion) to the state's codec." },
  STATE_MIGRATION_FAILED: { domain: "config", retryable: false, meaning: "migrate() threw while restoring a state written by an older codec version.", action: "Fix migrate(); the message has its error." },
  STATE_DIR_LOCKED: { domain: "config", retryable: false, meaning: "The disk state backend's directory (state.backend.disk.dir) is in use by another live process running the same job.", action: "Give each process its own state.backend.disk.dir, or stop the other process (its pid is in the message)." },
  STATE_STORE_FAILED: { domain: "external", retryable: true, meaning: "The disk state backend's local store could not be opened, read or written (a full disk, a permission, a damaged file); the message has the store's error and directory.", action: "Free disk space or fix the directory; the job restarts per its restart strategy from its last checkpoint, rebuilding the local store (it is never trusted across restarts)." },
  STATE_STORE_FULL: { domain: "external", retryable: true, meaning: "The disk state backend's local store could not be written for lack of room: its device is (nearly) full, a quota is exhausted or a file size limit was hit (LMDB reports only an I/O error; the backend then probes the directory, and the message says what the probe found and how much space the device has).", action: "Free space on the device of state.backend.disk.dir (or give it a larger one). The job restarts per its restart strategy from its last checkpoint, rebuilding the local store; with no room it fails again and ends when the restart strategy gives up." },
  STATE_STORE_CORRUPT: { domain: "external", retryable: true, meaning: "An entry read from the disk state backend's local store could not be decoded (the store file was damaged).", action: "Nothing to do when checkpointing is on: the job restarts from its last checkpoint and rebuilds the store; check the disk if it recurs." },
  INVALID_STATE_BACKEND: { domain: "config", retryable: false, meaning: "An unknown state backend or a bad option of one was asked for (setStateBackend, state.backend*).", action: "Use heap or disk, a directory for state.backend.disk.dir, a positive integer for state.backend.disk.cache-size and state.backend.disk.cache-bytes (a size such as 64m), true or false for state.backend.disk.incremental and state.backend.disk.local-recovery (which needs incremental), and a non-negative integer for state.backend.disk.max-chain-length; the heap backend takes only incremental and maxChainLength (state.backend.heap.incremental, state.backend.heap.max-chain-length)." },
  CHECKPOINT_STORAGE_FULL: { domain: "external", retryable: true, meaning: "A checkpoint file could not be written: the file system has no room (ENOSPC), a quota is exhausted (EDQUOT) or a file size limit was hit (EFBIG); the message names the file. The part written is removed.", action: "Free space on the checkpoint directory's device or keep fewer checkpoints (state.checkpoints.num-retained). Meanwhile the checkpoint fails and the job goes on (execution.checkpointing.tolerable-failed-checkpoints); a job that fails restarts from its last complete checkpoint." },
  CHECKPOINT_FILE_TOO_LARGE: { domain: "external", retryable: true, meaning: "A task's checkpoint file would be larger than 2 GiB − 1 byte, the most a restore reads into memory (one subtask's heap keyed state, timers and operator state in one file; the disk backend's incremental shared files are streamed and have no such bound); it is not written, so no checkpoint exists that cannot be restored. The checkpoint fails.", action: "Raise the job's parallelism (each subtask writes its own file, so its state gets smaller), keep less state per key, or use the disk state backend with incremental checkpoints. Meanwhile checkpoints fail and the job goes on within execution.checkpointing.tolerable-failed-checkpoints." },
  INCREMENTAL_CHAIN_BROKEN: { domain: "external", retryable: true, meaning: "An incremental checkpoint's delta could not be completed because the previous snapshot of its chain was not written (that checkpoint failed); a delta on a missing file could not be restored.", action: "Nothing to do: this checkpoint fails and the backend's next checkpoint writes a full base. If it recurs, look at why the checkpoint before failed (the log says)." },
  STATE_CURSOR_UNSUPPORTED: { domain: "internal", retryable: false, meaning: "A value cursor was asked of a state with a TTL or a copy mode.", action: BUG },
  INVALID_KEY_GROUP_RANGE: { domain: "internal", retryable: false, meaning: "A state backend or timer service was given an invalid key-group range.", action: BUG },
  KEY_GROUP_OUT_OF_RANGE: { domain: "internal", retryable: false, meaning: "A key group outside a subtask's range reached its state or timers.", action: BUG },
  WATERMARK_REGRESSED: { domain: "internal", retryable: false, meaning: "The timer service saw the watermark go back.", action: BUG },
  WINDOW_STATE_MISSING: { domain: "internal", retryable: false, meaning: "A merged window has no state window.", action: BUG },
  WINDOW_MERGE_LATE: { domain: "internal", retryable: false, meaning: "Merging produced a window the watermark has already passed.", action: BUG },

  // --- Checkpoints, savepoints and restore ---
  INVALID_CHECKPOINT_CONFIG: { domain: "config", retryable: false, meaning: "A checkpoint setting (interval, timeout, mode...) is invalid.", action: "Fix the setting named in the message." },
  INVALID_RETAINED_CHECKPOINTS: { domain: "config", retryable: false, meaning: "The number of retained checkpoints is not an integer ≥ 1.", action: "Retain at least one checkpoint." },
  INVALID_RESTART_STRATEGY: { domain: "config", retryable: false, meaning: "A restart strategy has an invalid parameter.", action: "Fix the parameter named in the message (see --restart-strategy)." },
  INVALID_CHECKPOINT_STORAGE: { domain: "config", retryable: false, meaning: "The checkpoint storage module has no factory function at the named export.", action: "Export a function (location) => CheckpointStorage under that name." },
  INVALID_CHECKPOINT_NAME: {
    domain: "internal", retryable: false, meaning: "A checkpoint file, directory or job id is not a plain file name.", action: "For a job id, use letters, digits, '.', '_' and '-'; otherwise it is a bug in Eddy.",
    otherDomain: { domain: "config", when: "the name is the configured job id" },
  },
  INVALID_RESTORE: { domain: "config", retryable: false, meaning: "Both fromSavepoint and fromCheckpoint were given.", action: "Give one of them." },
  INVALID_CHECKPOINT_PATH: { domain: "config", retryable: false, meaning: "--from-checkpoint does not name a checkpoint directory (<root>/<jobId>/chk-<n>).", action: "Pass the chk-<n> directory of a retained checkpoint." },
  NOT_A_SAVEPOINT: { domain: "config", retryable: false, meaning: "--from-savepoint names a checkpoint, not a savepoint.", action: "Restore it with --from-checkpoint." },
  NON_RESTORED_STATE: { domain: "config", retryable: false, meaning: "The snapshot has state for operators (or state) the job no longer has.", action: "Give the operators their old uid, or pass --allow-non-restored-state to drop that state." },
  MAX_PARALLELISM_MISMATCH: { domain: "config", retryable: false, meaning: "An operator's max parallelism differs from the one its keyed state was written with.", action: "Keep the operator's max parallelism (it fixes the key groups of its state)." },
  CHECKPOINT_CORRUPT: { domain: "external", retryable: false, meaning: "A checkpoint or savepoint file fails its checks (truncated, checksum, links, malformed manifest).", action: "Restore from another checkpoint or savepoint; the message names the file and the fault." },
  CHECKPOINT_MISSING: { domain: "external", retryable: false, meaning: "A file a checkpoint or savepoint needs does not exist.", action: "Restore from a complete checkpoint or savepoint directory." },
  CHECKPOINT_UNSUPPORTED: { domain: "external", retryable: false, meaning: "A snapshot's state is in a format this Eddy cannot read.", action: "Restore it with the Eddy version that wrote it, or a newer one." },
  CHECKPOINT_UNSUPPORTED_VERSION: { domain: "external", retryable: false, meaning: "A snapshot's manifest has a version this Eddy cannot read.", action: "Restore it with the Eddy version that wrote it, or a newer one." },
  SNAPSHOT_EXISTS: { domain: "external", retryable: false, meaning: "A snapshot directory to write exists already; it is not replaced.", action: "Choose another target, or remove the old directory." },
  CHECKPOINT_FAILED: { domain: "external", retryable: true, meaning: "The final checkpoint of a finishing job failed.", action: "Check the checkpoint storage (space, permissions); the job may be run again." },
  CHECKPOINT_FAILURES: { domain: "external", retryable: true, meaning: "Too many checkpoints failed in a row and the job was failed (the restart strategy decides).", action: "Check the checkpoint storage and the checkpoint timeout; see execution.checkpointing.tolerable-failed-checkpoints." },
  CHECKPOINT_COMMAND_FAILED: { domain: "internal", retryable: true, meaning: "The tasks could not be told that a checkpoint completed, to resume their sources or to stop, so the job was failed.", action: "See the cause; the restart strategy restarts the job from its latest checkpoint." },
  TOO_MANY_CHECKPOINT_FAILURES: { domain: "external", retryable: true, meaning: "The checkpoint coordinator saw more failed checkpoints than tolerated.", action: "Check the checkpoint storage and the checkpoint timeout." },
  RECOVERY_BEHIND_COMMITTED: { domain: "external", retryable: false, meaning: "The checkpoint whose output sinks committed cannot be restored, and an older one would repeat output.", action: "Restore the damaged checkpoint, or set execution.checkpointing.recovery.allow-behind-committed=true to accept duplicates." },
  SAVEPOINT_NEEDS_CHECKPOINTING: { domain: "config", retryable: false, meaning: "A savepoint was asked of a job that runs without checkpointing.", action: "Enable checkpointing (e.g. --checkpoint-interval)." },
  SAVEPOINT_NEEDS_ALIGNMENT: { domain: "config", retryable: false, meaning: "A savepoint was asked of a job that checkpoints at-least-once (unaligned).", action: "Run the job exactly-once to take savepoints." },
  SAVEPOINT_FAILED: {
    domain: "external", retryable: true, meaning: "A savepoint (or a stop with drain) failed or could not be taken in time.", action: "Check the savepoint directory and the message; ask again.",
    otherDomain: { domain: "user", when: "the job cannot start one (it has failed or finished)" },
  },
  SAVEPOINT_NOT_FOUND: { domain: "external", retryable: true, meaning: "The savepoint directory to move does not exist.", action: "Check the path." },
  SAVEPOINT_EXISTS: { domain: "user", retryable: false, meaning: "The target of a savepoint move exists already; the savepoint stays where it was.", action: "Choose another target directory." },
  SAVEPOINT_MOVE_FAILED: { domain: "external", retryable: true, meaning: "Moving a savepoint to its target failed (the savepoint stays where it was).", action: "Check the target's file system and permissions." },
  UNKNOWN_OPERATOR: { domain: "user", retryable: false, meaning: "The savepoint has no operator with that uid.", action: "Use a uid the message lists." },
  CHECKPOINT_ALREADY_COMMITTED: { domain: "internal", retryable: false, meaning: "A complete checkpoint was written to again.", action: BUG },
  CHECKPOINT_NOT_COMPLETE: { domain: "internal", retryable: false, meaning: "Retention was asked around a checkpoint that is not complete.", action: BUG },
  CHECKPOINT_PROTOCOL_VIOLATION: { domain: "internal", retryable: false, meaning: "Checkpoint completions arrived out of order.", action: BUG },
  BARRIER_PROTOCOL_VIOLATION: { domain: "internal", retryable: false, meaning: "A task's barrier alignment saw barriers that break the protocol.", action: BUG },
  UNEXPECTED_BARRIER: { domain: "internal", retryable: false, meaning: "A task received a checkpoint barrier with checkpointing off.", action: BUG },
  INVALID_CHECKPOINT_ID: { domain: "internal", retryable: false, meaning: "The checkpoint storage was given an invalid checkpoint id.", action: BUG },
  INVALID_CHECKPOINT_META: { domain: "internal", retryable: false, meaning: "A checkpoint file's header would not be readable.", action: BUG },
  INVALID_SNAPSHOT_SECTIONS: { domain: "internal", retryable: false, meaning: "A snapshot file was written with invalid or duplicate sections.", action: BUG },
  DUPLICATE_KEYED_STATE: { domain: "internal", retryable: false, meaning: "An operator registered its keyed state twice in a snapshot.", action: BUG },
  DUPLICATE_OPERATOR_STATE: { domain: "internal", retryable: false, meaning: "An operator registered an operator state twice in a snapshot.", action: BUG },

  // --- Running a job: modes, threads, the task ---
  INVALID_CONFIG: { domain: "config", retryable: false, meaning: "A configuration value is invalid, or checkpointing keys lack execution.checkpointing.interval.", action: "Fix the value as the message says." },
  UNKNOWN_CONFIG_KEY: { domain: "config", retryable: false, meaning: "A configuration key is not known.", action: "Use a key the message lists." },
  INVALID_WORKERS: { domain: "config", retryable: false, meaning: "The number of worker threads is not a positive integer.", action: "Give a positive integer." },
  INVALID_CHANNEL_BUFFER: { domain: "config", retryable: false, meaning: "The channel buffer size is not a positive number of bytes.", action: "Give a positive number of bytes." },
  CLOCK_NEEDS_INLINE: { domain: "config", retryable: false, meaning: "A custom clock was given to a job on worker threads.", action: "Run with mode 'inline' to use a custom clock." },
  JOB_NOT_IMPORTABLE: { domain: "config", retryable: false, meaning: "Mode 'threads' was asked, but worker threads cannot import the job.", action: "Export the job from its module as the message says, or run inline." },
  JOB_NOT_FOUND: { domain: "config", retryable: false, meaning: "A worker thread did not find the job at the export it was given.", action: "Export the job under the same name in every process." },
  GATEWAY_PROTOCOL: { domain: "config", retryable: false, meaning: "A task manager and its coordinator speak different versions of the gateway protocol, or a message is not part of it.", action: "Run every part of the job from the same Eddy; if they are, report it as a bug." },
  PLAN_MISMATCH: { domain: "config", retryable: false, meaning: "A worker built a different graph than the coordinator.", action: "Build the job deterministically (no randomness, clock or environment in the graph's shape)." },
  JOB_CANCELLED: { domain: "user", retryable: false, meaning: "The job was cancelled.", action: "None: cancelling ends the job." },
  TASK_FAILED: { domain: "internal", retryable: false, meaning: "A task failed with an error that is not an EddyError.", action: BUG },
  WORKER_START_FAILED: { domain: "internal", retryable: false, meaning: "The worker threads could not be started.", action: "Check the message (module loading, resources); else report it as a bug." },
  WORKER_DIED: { domain: "internal", retryable: false, meaning: "A worker thread crashed or exited (process.exit() in user code, or the thread was killed).", action: "Remove process.exit() from user code; else report it as a bug." },
  WORKER_FAILED: { domain: "internal", retryable: false, meaning: "A worker thread failed with an error that is not an EddyError.", action: BUG },
  COORDINATOR_FAILED: { domain: "internal", retryable: false, meaning: "The coordinator of the worker threads failed.", action: BUG },
  NO_CHANNEL_RING: { domain: "internal", retryable: false, meaning: "A worker has no shared-memory ring for a channel.", action: BUG },
  NO_SUCH_READER: { domain: "internal", retryable: false, meaning: "A worker has no reader for a source subtask.", action: BUG },
  UNKNOWN_ERROR_CODE: { domain: "internal", retryable: false, meaning: "A worker thread or an HTTP answer carried a code this Eddy does not know, or none; the message keeps the original.", action: "Run the same Eddy version on both sides; else report it as a bug." },
  INTERNAL: { domain: "internal", retryable: false, meaning: "An invariant of Eddy broke, or an HTTP endpoint failed unexpectedly (answered 500).", action: BUG },

  // --- Control API, the CLI and the job registry ---
  USAGE: { domain: "user", retryable: false, meaning: "An eddy command was called with wrong arguments.", action: "See eddy --help." },
  INVALID_STOP: { domain: "user", retryable: false, meaning: "A stop with drain was asked without a savepoint.", action: "Stop with { savepoint: true, drain: true }." },
  JOB_NOT_RUNNING: { domain: "user", retryable: false, meaning: "The job is not running (not yet, or no longer), so it cannot take a savepoint or stop.", action: "Ask again while the job runs." },
  JOB_STOPPING: { domain: "user", retryable: false, meaning: "The job is already stopping.", action: "Wait for it to end." },
  INVALID_JOB_ID: { domain: "user", retryable: false, meaning: "A job id has characters other than letters, digits, '.', '_' and '-', or is too long.", action: "Use a job id of at most 100 such characters, starting with a letter or digit." },
  UNKNOWN_JOB: { domain: "user", retryable: false, meaning: "No running job has that id (or this job has another id).", action: "Use an id from eddy list." },
  JOB_ID_IN_USE: { domain: "config", retryable: false, meaning: "A running job already has this job id.", action: "Pass --job-id to give this job another id." },
  JOB_UNREACHABLE: { domain: "external", retryable: true, meaning: "The job's control API cannot be reached (gone, or its registry entry or token is unusable).", action: "Check that the job runs (eddy list)." },
  CONTROL_TIMEOUT: { domain: "external", retryable: true, meaning: "The job's control API did not answer in time.", action: "Try again; the job may be busy." },
  INVALID_HTTP_BOUNDS: { domain: "internal", retryable: false, meaning: "An HTTP endpoint was given invalid bounds (sizes, deadlines).", action: BUG },
  CONTROL_SERVER_FAILED: { domain: "external", retryable: true, meaning: "The job's control API could not be started.", action: "Check the message (port, $EDDY_HOME permissions), or run with --no-control." },

  // --- HTTP answers of the control API and the state servers ---
  UNAUTHORIZED: { domain: "user", retryable: false, meaning: "HTTP 401: the bearer token is missing or wrong.", action: "Send the token from the job's token file." },
  BAD_REQUEST: { domain: "user", retryable: false, meaning: "HTTP 400: the request is malformed (parameters, body, URL).", action: "Fix the request as the message says." },
  NOT_FOUND: { domain: "user", retryable: false, meaning: "HTTP 404: no such endpoint.", action: "Check the path." },
  UNKNOWN_VERTEX: { domain: "user", retryable: false, meaning: "HTTP 404 from the REST API: the job has no vertex (task) with that id.", action: "Use an id from GET /v1/job/vertices (the message lists them)." },
  UNKNOWN_CHECKPOINT: { domain: "user", retryable: false, meaning: "HTTP 404 from the REST API: the job keeps no statistics of a checkpoint with that id (never taken, or older than the kept history).", action: "Use an id from GET /v1/job/checkpoints." },
  METHOD_NOT_ALLOWED: { domain: "user", retryable: false, meaning: "HTTP 405: the endpoint takes another method.", action: "Use the method the message names." },
  BODY_TOO_LARGE: { domain: "user", retryable: false, meaning: "HTTP 413: the request body is over the limit.", action: "Send a smaller body." },
  HEADERS_TOO_LARGE: { domain: "user", retryable: false, meaning: "HTTP 431: the request line and headers are over the limit.", action: "Send a shorter URL and fewer headers." },
  REQUEST_TIMEOUT: { domain: "user", retryable: false, meaning: "HTTP 408: the request did not arrive in time.", action: "Send the whole request promptly." },
  BUSY: { domain: "external", retryable: true, meaning: "HTTP 503: too many requests are in flight.", action: "Retry later." },
  CSRF_REJECTED: { domain: "user", retryable: false, meaning: "HTTP 403 from the web UI: a POST made with the UI's session cookie lacks the session's CSRF token (X-Eddy-CSRF), or comes from another origin.", action: "Use the web UI's own buttons, or call the API with the bearer token instead of the cookie." },
  LOGIN_LINK_INVALID: { domain: "user", retryable: false, meaning: "HTTP 403 from the web UI: the one-time login link is unknown, used already or expired.", action: "Run 'eddy ui <jobId>' for a new link (each works once, within a minute)." },
  TOO_MANY_EVENT_STREAMS: { domain: "external", retryable: true, meaning: "HTTP 503 from the web UI: the job serves as many live event streams (open UI pages) as it allows.", action: "Close another page of the job's UI, then reload." },
  PROFILE_FAILED: { domain: "external", retryable: true, meaning: "A CPU profile of a worker thread could not be taken (the inspector refused, or the thread ended meanwhile).", action: "Retry; the message says what failed." },
  PROFILE_NOT_AVAILABLE: { domain: "config", retryable: false, meaning: "A CPU profile was asked of a job that has no worker threads to profile (inline mode, not running yet or any more), or of a thread it does not have, or while another profile is being taken.", action: "Profile a job running on worker threads (the default of eddy run), one profile at a time, a thread from 0 to its number of workers - 1." },
  UI_NOT_BUILT: { domain: "config", retryable: false, meaning: "HTTP 503 from the web UI: the UI's bundle is not in the installed package (dist/ui).", action: "Rebuild the package (npm run build, which npm ci runs); else report it as a bug." },

  // --- Queryable state ---
  BAD_KEY: { domain: "user", retryable: false, meaning: "A query key is missing, not valid JSON of a key, or too long.", action: "Pass the key as keyBy returns it, as JSON." },
  NOT_OWNER: { domain: "user", retryable: false, meaning: "The state server does not hold the key's key group (the location is stale).", action: "Ask for the location again (the query client does so itself)." },
  NOT_READY: { domain: "external", retryable: true, meaning: "A subtask has no state server yet (the job is starting or restarting).", action: "Retry." },
  NOT_SERVING: { domain: "external", retryable: true, meaning: "The state server refuses reads after its task failed, until the job restarts.", action: "Retry." },
  STATE_SERVER_FAILED: { domain: "external", retryable: true, meaning: "A state server could not be started.", action: "Check the message (ports, resources)." },
  STATE_SERVER_TIMEOUT: { domain: "external", retryable: true, meaning: "A state server did not answer in time.", action: "Retry; the job may be busy." },
  STATE_SERVER_UNREACHABLE: { domain: "external", retryable: true, meaning: "A state server cannot be reached (gone, or restarting).", action: "Retry; the location will be asked for again." },
  VALUE_NOT_ENCODABLE: { domain: "user", retryable: false, meaning: "A queried state value cannot be encoded as JSON.", action: "Keep plain data (with bigint, Map, Set, Date, Uint8Array) in queryable state." },
  VALUE_TOO_LARGE: { domain: "user", retryable: false, meaning: "A queried state value is larger as JSON than the limit.", action: "Query smaller values (split the state)." },
  CLIENT_CLOSED: { domain: "user", retryable: false, meaning: "The query client was used after close().", action: "Create a new client." },
} as const satisfies Record<string, ErrorCodeSpec>;

/** A code of ERROR_CODES: the only codes an EddyError carries. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Whether `code` (text from a worker thread or an HTTP answer) is a code of ERROR_CODES. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERROR_CODES, code);
}

/** The spec of `code`, typed as the interface (the table's literal types are narrower). */
export function errorCodeSpec(code: ErrorCode): ErrorCodeSpec {
  return ERROR_CODES[code];
}
