import { useQuery } from "@tanstack/react-query";
import { rpc } from "./api";
import type { AgingBucket, ClientRow, InvoiceRow, Summary } from "./domain";

/** Query keys start with "rpc", the capability id and its input. */
export function useRpcQuery<T>(capabilityId: string, input: object = {}) {
  return useQuery({
    queryKey: ["rpc", capabilityId, input],
    queryFn: () => rpc<T>(capabilityId, input),
  });
}

export const usePendingInvoices = () => useRpcQuery<InvoiceRow[]>("list-invoices", { kind: "pending" });
export const useAllInvoices = () => useRpcQuery<InvoiceRow[]>("list-invoices", { kind: "all" });
export const useClients = () => useRpcQuery<ClientRow[]>("list-clients");
export const useSummary = () => useRpcQuery<Summary>("receivables-summary");
export const useAging = () => useRpcQuery<AgingBucket[]>("collections-aging");
