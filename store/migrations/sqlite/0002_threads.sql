CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    seq INTEGER NOT NULL,
    messages TEXT NOT NULL,
    usage TEXT
);

CREATE INDEX threads_by_owner ON threads (owner, seq);
