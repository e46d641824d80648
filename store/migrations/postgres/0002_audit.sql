-- Audit entries as the stream shows them, appended on every capability event. `seq` is the
-- cursor of `GET /api/audit?since=`; writers hold an advisory lock while they insert, so
-- sequence order is commit order and a reader never skips a row that commits late.
CREATE TABLE audit (
    seq BIGSERIAL PRIMARY KEY,
    actor_id TEXT,
    entry TEXT NOT NULL
);

CREATE INDEX audit_by_actor ON audit (actor_id, seq);
