import { useMemo, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { rpc, type Role } from "../api";
import type { InvoiceRow } from "../domain";
import { formatEur } from "../format";
import { useAging, usePendingInvoices, useSummary } from "../queries";
import { objectSchema } from "../table/capabilities";
import { LedgerTableView } from "../table/LedgerTableView";
import type { TableSpec } from "../table/useLedgerTable";
import { useTableScreen } from "../table/useTableScreen";
import { ChaseDialog } from "./ChaseDialog";
import { amountColumn, clientColumn, dueColumn, invoiceSearch, referenceColumn, segmentColumn } from "./invoiceColumns";
import { usePageTitle } from "./usePageTitle";

const ROW_SCHEMA = objectSchema({
  id: "integer",
  reference: "string",
  client: "string",
  amount: "integer",
  dueDate: "string",
  daysOverdue: "integer",
  remindersSent: "integer",
});

export const PENDING_SPEC: TableSpec<InvoiceRow> = {
  type: "invoices.pending",
  description: "Sent but unpaid invoices: the chasing worklist. Amounts are in cents.",
  ariaLabel: "Pending invoices",
  storageKey: "rt:colcfg:pending-invoices",
  rowAttr: "data-invoice-row",
  columns: [
    referenceColumn,
    clientColumn,
    segmentColumn,
    amountColumn,
    dueColumn(true),
    {
      id: "days_overdue",
      label: "Overdue",
      sortable: true,
      numeric: true,
      sortValue: (r) => r.days_overdue,
      cell: (r) => (r.days_overdue > 0 ? `${r.days_overdue} days` : "—"),
    },
    {
      id: "reminders",
      label: "Chased",
      sortable: true,
      numeric: true,
      sortValue: (r) => r.collection?.reminders_sent ?? 0,
      cell: (r) => String(r.collection?.reminders_sent ?? 0),
    },
  ],
  defaultSort: { key: "days_overdue", direction: "desc" },
  urlFilters: [
    { key: "q", defaultValue: "", description: "Substring search on the invoice reference and client name." },
    { key: "due", defaultValue: "all", description: 'Due status: "all", "overdue" (past due) or "current" (not yet due).' },
    {
      key: "chase",
      defaultValue: "",
      description:
        "Id of the invoice whose chase dialog should be open; empty closes it. An open dialog is what enables and binds domain:update-collection-status.",
    },
  ],
  search: invoiceSearch,
  narrow: (rows, params) => {
    const due = params.get("due");
    if (due === "overdue") return rows.filter((r) => r.days_overdue > 0);
    if (due === "current") return rows.filter((r) => r.days_overdue <= 0);
    return rows;
  },
  summary: (r) => ({
    id: r.id,
    reference: r.reference,
    client: r.client_name,
    amount: r.amount,
    dueDate: r.due_date,
    daysOverdue: r.days_overdue,
    remindersSent: r.collection?.reminders_sent ?? 0,
  }),
  selection: true,
  rowLabel: (r) => r.reference,
};

export function PendingInvoices({ role }: { role: Role }) {
  usePageTitle("/receivables/pending");
  const invoices = usePendingInvoices();
  const t = useTableScreen(PENDING_SPEC, invoices, ROW_SCHEMA);

  const chaseId = Number(t.params.get("chase") ?? "");
  const chaseRow = useMemo(
    () => (Number.isInteger(chaseId) && chaseId > 0 ? (t.rows.find((r) => r.id === chaseId) ?? null) : null),
    [t.rows, chaseId],
  );

  return (
    <section className="screen">
      <h1>Pending invoices</h1>
      <KpiCards />
      <LedgerTableView
        t={t}
        searchLabel="Search invoices"
        clearKeys={["q", "due"]}
        toolbar={
          <>
            <label className="field">
              <span>Due status</span>
              <select
                aria-label="Filter by due status"
                value={t.params.get("due") ?? "all"}
                onChange={(e) => t.setUrlFilters({ due: e.target.value })}
              >
                <option value="all">All pending</option>
                <option value="overdue">Overdue only</option>
                <option value="current">Not yet due</option>
              </select>
            </label>
            {role === "controller" && t.selectedIds.length > 0 && (
              <RecordPayment ids={t.selectedIds} onDone={() => t.setSelection([])} />
            )}
          </>
        }
        rowActions={(row) => (
          <button type="button" onClick={() => t.setUrlFilters({ chase: String(row.id) })}>
            Chase
          </button>
        )}
      />
      <ChaseDialog row={chaseRow} onClose={() => t.setUrlFilters({ chase: "" })} />
    </section>
  );
}

function RecordPayment({ ids, onDone }: { ids: number[]; onDone: () => void }) {
  const queryClient = useQueryClient();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <span className="record-payment">
      <button
        type="button"
        className="primary"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError(null);
          try {
            for (const id of ids) await rpc("mark-invoice-paid", { id });
            onDone();
          } catch (e) {
            setError(e instanceof Error ? e.message : String(e));
          } finally {
            setBusy(false);
            await queryClient.invalidateQueries();
          }
        }}
      >
        Record payment
      </button>
      {error && <span role="alert">{error}</span>}
    </span>
  );
}

function KpiCards() {
  const summary = useSummary().data;
  const aging = useAging().data;
  const over90 = aging?.find((b) => b.id === "90+")?.count;
  const cards = [
    { label: "Outstanding", value: summary ? formatEur(summary.outstanding) : "—", tone: "" },
    {
      label: "Overdue",
      value: summary ? formatEur(summary.overdue) : "—",
      hint: summary ? `${summary.overdueCount} invoices` : undefined,
      tone: "negative",
    },
    { label: "Collected (30d)", value: summary ? formatEur(summary.collected30d) : "—", tone: "positive" },
    {
      label: "Avg days to pay",
      value: summary && summary.averageDaysToPay !== null ? String(summary.averageDaysToPay) : "—",
      hint: over90 !== undefined ? `${over90} over 90 days` : undefined,
      tone: "",
    },
  ];
  return (
    <div className="kpis" role="group" aria-label="Key figures">
      {cards.map((c) => (
        <div key={c.label} className={`kpi ${c.tone}`} role="group" aria-label={c.label}>
          <div className="kpi-label">{c.label}</div>
          <div className="kpi-value">{c.value}</div>
          {c.hint && <div className="kpi-hint">{c.hint}</div>}
        </div>
      ))}
    </div>
  );
}
