import type { JsonSchema } from "@dpas/host";
import { useAgentComponent } from "@dpas/host/react";
import { tableCapabilities } from "./capabilities";
import { useLatest, useLedgerTable, type LedgerTable, type TableSpec } from "./useLedgerTable";

/** A table screen's state, with its view capabilities registered while it is mounted. */
export function useTableScreen<R extends { id: number }>(
  spec: TableSpec<R>,
  data: R[] | undefined,
  rowSchema: JsonSchema,
): LedgerTable<R> {
  const t = useLedgerTable(spec, data);
  const ref = useLatest(t);
  useAgentComponent({ type: spec.type, description: spec.description, ...tableCapabilities(ref, rowSchema) });
  return t;
}
