-- Sessions signed out before their expiry (DELETE /api/session): refused until they expire.
CREATE TABLE revoked_sessions (
    sid TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
