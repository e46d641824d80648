//! Conversation threads, each owned by one actor: nobody else can read, append to or delete it.

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::{Map, Value};
use sqlx::{Row, SqlitePool};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Threads kept per owner; the least recently updated beyond this are removed.
pub const MAX_THREADS_PER_OWNER: i64 = 50;
const TITLE_MAX_CHARS: usize = 80;

#[derive(Debug, thiserror::Error)]
pub enum ThreadError {
    /// The id belongs to another owner's thread.
    #[error("thread {0} belongs to another owner")]
    NotOwner(String),
    #[error("thread storage: {0}")]
    Storage(String),
}

impl From<sqlx::Error> for ThreadError {
    fn from(e: sqlx::Error) -> Self {
        Self::Storage(e.to_string())
    }
}

/// Thread metadata (what lists and `GET /api/threads/:id` show).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadMeta {
    pub id: String,
    /// The owner's actor id.
    pub resource_id: String,
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
}

/// Thread storage; every operation is scoped to `owner`.
pub trait ThreadStore: Send + Sync {
    /// The owner's threads, most recently updated first.
    fn list<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<ThreadMeta>, ThreadError>>;
    /// `None` when missing or owned by someone else.
    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ThreadMeta>, ThreadError>>;
    /// The stored model messages exactly as appended; `None` when missing or not the owner's.
    fn messages<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<Value>>, ThreadError>>;
    /// Appends messages and adds usage (absent stays absent), creating the thread if needed.
    fn append<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        messages: Vec<Value>,
        usage: Option<Value>,
    ) -> BoxFuture<'a, Result<ThreadMeta, ThreadError>>;
    /// `true` when the owner's thread existed and is gone.
    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, ThreadError>>;
}

/// Sums two usage objects key by key: absent + absent = absent, absent + x = x, x + y = x + y.
pub fn add_usage(a: Option<&Value>, b: Option<&Value>) -> Option<Value> {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut out = Map::new();
            for (k, v) in x.iter().chain(y.iter()) {
                if out.contains_key(k) {
                    continue;
                }
                let sum = match (
                    x.get(k).and_then(Value::as_u64),
                    y.get(k).and_then(Value::as_u64),
                ) {
                    (Some(p), Some(q)) => Value::from(p.saturating_add(q)),
                    (Some(p), None) | (None, Some(p)) => Value::from(p),
                    (None, None) => v.clone(),
                };
                out.insert(k.clone(), sum);
            }
            Some(Value::Object(out))
        }
        (Some(_), Some(y)) => Some(y.clone()),
    }
}

/// First line of the first user message, at most 80 characters; else `Untitled thread`.
pub fn title_of(messages: &[Value]) -> String {
    let text = messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| match m.get("content") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(parts)) => parts
                .iter()
                .find(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .and_then(|p| p.get("text").and_then(Value::as_str))
                .map(str::to_owned),
            _ => None,
        });
    let line = text
        .as_deref()
        .and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()));
    match line {
        Some(l) => l.chars().take(TITLE_MAX_CHARS).collect(),
        None => "Untitled thread".to_owned(),
    }
}

/// Threads in SQLite.
#[derive(Debug, Clone)]
pub struct SqliteThreadStore {
    pool: SqlitePool,
}

impl SqliteThreadStore {
    pub fn new(pool: SqlitePool) -> Self {
        Self { pool }
    }
}

fn meta_from(row: &sqlx::sqlite::SqliteRow) -> Result<ThreadMeta, ThreadError> {
    let usage: Option<String> = row.try_get("usage")?;
    Ok(ThreadMeta {
        id: row.try_get("id")?,
        resource_id: row.try_get("owner")?,
        title: row.try_get("title")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        usage: usage
            .map(|u| serde_json::from_str(&u))
            .transpose()
            .map_err(|e| ThreadError::Storage(e.to_string()))?,
    })
}

const META_COLUMNS: &str = "id, owner, title, created_at, updated_at, usage";

