-- The schema the SQLite migrations 0001-0006 arrive at, in PostgreSQL types. Every integer is
-- BIGINT so one Rust type (i64) reads it on both backends.

CREATE TABLE clients (
    id BIGINT PRIMARY KEY,
    name TEXT NOT NULL,
    segment TEXT NOT NULL,
    payment_terms_days BIGINT NOT NULL,
    email TEXT NOT NULL
);

CREATE TABLE invoices (
    id BIGINT PRIMARY KEY,
    reference TEXT NOT NULL,
    client_id BIGINT NOT NULL,
    amount BIGINT NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL CHECK (status IN ('draft', 'sent', 'paid')),
    issue_date TEXT NOT NULL,
    due_date TEXT NOT NULL,
    paid_date TEXT,
    notes TEXT
);

CREATE TABLE collection_statuses (
    invoice_id BIGINT PRIMARY KEY,
    reminders_sent BIGINT NOT NULL DEFAULT 0,
    last_reminder_date TEXT,
    expected_payment_date TEXT,
    note TEXT
);

CREATE TABLE ledger_meta (
    key TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);

CREATE TABLE conversations (
    owner TEXT NOT NULL,
    id TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    recency BIGINT NOT NULL,
    message_count BIGINT NOT NULL,
    byte_count BIGINT NOT NULL,
    input_tokens BIGINT,
    output_tokens BIGINT,
    total_tokens BIGINT,
    reported_steps BIGINT,
    cached_input_tokens BIGINT,
    reasoning_tokens BIGINT,
    cache_write_input_tokens BIGINT,
    PRIMARY KEY (owner, id)
);

CREATE INDEX conversations_by_recency ON conversations (owner, recency);

CREATE TABLE conversation_messages (
    owner TEXT NOT NULL,
    conversation TEXT NOT NULL,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (owner, conversation, seq),
    FOREIGN KEY (owner, conversation) REFERENCES conversations (owner, id) ON DELETE CASCADE
);

CREATE TABLE conversation_tool_calls (
    owner TEXT NOT NULL,
    conversation TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    answered BIGINT NOT NULL,
    PRIMARY KEY (owner, conversation, tool_call_id),
    FOREIGN KEY (owner, conversation) REFERENCES conversations (owner, id) ON DELETE CASCADE
);

CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    actor_id TEXT NOT NULL,
    requested_at BIGINT NOT NULL,
    record TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    expires_at BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX approvals_by_actor ON approvals (actor_id, requested_at);
CREATE INDEX approvals_by_status ON approvals (status, actor_id, requested_at);
CREATE INDEX approvals_by_expiry ON approvals (expires_at);

CREATE TABLE revoked_sessions (
    sid TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
