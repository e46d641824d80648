-- Step requests' runs, kept until `expires_at` (--step-retention) so that the same step posted
-- again is answered from its record: `frames` is the whole NDJSON response once `state` is
-- 'done'. `heartbeat_at` (Unix nanoseconds) is when `replica` last said it was still running.
CREATE TABLE step_records (
    owner TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    step_index BIGINT NOT NULL,
    digest TEXT NOT NULL,
    state TEXT NOT NULL,
    frames TEXT,
    replica TEXT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (owner, conversation_id, turn_id, step_index)
);

CREATE INDEX step_records_by_expiry ON step_records (expires_at);
