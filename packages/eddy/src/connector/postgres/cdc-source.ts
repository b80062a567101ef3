/**
 * `PostgresCdcSource` (docs/connectors/postgres-cdc.md): the changes of PostgreSQL tables as a
 * changelog stream, `env.fromSource(PostgresCdcSource.create({ connection, tables, slot,
 * publication }), WatermarkStrategy..., "orders-cdc")`. A consistent snapshot of the tables' rows
 * first (split by primary-key ranges across the source's readers), then the changes from the
 * job's replication slot, each row's history exactly once (cdc-splits.ts says how); the slot's
 * position is confirmed to the server only when a checkpoint holding it completes.
 */
import type { Source } from "../source.ts";
import { cdcEnumerator, parseCdcEnumeratorState } from "./cdc-enumerator.ts";
import { cdcConfig, type ChangeRecord, type PostgresCdcSourceOptions } from "./cdc-options.ts";
import { cdcReader } from "./cdc-reader.ts";
import type { CdcSplit } from "./cdc-splits.ts";
import { loadPg } from "./pg-client.ts";

function create(options: PostgresCdcSourceOptions): Source<ChangeRecord, CdcSplit> {
  const config = cdcConfig(options);
  loadPg();
  return {
    boundedness: "continuous",
    createEnumerator: (context) => cdcEnumerator(context, config),
    restoreEnumerator: (context, state) =>
      state === undefined || (Array.isArray(state) && state.length === 0) ? cdcEnumerator(context, config) : cdcEnumerator(context, config, parseCdcEnumeratorState(state)),
    createReader: (context) => cdcReader(context, config),
  };
}

export const PostgresCdcSource = { create } as const;
