-- Status and expiry as columns, so the pending list, start-up recovery and the purge read an
-- index instead of every record ever stored.
ALTER TABLE approvals ADD COLUMN status TEXT NOT NULL DEFAULT 'pending';
ALTER TABLE approvals ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
UPDATE approvals SET
    status = json_extract(record, '$.status'),
    expires_at = CAST(strftime('%s', json_extract(record, '$.expiresAt')) AS INTEGER);
CREATE INDEX approvals_by_status ON approvals (status, actor_id, requested_at);
CREATE INDEX approvals_by_expiry ON approvals (expires_at);
