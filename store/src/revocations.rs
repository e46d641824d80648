//! Signed-out sessions (table `revoked_sessions`): stored so that a restart and every
//! replica refuse a session signed out before its expiry.

use time::OffsetDateTime;

use crate::db::Db;

/// The still-unexpired revocations, `(session id, expiry in Unix seconds)`; the expired ones
/// are deleted from the table first.
pub async fn load(db: &Db) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let now = OffsetDateTime::now_utc().unix_timestamp();
    sqlx::query("DELETE FROM revoked_sessions WHERE expires_at <= $1")
        .bind(now)
        .execute(&**db)
        .await?;
    sqlx::query_as("SELECT sid, expires_at FROM revoked_sessions")
        .fetch_all(&**db)
        .await
}

/// Stores one revocation (a repeated one moves its expiry).
pub async fn store(db: &Db, sid: &str, expires_at: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO revoked_sessions (sid, expires_at) VALUES ($1, $2) \
         ON CONFLICT (sid) DO UPDATE SET expires_at = excluded.expires_at",
    )
    .bind(sid)
    .bind(expires_at)
    .execute(&**db)
    .await?;
    Ok(())
}
