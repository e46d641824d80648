import { useEffect, useId, useRef, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { rpc } from "../api";
import type { InvoiceRow } from "../domain";
import { formatEur, utcToday } from "../format";
import { useAgentComponent } from "@dpas/host/react";

const DATE = { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" };

export const UNAVAILABLE_REASON = "Open an invoice's chase dialog first";

export function boundNote(row: InvoiceRow): string {
  return `Bound to ${row.reference} (${row.client_name}, ${formatEur(row.amount)}, ${row.days_overdue} days overdue).`;
}

/** Always mounted on the pending screen: the `domain:update-collection-status` reference is
 *  available, and bound to the invoice on screen, exactly while the dialog is open. */
export function ChaseDialog({ row, onClose }: { row: InvoiceRow | null; onClose: () => void }) {
  // Functions are read from the latest render, and availability is re-evaluated after every
  // commit, so opening and closing the dialog flips the reference without a version bump.
  useAgentComponent({
    type: "invoices.chase",
    description: "The chase dialog of one pending invoice: its collection (reminder) record.",
    procedures: [
      {
        path: "update-collection-status",
        description:
          "Write the chase record (last reminder date, reminders sent, expected payment date, note) of the invoice in the open chase dialog. Only the fields you supply change; null erases one.",
        effect: "server-mutation",
        confirmation: "never",
        inputSchema: {
          type: "object",
          properties: {
            invoiceId: { type: "integer", exclusiveMinimum: 0, maximum: 9007199254740991 },
            lastReminderDate: { anyOf: [{ ...DATE, description: "When the last chase email went out." }, { type: "null" }] },
            remindersSent: { type: "integer", minimum: 0, maximum: 99 },
            expectedPaymentDate: {
              anyOf: [{ ...DATE, description: "The payment date the client promised." }, { type: "null" }],
            },
            note: { anyOf: [{ type: "string", maxLength: 500 }, { type: "null" }] },
          },
          required: ["invoiceId"],
          additionalProperties: false,
        },
        // The host captures the bound keys once, at registration: always name invoiceId
        // (null while no dialog is open, when the reference is unavailable anyway).
        bind: () => ({ invoiceId: row?.id ?? null }),
        describe: () => (row ? boundNote(row) : undefined),
        availability: {
          when: () => row !== null,
          unavailableReason: UNAVAILABLE_REASON,
        },
      },
    ],
  });

  if (!row) return null;
  // Remount the form whenever the stored record changes (e.g. the assistant wrote it).
  return <ChaseForm key={`${row.id}:${JSON.stringify(row.collection)}`} row={row} onClose={onClose} />;
}

function ChaseForm({ row, onClose }: { row: InvoiceRow; onClose: () => void }) {
  const queryClient = useQueryClient();
  const titleId = useId();
  const [expected, setExpected] = useState(row.collection?.expected_payment_date ?? "");
  const [note, setNote] = useState(row.collection?.note ?? "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);

  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      await rpc("update-collection-status", {
        invoiceId: row.id,
        remindersSent: Math.min(99, (row.collection?.reminders_sent ?? 0) + 1),
        lastReminderDate: utcToday(),
        expectedPaymentDate: expected || null,
        note: note || null,
      });
      await queryClient.invalidateQueries();
      onClose();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="dialog-backdrop screen-dialog" onKeyDown={(e) => e.key === "Escape" && onClose()}>
      <div role="dialog" aria-modal="true" aria-labelledby={titleId} className="dialog">
        <h2 id={titleId}>Chase {row.reference}</h2>
        <dl className="facts">
          <dt>Client</dt>
          <dd>{row.client_name}</dd>
          <dt>Amount</dt>
          <dd>{formatEur(row.amount)}</dd>
          <dt>Due</dt>
          <dd>
            {row.due_date}
            {row.days_overdue > 0 ? ` (${row.days_overdue} days overdue)` : ""}
          </dd>
          <dt>Reminders sent</dt>
          <dd>{row.collection?.reminders_sent ?? 0}</dd>
          {row.collection?.last_reminder_date && (
            <>
              <dt>Last reminder</dt>
              <dd>{row.collection.last_reminder_date}</dd>
            </>
          )}
        </dl>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <label className="field">
            <span>Expected payment date</span>
            <input ref={first} type="date" value={expected} onChange={(e) => setExpected(e.target.value)} />
          </label>
          <label className="field">
            <span>Note</span>
            <textarea maxLength={500} value={note} onChange={(e) => setNote(e.target.value)} />
          </label>
          {error && <p role="alert">{error}</p>}
          <div className="dialog-actions">
            <button type="button" onClick={onClose}>
              Close
            </button>
            <button type="submit" className="primary" disabled={busy}>
              Record reminder
            </button>
          </div>
        </form>
      </div>
    </div>
  );
}
