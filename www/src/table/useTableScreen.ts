import { useCallback, useEffect, useRef } from "react";
import type { JsonSchema } from "@dpas/host";
import { CapabilityError } from "@dpas/host";
import { useAgentComponent } from "@dpas/host/react";
import { tableCapabilities, type WhenLoaded } from "./capabilities";
import { useLatest, useLedgerTable, type LedgerTable, type TableSpec } from "./useLedgerTable";

/** The rows' query as the screen has it (react-query's `data` and `error`). */
export interface RowsQuery<R> {
  data: R[] | undefined;
  error: unknown;
}

/** A table screen's state, with its view capabilities registered while it is mounted. */
export function useTableScreen<R extends { id: number }>(
  spec: TableSpec<R>,
  query: RowsQuery<R>,
  rowSchema: JsonSchema,
): LedgerTable<R> {
  const t = useLedgerTable(spec, query.data);
  const ref = useLatest(t);
  const whenLoaded = useLoadGate(t.loaded, query.error);
  useAgentComponent({ type: spec.type, description: spec.description, ...tableCapabilities(ref, rowSchema, whenLoaded) });
  return t;
}

interface Waiter {
  resolve: () => void;
  reject: (reason: unknown) => void;
}

/** Until the first rows are committed the table is empty only because it is loading: a read
 *  then would tell the model "no rows" (an assistant asked right after the page opened
 *  answered "nothing is overdue"). The gate resolves once loaded rows are committed, rejects
 *  with a typed error when the load failed, and with the signal's reason when the host
 *  abandons the call (its read deadline). */
function useLoadGate(loaded: boolean, error: unknown): WhenLoaded {
  const state = useLatest({ loaded, error });
  const waiters = useRef(new Set<Waiter>());
  useEffect(() => {
    if (!loaded && !error) return;
    for (const waiter of waiters.current) answer(waiter, state.current);
    waiters.current.clear();
  }, [loaded, error, state]);
  return useCallback((signal: AbortSignal) => {
    if (state.current.loaded) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      if (state.current.error) return answer(waiter, state.current);
      if (signal.aborted) return reject(signal.reason);
      waiters.current.add(waiter);
      signal.addEventListener(
        "abort",
        () => {
          waiters.current.delete(waiter);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }, [state]);
}

function answer(waiter: Waiter, { loaded, error }: { loaded: boolean; error: unknown }) {
  if (loaded) return waiter.resolve();
  const why = error instanceof Error ? error.message : String(error);
  waiter.reject(
    new CapabilityError("PRECONDITION_FAILED", `The table's rows could not be loaded: ${why}`, "after-delay"),
  );
}
