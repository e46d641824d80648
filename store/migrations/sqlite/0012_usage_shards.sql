-- A usage key's totals may be split over several rows (`shard`), which reads sum: steps of one
-- actor that settle at once then add to different rows instead of queueing on one row's lock.
-- SQLite has one writer at a time, so it writes shard 0 only; the column keeps the statements
-- the same on both backends.
CREATE TABLE usage_rows_sharded (
    tenant TEXT NOT NULL,
    actor TEXT NOT NULL,
    day TEXT NOT NULL,
    model TEXT NOT NULL,
    tool TEXT NOT NULL,
    shard INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens INTEGER NOT NULL DEFAULT 0,
    nano_usd INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, actor, day, model, tool, shard)
);

INSERT INTO usage_rows_sharded (tenant, actor, day, model, tool, shard, input_tokens,
    cached_input_tokens, output_tokens, total_tokens, nano_usd, calls)
SELECT tenant, actor, day, model, tool, 0, input_tokens, cached_input_tokens, output_tokens,
    total_tokens, nano_usd, calls
FROM usage_rows;

DROP TABLE usage_rows;
ALTER TABLE usage_rows_sharded RENAME TO usage_rows;
CREATE INDEX usage_rows_by_actor ON usage_rows (actor, day);