impl ThreadStore for SqliteThreadStore {
    fn list<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<ThreadMeta>, ThreadError>> {
        Box::pin(async move {
            let rows = sqlx::query(&format!(
                "SELECT {META_COLUMNS} FROM threads WHERE owner = ? ORDER BY seq DESC"
            ))
            .bind(owner)
            .fetch_all(&self.pool)
            .await?;
            rows.iter().map(meta_from).collect()
        })
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ThreadMeta>, ThreadError>> {
        Box::pin(async move {
            let row = sqlx::query(&format!(
                "SELECT {META_COLUMNS} FROM threads WHERE id = ? AND owner = ?"
            ))
            .bind(id)
            .bind(owner)
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(meta_from).transpose()
        })
    }

    fn messages<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<Value>>, ThreadError>> {
        Box::pin(async move {
            let row = sqlx::query("SELECT messages FROM threads WHERE id = ? AND owner = ?")
                .bind(id)
                .bind(owner)
                .fetch_optional(&self.pool)
                .await?;
            match row {
                None => Ok(None),
                Some(r) => {
                    let text: String = r.try_get("messages")?;
                    serde_json::from_str(&text)
                        .map(Some)
                        .map_err(|e| ThreadError::Storage(e.to_string()))
                }
            }
        })
    }

    fn append<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        messages: Vec<Value>,
        usage: Option<Value>,
    ) -> BoxFuture<'a, Result<ThreadMeta, ThreadError>> {
        Box::pin(async move {
            let now = OffsetDateTime::now_utc()
                .format(&Rfc3339)
                .map_err(|e| ThreadError::Storage(e.to_string()))?;
            let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
            let existing = sqlx::query("SELECT owner, messages, usage FROM threads WHERE id = ?")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            let seq: i64 = sqlx::query("SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM threads")
                .fetch_one(&mut *tx)
                .await?
                .try_get("n")?;
            match existing {
                Some(row) => {
                    let stored_owner: String = row.try_get("owner")?;
                    if stored_owner != owner {
                        return Err(ThreadError::NotOwner(id.to_owned()));
                    }
                    let text: String = row.try_get("messages")?;
                    let mut all: Vec<Value> = serde_json::from_str(&text)
                        .map_err(|e| ThreadError::Storage(e.to_string()))?;
                    let old_usage: Option<String> = row.try_get("usage")?;
                    let old_usage: Option<Value> = old_usage
                        .map(|u| serde_json::from_str(&u))
                        .transpose()
                        .map_err(|e| ThreadError::Storage(e.to_string()))?;
                    all.extend(messages);
                    let usage = add_usage(old_usage.as_ref(), usage.as_ref());
                    sqlx::query("UPDATE threads SET messages = ?, usage = ?, updated_at = ?, seq = ? WHERE id = ?")
                        .bind(Value::Array(all).to_string())
                        .bind(usage.map(|u| u.to_string()))
                        .bind(&now)
                        .bind(seq)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                None => {
                    sqlx::query(
                        "INSERT INTO threads (id, owner, title, created_at, updated_at, seq, messages, usage) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    )
                    .bind(id)
                    .bind(owner)
                    .bind(title_of(&messages))
                    .bind(&now)
                    .bind(&now)
                    .bind(seq)
                    .bind(Value::Array(messages).to_string())
                    .bind(usage.map(|u| u.to_string()))
                    .execute(&mut *tx)
                    .await?;
                    sqlx::query(
                        "DELETE FROM threads WHERE owner = ? AND id NOT IN (SELECT id FROM threads WHERE owner = ? ORDER BY seq DESC LIMIT ?)",
                    )
                    .bind(owner)
                    .bind(owner)
                    .bind(MAX_THREADS_PER_OWNER)
                    .execute(&mut *tx)
                    .await?;
                }
            }
            let row = sqlx::query(&format!("SELECT {META_COLUMNS} FROM threads WHERE id = ?"))
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
            let meta = meta_from(&row)?;
            tx.commit().await?;
            Ok(meta)
        })
    }

    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, ThreadError>> {
        Box::pin(async move {
            let done = sqlx::query("DELETE FROM threads WHERE id = ? AND owner = ?")
                .bind(id)
                .bind(owner)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected() > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_sums_keep_absent_keys_absent() {
        let a = json!({"inputTokens": 16, "outputTokens": 16, "cachedInputTokens": 8});
        let b = json!({"inputTokens": 16, "outputTokens": 4, "reasoningTokens": 4});
        assert_eq!(
            add_usage(Some(&a), Some(&b)),
            Some(
                json!({"inputTokens": 32, "outputTokens": 20, "cachedInputTokens": 8, "reasoningTokens": 4})
            )
        );
        assert_eq!(add_usage(None, None), None);
        assert_eq!(add_usage(None, Some(&b)), Some(b));
    }

    #[test]
    fn titles_come_from_the_first_user_line() {
        let m = vec![
            json!({"role": "user", "content": [{"type": "text", "text": "\nWhich invoices are overdue?\nmore"}]}),
        ];
        assert_eq!(title_of(&m), "Which invoices are overdue?");
        assert_eq!(
            title_of(&[json!({"role": "assistant", "content": "x"})]),
            "Untitled thread"
        );
        let long = "é".repeat(200);
        assert_eq!(
            title_of(&[json!({"role": "user", "content": long})])
                .chars()
                .count(),
            80
        );
    }
}
