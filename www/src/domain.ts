// Shapes of the demo domain's reads (demo README §a).

export interface CollectionStatus {
  invoice_id: number;
  reminders_sent: number;
  last_reminder_date: string | null;
  expected_payment_date: string | null;
  note: string | null;
}

export interface InvoiceRow {
  id: number;
  reference: string;
  client_id: number;
  amount: number;
  status: "draft" | "sent" | "paid";
  issue_date: string;
  due_date: string;
  paid_date: string | null;
  notes: string | null;
  client_name: string;
  segment: string;
  days_overdue: number;
  collection: CollectionStatus | null;
}

export interface ClientRow {
  id: number;
  name: string;
  segment: string;
  payment_terms_days: number;
  email: string;
  open_invoices: number;
  outstanding: number;
  overdue: number;
}

export interface Summary {
  outstanding: number;
  overdue: number;
  draft: number;
  collected30d: number;
  invoiceCount: number;
  overdueCount: number;
  averageDaysToPay: number | null;
}

export interface AgingBucket {
  id: string;
  label: string;
  count: number;
  amount: number;
}
