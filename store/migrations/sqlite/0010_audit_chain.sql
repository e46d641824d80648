-- The audit trail as a hash chain per tenant (`dpas_governance::audit_chain`): `chain_seq`
-- counts 1, 2, 3, … with no gap, `prev` is the digest of the tenant's record before, `digest`
-- the SHA-256 of the record's canonical JSON, `at` its time in one fixed-width UTC form (so
-- text order is time order). The writer assigns them in the transaction that inserts.
--
-- Rows stored before this migration stay readable through `GET /api/audit` but are outside
-- the chain (`chain_seq` NULL): the chain starts after the checkpoint inserted below, seq 0
-- with the all-zero genesis digest.
ALTER TABLE audit ADD COLUMN tenant TEXT;
ALTER TABLE audit ADD COLUMN chain_seq INTEGER;
ALTER TABLE audit ADD COLUMN at TEXT;
ALTER TABLE audit ADD COLUMN prev TEXT;
ALTER TABLE audit ADD COLUMN digest TEXT;

-- One record per tenant and sequence number: two writers cannot fork a chain.
CREATE UNIQUE INDEX audit_chain ON audit (tenant, chain_seq);
CREATE INDEX audit_chain_by_time ON audit (tenant, at);

-- Where a tenant's stored chain begins: the seq and digest of the last record retention
-- pruned (seq 0 and the genesis digest before any was).
CREATE TABLE audit_checkpoint (
    tenant TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    digest TEXT NOT NULL,
    at TEXT NOT NULL
);

INSERT INTO audit_checkpoint (tenant, seq, digest, at)
VALUES ('default', 0, '0000000000000000000000000000000000000000000000000000000000000000', '');
