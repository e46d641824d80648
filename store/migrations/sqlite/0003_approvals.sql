CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    actor_id TEXT NOT NULL,
    requested_at INTEGER NOT NULL,
    record TEXT NOT NULL
);

CREATE INDEX approvals_by_actor ON approvals (actor_id, requested_at);
