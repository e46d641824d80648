import type { InvoiceRow } from "../domain";
import { formatEur } from "../format";
import type { ColumnSpec } from "../table/useLedgerTable";

export const referenceColumn: ColumnSpec<InvoiceRow> = {
  id: "reference",
  label: "Invoice",
  pinned: true,
  sortable: true,
  sortValue: (r) => r.reference,
  cell: (r) => <span className="ref">{r.reference}</span>,
};

export const clientColumn: ColumnSpec<InvoiceRow> = {
  id: "client_name",
  label: "Client",
  sortable: true,
  sortValue: (r) => r.client_name,
  cell: (r) => r.client_name,
  filter: { kind: "select", value: (r) => r.client_name },
};

export const segmentColumn: ColumnSpec<InvoiceRow> = {
  id: "segment",
  label: "Segment",
  sortable: false,
  cell: (r) => r.segment,
  filter: { kind: "select", value: (r) => r.segment },
};

export const amountColumn: ColumnSpec<InvoiceRow> = {
  id: "amount",
  label: "Amount",
  sortable: true,
  numeric: true,
  sortValue: (r) => r.amount,
  cell: (r) => formatEur(r.amount),
  filter: { kind: "number-range", value: (r) => r.amount / 100 },
};

export const dueColumn = (filter: boolean): ColumnSpec<InvoiceRow> => ({
  id: "due_date",
  label: "Due",
  sortable: true,
  sortValue: (r) => r.due_date,
  cell: (r) => r.due_date,
  ...(filter ? { filter: { kind: "date-range" as const, value: (r: InvoiceRow) => r.due_date } } : {}),
});

export const invoiceSearch = (r: InvoiceRow) => `${r.reference} ${r.client_name}`;
