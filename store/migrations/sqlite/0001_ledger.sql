CREATE TABLE clients (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    segment TEXT NOT NULL,
    payment_terms_days INTEGER NOT NULL,
    email TEXT NOT NULL
);

CREATE TABLE invoices (
    id INTEGER PRIMARY KEY,
    reference TEXT NOT NULL,
    client_id INTEGER NOT NULL,
    amount INTEGER NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL CHECK (status IN ('draft', 'sent', 'paid')),
    issue_date TEXT NOT NULL,
    due_date TEXT NOT NULL,
    paid_date TEXT,
    notes TEXT
);

CREATE TABLE collection_statuses (
    invoice_id INTEGER PRIMARY KEY,
    reminders_sent INTEGER NOT NULL DEFAULT 0,
    last_reminder_date TEXT,
    expected_payment_date TEXT,
    note TEXT
);

-- Single-row counters of the ledger (the next invoice id survives deletions).
CREATE TABLE ledger_meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
