-- A cancel asked for a running step (POST /agent/chat/cancel, on any replica): 1 once asked.
-- The replica running the step reads it with its heartbeat and stops the run.
ALTER TABLE step_records ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
