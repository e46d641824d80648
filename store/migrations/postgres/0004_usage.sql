-- What model steps cost: one row per tenant, actor, day (UTC, YYYY-MM-DD), model and tool
-- (empty for the model's own tokens; a tool row counts calls), added to with atomic upserts.
-- `nano_usd` is billionths of a US dollar by the --prices table.
CREATE TABLE usage_rows (
    tenant TEXT NOT NULL,
    actor TEXT NOT NULL,
    day TEXT NOT NULL,
    model TEXT NOT NULL,
    tool TEXT NOT NULL,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens BIGINT NOT NULL DEFAULT 0,
    nano_usd BIGINT NOT NULL DEFAULT 0,
    calls BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, actor, day, model, tool)
);

CREATE INDEX usage_rows_by_actor ON usage_rows (actor, day);

-- Per budget scope (a turn, an actor's day, a tenant's day): what was spent, and the largest
-- step seen (what a step in flight holds). Kept until `expires_at` (Unix seconds).
CREATE TABLE usage_budgets (
    scope TEXT NOT NULL PRIMARY KEY,
    tokens BIGINT NOT NULL DEFAULT 0,
    nano_usd BIGINT NOT NULL DEFAULT 0,
    step_tokens BIGINT NOT NULL DEFAULT 0,
    step_nano_usd BIGINT NOT NULL DEFAULT 0,
    expires_at BIGINT NOT NULL
);

CREATE INDEX usage_budgets_by_expiry ON usage_budgets (expires_at);

-- What steps in flight hold of a scope, until settled or `expires_at` (Unix seconds).
CREATE TABLE usage_holds (
    scope TEXT NOT NULL,
    hold TEXT NOT NULL,
    tokens BIGINT NOT NULL,
    nano_usd BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (scope, hold)
);
