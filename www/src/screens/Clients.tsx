import type { ClientRow } from "../domain";
import { formatEur } from "../format";
import { useClients } from "../queries";
import { objectSchema } from "../table/capabilities";
import { LedgerTableView } from "../table/LedgerTableView";
import type { TableSpec } from "../table/useLedgerTable";
import { useTableScreen } from "../table/useTableScreen";
import { usePageTitle } from "./usePageTitle";

const ROW_SCHEMA = objectSchema({
  id: "integer",
  name: "string",
  segment: "string",
  paymentTermsDays: "integer",
  openInvoices: "integer",
  outstanding: "integer",
  overdue: "integer",
});

const money = (id: "outstanding" | "overdue", label: string) => ({
  id,
  label,
  sortable: true,
  numeric: true,
  sortValue: (r: ClientRow) => r[id],
  cell: (r: ClientRow) => formatEur(r[id]),
});

export const CLIENTS_SPEC: TableSpec<ClientRow> = {
  type: "clients.list",
  description: "Clients with their payment terms and balances. Amounts are in cents.",
  ariaLabel: "Clients",
  storageKey: "rt:colcfg:clients",
  rowAttr: "data-client-row",
  columns: [
    { id: "name", label: "Client", pinned: true, sortable: true, sortValue: (r) => r.name, cell: (r) => r.name },
    {
      id: "segment",
      label: "Segment",
      sortable: true,
      sortValue: (r) => r.segment,
      cell: (r) => r.segment,
      filter: { kind: "select", value: (r) => r.segment },
    },
    {
      id: "payment_terms_days",
      label: "Terms",
      sortable: true,
      numeric: true,
      sortValue: (r) => r.payment_terms_days,
      cell: (r) => `${r.payment_terms_days} days`,
    },
    {
      id: "open_invoices",
      label: "Open",
      sortable: true,
      numeric: true,
      sortValue: (r) => r.open_invoices,
      cell: (r) => String(r.open_invoices),
    },
    money("outstanding", "Outstanding"),
    money("overdue", "Overdue"),
    { id: "email", label: "Billing email", sortable: false, hiddenByDefault: true, cell: (r) => r.email },
  ],
  defaultSort: { key: "outstanding", direction: "desc" },
  urlFilters: [{ key: "q", defaultValue: "", description: "Substring search on the client name." }],
  search: (r) => r.name,
  summary: (r) => ({
    id: r.id,
    name: r.name,
    segment: r.segment,
    paymentTermsDays: r.payment_terms_days,
    openInvoices: r.open_invoices,
    outstanding: r.outstanding,
    overdue: r.overdue,
  }),
  selection: false,
  rowLabel: (r) => r.name,
};

export function Clients() {
  usePageTitle("/receivables/clients");
  const clients = useClients();
  const t = useTableScreen(CLIENTS_SPEC, clients, ROW_SCHEMA);
  return (
    <section className="screen">
      <h1>Clients</h1>
      <LedgerTableView t={t} searchLabel="Search clients" clearKeys={["q"]} />
    </section>
  );
}
