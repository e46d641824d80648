-- A usage key's totals may be split over several rows (`shard`), which reads sum: steps of one
-- actor that settle at once add to different rows instead of queueing on one row's lock (held
-- until its commit has reached the disk, so one hot row bounded an actor at one step per
-- flush).
ALTER TABLE usage_rows ADD COLUMN shard BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_rows DROP CONSTRAINT usage_rows_pkey;
ALTER TABLE usage_rows ADD PRIMARY KEY (tenant, actor, day, model, tool, shard);
