import type { InvoiceRow } from "../domain";
import { useAllInvoices } from "../queries";
import { objectSchema } from "../table/capabilities";
import { LedgerTableView } from "../table/LedgerTableView";
import type { TableSpec } from "../table/useLedgerTable";
import { useTableScreen } from "../table/useTableScreen";
import { amountColumn, clientColumn, dueColumn, invoiceSearch, referenceColumn, segmentColumn } from "./invoiceColumns";
import { usePageTitle } from "./usePageTitle";

const STATUS_LABELS: Record<string, string> = { draft: "Draft", sent: "Sent", paid: "Paid" };

const ROW_SCHEMA = objectSchema({
  id: "integer",
  reference: "string",
  client: "string",
  status: "string",
  amount: "integer",
  issueDate: "string",
  dueDate: "string",
});

export const ALL_SPEC: TableSpec<InvoiceRow> = {
  type: "invoices.all",
  description: "The full ledger across all statuses (draft, sent, paid). Amounts are in cents.",
  ariaLabel: "All invoices",
  storageKey: "rt:colcfg:all-invoices",
  rowAttr: "data-invoice-row",
  columns: [
    referenceColumn,
    clientColumn,
    segmentColumn,
    {
      id: "status",
      label: "Status",
      sortable: true,
      sortValue: (r) => r.status,
      cell: (r) => <span className={`status ${r.status}`}>{STATUS_LABELS[r.status] ?? r.status}</span>,
      filter: {
        kind: "select",
        value: (r) => r.status,
        options: Object.entries(STATUS_LABELS).map(([value, label]) => ({ value, label })),
      },
    },
    amountColumn,
    {
      id: "issue_date",
      label: "Issued",
      sortable: true,
      sortValue: (r) => r.issue_date,
      cell: (r) => r.issue_date,
      filter: { kind: "date-range", value: (r) => r.issue_date },
    },
    dueColumn(false),
  ],
  defaultSort: { key: "due_date", direction: "desc" },
  urlFilters: [{ key: "q", defaultValue: "", description: "Substring search on the invoice reference and client name." }],
  search: invoiceSearch,
  summary: (r) => ({
    id: r.id,
    reference: r.reference,
    client: r.client_name,
    status: r.status,
    amount: r.amount,
    issueDate: r.issue_date,
    dueDate: r.due_date,
  }),
  selection: false,
  rowLabel: (r) => r.reference,
  assistantReset: true,
};

export function AllInvoices() {
  usePageTitle("/receivables/all");
  const invoices = useAllInvoices();
  const t = useTableScreen(ALL_SPEC, invoices, ROW_SCHEMA);
  return (
    <section className="screen">
      <h1>All invoices</h1>
      <LedgerTableView t={t} searchLabel="Search invoices" clearKeys={["q"]} />
    </section>
  );
}
