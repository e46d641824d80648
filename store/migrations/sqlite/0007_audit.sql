-- Audit entries as the stream shows them, appended on every capability event. `seq` is the
-- cursor of `GET /api/audit?since=`: it only ever grows.
CREATE TABLE audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    actor_id TEXT,
    entry TEXT NOT NULL
);

CREATE INDEX audit_by_actor ON audit (actor_id, seq);
