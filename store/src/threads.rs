//! Threads in the database ([`SqlThreadStore`]): the SQL half of
//! [`dpas_governance::threads`], whose module doc says what a thread is.

use std::collections::HashMap;

use dpas_governance::threads::{
    title_of, Appended, ThreadAppend, ThreadCaps, ThreadError, ThreadMeta, ThreadStore,
    MAX_THREADS_PER_OWNER,
};
use dpas_protocol::{ContentPart, Role, Usage, WireModelMessage};
use futures_util::future::BoxFuture;
use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::conn::{get, Arg, Cells};
use crate::db::{Backend, Db};

/// A posted tool message cut to the parts worth storing.
#[derive(Serialize)]
struct ToolMessage<'a> {
    role: Role,
    content: Vec<&'a ContentPart>,
}

fn storage(e: impl std::fmt::Display) -> ThreadError {
    ThreadError::Storage(e.to_string())
}

/// The tool-call ids in messages: `true` when the messages also hold the call's result.
fn call_ids<'a>(
    messages: impl IntoIterator<Item = &'a WireModelMessage>,
) -> HashMap<&'a str, bool> {
    let mut ids = HashMap::new();
    for part in messages.into_iter().flat_map(WireModelMessage::parts) {
        match part {
            ContentPart::ToolCall { tool_call_id, .. } => {
                ids.entry(tool_call_id.as_str()).or_insert(false);
            }
            ContentPart::ToolResult { tool_call_id, .. } => {
                ids.insert(tool_call_id.as_str(), true);
            }
            _ => {}
        }
    }
    ids
}

/// Threads in the database. An append runs in one transaction that holds the thread's row
/// lock from its first read, so steps of one thread through different replicas apply one
/// after the other.
#[derive(Debug, Clone)]
pub struct SqlThreadStore {
    db: Db,
    caps: ThreadCaps,
}

impl SqlThreadStore {
    pub fn new(db: Db, caps: ThreadCaps) -> Self {
        Self { db, caps }
    }
}

fn count(row: &dyn Cells, column: &str) -> Result<Option<u64>, sqlx::Error> {
    let v: Option<i64> = get(row, column)?;
    Ok(v.map(|n| u64::try_from(n).unwrap_or(0)))
}

fn meta_from(row: &dyn Cells) -> Result<ThreadMeta, sqlx::Error> {
    let usage = match count(row, "input_tokens")? {
        None => None,
        Some(input_tokens) => Some(Usage {
            input_tokens,
            output_tokens: count(row, "output_tokens")?.unwrap_or(0),
            total_tokens: count(row, "total_tokens")?.unwrap_or(0),
            cached_input_tokens: count(row, "cached_input_tokens")?,
            reasoning_tokens: count(row, "reasoning_tokens")?,
            cache_write_input_tokens: count(row, "cache_write_input_tokens")?,
            reported_steps: count(row, "reported_steps")?.unwrap_or(0),
        }),
    };
    Ok(ThreadMeta {
        id: get(row, "id")?,
        resource_id: get(row, "owner")?,
        title: get(row, "title")?,
        created_at: get(row, "created_at")?,
        updated_at: get(row, "updated_at")?,
        usage,
    })
}

const META_COLUMNS: &str = "id, owner, title, created_at, updated_at, input_tokens, \
     output_tokens, total_tokens, reported_steps, cached_input_tokens, reasoning_tokens, \
     cache_write_input_tokens";

// A thread's head row, in pieces that both head upserts are made of ([`UPSERT_HEAD`], and
// [`pg_append`]'s, which takes its row by `SELECT` so that the caps can refuse it).
macro_rules! head_insert {
    () => {
        "INSERT INTO conversations (owner, id, title, created_at, updated_at, \
         recency, message_count, byte_count, input_tokens, output_tokens, total_tokens, \
         reported_steps, cached_input_tokens, reasoning_tokens, cache_write_input_tokens)"
    };
}
macro_rules! head_row {
    () => {
        "$1, $2, $3, $4, $4, \
         (SELECT COALESCE(MAX(recency), 0) + 1 FROM conversations WHERE owner = $1), \
         $5, $6, $7, $8, $9, $10, $11, $12, $13"
    };
}
macro_rules! head_on_conflict {
    () => {
        "ON CONFLICT (owner, id) DO UPDATE SET \
         updated_at = excluded.updated_at, \
         recency = excluded.recency, \
         message_count = conversations.message_count + excluded.message_count, \
         byte_count = conversations.byte_count + excluded.byte_count, \
         input_tokens = CASE WHEN excluded.input_tokens IS NULL THEN conversations.input_tokens \
             ELSE COALESCE(conversations.input_tokens, 0) + excluded.input_tokens END, \
         output_tokens = CASE WHEN excluded.output_tokens IS NULL THEN conversations.output_tokens \
             ELSE COALESCE(conversations.output_tokens, 0) + excluded.output_tokens END, \
         total_tokens = CASE WHEN excluded.total_tokens IS NULL THEN conversations.total_tokens \
             ELSE COALESCE(conversations.total_tokens, 0) + excluded.total_tokens END, \
         reported_steps = CASE WHEN excluded.reported_steps IS NULL THEN conversations.reported_steps \
             ELSE COALESCE(conversations.reported_steps, 0) + excluded.reported_steps END, \
         cached_input_tokens = CASE WHEN excluded.cached_input_tokens IS NULL THEN conversations.cached_input_tokens \
             ELSE COALESCE(conversations.cached_input_tokens, 0) + excluded.cached_input_tokens END, \
         reasoning_tokens = CASE WHEN excluded.reasoning_tokens IS NULL THEN conversations.reasoning_tokens \
             ELSE COALESCE(conversations.reasoning_tokens, 0) + excluded.reasoning_tokens END, \
         cache_write_input_tokens = CASE WHEN excluded.cache_write_input_tokens IS NULL THEN conversations.cache_write_input_tokens \
             ELSE COALESCE(conversations.cache_write_input_tokens, 0) + excluded.cache_write_input_tokens END"
    };
}

/// Creates the thread or adds to its counts, recency and usage; answers the new counts.
const UPSERT_HEAD: &str = concat!(
    head_insert!(),
    " VALUES (",
    head_row!(),
    ") ",
    head_on_conflict!(),
    " RETURNING message_count, byte_count"
);

/// Removes the owner's threads beyond [`MAX_THREADS_PER_OWNER`] (least recent first).
const TRIM_OWNER: &str = "DELETE FROM conversations WHERE owner = $1 AND recency < \
     (SELECT recency FROM conversations WHERE owner = $1 ORDER BY recency DESC \
      LIMIT 1 OFFSET $2)";

/// The ids of the tool results a step posts.
fn posted_ids<'a>(append: &ThreadAppend<'a>) -> Vec<&'a str> {
    append
        .answers
        .iter()
        .flat_map(|m| m.parts())
        .filter_map(|p| match p {
            ContentPart::ToolResult { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect()
}

/// A step's append on PostgreSQL as one statement: the head upsert (refused by its own
/// condition when the thread would pass a cap, and then nothing is written), the step's
/// `messages` messages numbered after the thread's last (`$17`… as `(ord, body)` pairs), its
/// `calls` tool calls (`(id, answered)` pairs after those) and, for a new thread, the trim
/// of the owner's least recent threads. The arguments are [`UPSERT_HEAD`]'s thirteen, then
/// the message cap, the byte cap and how many of the owner's other threads to keep (`$16`,
/// the limit less the new one less one for `OFFSET`). Answers the thread's new message count,
/// or no row when a cap refused it. The statement's parts see the tables as they were before
/// it, so the trim leaves out the new thread by its id. The trim skips a thread another
/// step's trim is deleting rather than wait for that step's commit (new threads of one owner
/// created at once all found the same oldest one): an owner may hold one thread over the
/// limit for each new thread created at the same moment, until its next new thread.
fn pg_append(messages: usize, calls: usize) -> String {
    let head = concat!(
        head_insert!(),
        " SELECT ",
        head_row!(),
        " WHERE $5 <= $14 AND $6 <= $15 ",
        head_on_conflict!(),
        " WHERE conversations.message_count + excluded.message_count <= $14 \
         AND conversations.byte_count + excluded.byte_count <= $15 RETURNING message_count"
    );
    let mut sql = format!("WITH head AS ({head})");
    let mut next = 17;
    if messages > 0 {
        sql.push_str(&format!(
            ", m AS (INSERT INTO conversation_messages (owner, conversation, seq, body) \
             SELECT $1, $2, head.message_count - $5 + v.ord, v.body FROM head, \
             (VALUES {}) AS v (ord, body))",
            typed_pairs(next, messages, "bigint", "text")
        ));
        next += 2 * messages;
    }
    if calls > 0 {
        sql.push_str(&format!(
            ", c AS (INSERT INTO conversation_tool_calls \
             (owner, conversation, tool_call_id, answered) \
             SELECT $1, $2, v.id, v.answered FROM head, (VALUES {}) AS v (id, answered) \
             ON CONFLICT (owner, conversation, tool_call_id) DO UPDATE SET \
             answered = CASE WHEN excluded.answered > conversation_tool_calls.answered \
             THEN excluded.answered ELSE conversation_tool_calls.answered END)",
            typed_pairs(next, calls, "text", "bigint")
        ));
    }
    sql.push_str(
        ", t AS (DELETE FROM conversations WHERE (owner, id) IN \
         (SELECT owner, id FROM conversations WHERE owner = $1 AND id <> $2 \
         AND EXISTS (SELECT 1 FROM head WHERE message_count = $5) \
         AND recency < (SELECT recency FROM conversations WHERE owner = $1 AND id <> $2 \
         ORDER BY recency DESC LIMIT 1 OFFSET $16) FOR UPDATE SKIP LOCKED)) \
         SELECT message_count FROM head",
    );
    sql
}

/// `count` pairs of placeholders from `$first`, the first row's cast to `a` and `b` (a
/// `VALUES` list's column types come from its first row).
fn typed_pairs(first: usize, count: usize, a: &str, b: &str) -> String {
    let mut out = String::new();
    for row in 0..count {
        let (x, y) = (first + 2 * row, first + 2 * row + 1);
        if row == 0 {
            out.push_str(&format!("(${x}::{a}, ${y}::{b})"));
        } else {
            out.push_str(&format!(", (${x}, ${y})"));
        }
    }
    out
}

fn token(n: Option<u64>) -> Option<i64> {
    n.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

impl SqlThreadStore {
    async fn append_step(
        &self,
        owner: &str,
        id: &str,
        append: ThreadAppend<'_>,
    ) -> Result<Appended, ThreadError> {
        let pg = self.db.backend() == Backend::Postgres;
        let posted = posted_ids(&append);
        // On PostgreSQL a step that answers nothing is one statement ([`pg_append`]),
        // which commits by itself; one that answers calls first locks those calls' rows.
        let mut tx = if pg && posted.is_empty() {
            self.db.conn().await
        } else {
            self.db.transaction().await
        }
        .map_err(storage)?;

        // Which posted results answer calls this thread holds unanswered (indexed, L4). The
        // rows stay locked, so a racing step answering the same call sees it answered.
        let open: Vec<String> = if posted.is_empty() {
            Vec::new()
        } else {
            let list: Vec<String> = (3..posted.len() + 3).map(|n| format!("${n}")).collect();
            let sql = format!(
                "SELECT tool_call_id FROM conversation_tool_calls WHERE owner = $1 \
                 AND conversation = $2 AND answered = 0 AND tool_call_id IN ({}){}",
                list.join(", "),
                self.db.for_update()
            );
            let mut args = vec![Arg::from(owner), Arg::from(id)];
            args.extend(posted.iter().map(|c| Arg::from(*c)));
            tx.fetch(&sql, &args, |r| get(r, "tool_call_id"))
                .await
                .map_err(storage)?
        };

        let mut bodies: Vec<String> = Vec::new();
        let mut answered: Vec<&str> = Vec::new();
        for message in &append.answers {
            let parts: Vec<&ContentPart> = message
                .parts()
                .iter()
                .filter(|p| matches!(p, ContentPart::ToolResult { tool_call_id, .. }
                    if open.iter().any(|o| o == tool_call_id) && !answered.contains(&tool_call_id.as_str())))
                .collect();
            if parts.is_empty() {
                continue;
            }
            for p in &parts {
                if let ContentPart::ToolResult { tool_call_id, .. } = p {
                    answered.push(tool_call_id);
                }
            }
            let message = ToolMessage {
                role: Role::Tool,
                content: parts,
            };
            bodies.push(serde_json::to_string(&message).map_err(storage)?);
        }
        for message in &append.messages {
            bodies.push(serde_json::to_string(message).map_err(storage)?);
        }
        if bodies.is_empty() && append.usage.is_none() {
            return Ok(Appended::default());
        }

        let now = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .map_err(storage)?;
        let added_bytes: usize = bodies.iter().map(String::len).sum();
        let usage = append.usage;
        let title = title_of(append.messages.iter().copied());
        let mut calls = call_ids(append.messages.iter().copied());
        for id in &answered {
            calls.insert(*id, true);
        }
        let mut head_args: Vec<Arg<'_>> = vec![
            owner.into(),
            id.into(),
            title.as_str().into(),
            now.as_str().into(),
            i64::try_from(bodies.len()).map_err(storage)?.into(),
            i64::try_from(added_bytes).map_err(storage)?.into(),
            token(usage.map(|u| u.input_tokens)).into(),
            token(usage.map(|u| u.output_tokens)).into(),
            token(usage.map(|u| u.total_tokens)).into(),
            token(usage.map(|u| u.reported_steps)).into(),
            token(usage.and_then(|u| u.cached_input_tokens)).into(),
            token(usage.and_then(|u| u.reasoning_tokens)).into(),
            token(usage.and_then(|u| u.cache_write_input_tokens)).into(),
        ];
        if pg {
            let cap = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            head_args.extend([
                Arg::from(cap(self.caps.messages)),
                cap(self.caps.bytes).into(),
                (MAX_THREADS_PER_OWNER - 2).into(),
            ]);
            let mut args = head_args;
            for (body, ord) in bodies.iter().zip(0_i64..) {
                args.extend([Arg::from(ord), body.as_str().into()]);
            }
            for (call, done) in &calls {
                args.extend([Arg::from(*call), i64::from(*done).into()]);
            }
            let stored = tx
                .fetch(&pg_append(bodies.len(), calls.len()), &args, |r| {
                    get::<i64>(r, "message_count")
                })
                .await
                .map_err(storage)?;
            if stored.is_empty() {
                // Over a cap: nothing was written (and a transaction rolls back when dropped).
                return Err(ThreadError::Full(self.caps));
            }
            tx.commit().await.map_err(storage)?;
            return Ok(Appended {
                answered: answered.into_iter().map(str::to_owned).collect(),
            });
        }
        let head = tx
            .fetch(UPSERT_HEAD, &head_args, |r| {
                Ok((
                    get::<i64>(r, "message_count")?,
                    get::<i64>(r, "byte_count")?,
                ))
            })
            .await
            .map_err(storage)?;
        let (total, total_bytes) = head
            .first()
            .copied()
            .ok_or_else(|| storage("the thread's head row was not written"))?;
        let over = |n: i64, cap: usize| usize::try_from(n).map_or(true, |n| n > cap);
        if over(total, self.caps.messages) || over(total_bytes, self.caps.bytes) {
            // Dropping the transaction rolls it back: the thread stays as it was.
            return Err(ThreadError::Full(self.caps));
        }

        if !bodies.is_empty() {
            let first_seq = total - i64::try_from(bodies.len()).map_err(storage)?;
            let sql = format!(
                "INSERT INTO conversation_messages (owner, conversation, seq, body) VALUES {}",
                Db::values_list(1, bodies.len(), 4)
            );
            let mut args = Vec::with_capacity(bodies.len() * 4);
            for (body, seq) in bodies.iter().zip(first_seq..) {
                args.extend([
                    Arg::from(owner),
                    id.into(),
                    seq.into(),
                    body.as_str().into(),
                ]);
            }
            tx.execute(&sql, &args).await.map_err(storage)?;
        }

        if !calls.is_empty() {
            let sql = format!(
                "INSERT INTO conversation_tool_calls (owner, conversation, tool_call_id, answered) \
                 VALUES {} ON CONFLICT (owner, conversation, tool_call_id) DO UPDATE SET \
                 answered = CASE WHEN excluded.answered > conversation_tool_calls.answered \
                 THEN excluded.answered ELSE conversation_tool_calls.answered END",
                Db::values_list(1, calls.len(), 4)
            );
            let mut args = Vec::with_capacity(calls.len() * 4);
            for (call, done) in &calls {
                args.extend([
                    Arg::from(owner),
                    id.into(),
                    (*call).into(),
                    i64::from(*done).into(),
                ]);
            }
            tx.execute(&sql, &args).await.map_err(storage)?;
        }

        // Only a thread that had no messages can be new: the others need no trim (one
        // statement less on a continuing conversation's step).
        if total == i64::try_from(bodies.len()).map_err(storage)? {
            tx.execute(
                TRIM_OWNER,
                &[owner.into(), (MAX_THREADS_PER_OWNER - 1).into()],
            )
            .await
            .map_err(storage)?;
        }
        tx.commit().await.map_err(storage)?;
        Ok(Appended {
            answered: answered.into_iter().map(str::to_owned).collect(),
        })
    }

    async fn bodies(&self, owner: &str, id: &str) -> Result<Option<Vec<String>>, ThreadError> {
        let rows: Vec<Option<String>> = self
            .db
            .conn()
            .await
            .map_err(storage)?
            .fetch(
                "SELECT m.body FROM conversations AS c LEFT JOIN conversation_messages AS m \
                 ON m.owner = c.owner AND m.conversation = c.id \
                 WHERE c.owner = $1 AND c.id = $2 ORDER BY m.seq",
                &[owner.into(), id.into()],
                |r| get(r, "body"),
            )
            .await
            .map_err(storage)?;
        if rows.is_empty() {
            return Ok(None);
        }
        Ok(Some(rows.into_iter().flatten().collect()))
    }
}

impl ThreadStore for SqlThreadStore {
    fn list<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<ThreadMeta>, ThreadError>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT {META_COLUMNS} FROM conversations WHERE owner = $1 ORDER BY recency DESC"
            );
            let mut conn = self.db.conn().await.map_err(storage)?;
            conn.fetch(&sql, &[owner.into()], meta_from)
                .await
                .map_err(storage)
        })
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ThreadMeta>, ThreadError>> {
        Box::pin(async move {
            let sql =
                format!("SELECT {META_COLUMNS} FROM conversations WHERE owner = $1 AND id = $2");
            let mut conn = self.db.conn().await.map_err(storage)?;
            let rows = conn
                .fetch(&sql, &[owner.into(), id.into()], meta_from)
                .await
                .map_err(storage)?;
            Ok(rows.into_iter().next())
        })
    }

    fn messages<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<WireModelMessage>>, ThreadError>> {
        Box::pin(async move {
            self.bodies(owner, id)
                .await?
                .map(|bodies| {
                    bodies
                        .iter()
                        .map(|b| serde_json::from_str(b).map_err(storage))
                        .collect()
                })
                .transpose()
        })
    }

    fn messages_json<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ThreadError>> {
        Box::pin(async move {
            Ok(self.bodies(owner, id).await?.map(|bodies| {
                let mut out =
                    String::with_capacity(bodies.iter().map(|b| b.len() + 1).sum::<usize>() + 2);
                out.push('[');
                for (i, body) in bodies.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(body);
                }
                out.push(']');
                out
            }))
        })
    }

    fn append<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        append: ThreadAppend<'a>,
    ) -> BoxFuture<'a, Result<Appended, ThreadError>> {
        Box::pin(self.append_step(owner, id, append))
    }

    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, ThreadError>> {
        Box::pin(async move {
            let mut conn = self.db.conn().await.map_err(storage)?;
            let done = conn
                .execute(
                    "DELETE FROM conversations WHERE owner = $1 AND id = $2",
                    &[owner.into(), id.into()],
                )
                .await
                .map_err(storage)?;
            Ok(done > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(v: serde_json::Value) -> WireModelMessage {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn titles_come_from_the_first_user_line() {
        let m = [message(
            json!({"role": "user", "content": [{"type": "text", "text": "\nWhich invoices are overdue?\nmore"}]}),
        )];
        assert_eq!(title_of(&m), "Which invoices are overdue?");
        assert_eq!(
            title_of(&[message(json!({"role": "assistant", "content": "x"}))]),
            "Untitled thread"
        );
        let long = "é".repeat(200);
        assert_eq!(
            title_of(&[message(json!({"role": "user", "content": long}))])
                .chars()
                .count(),
            80
        );
    }

    /// Migration 0004 carries every thread of the old one-row-per-thread table over.
    #[tokio::test]
    async fn migration_moves_old_threads_to_rows() {
        let db = crate::db::memory_without_migrations().await;
        sqlx::raw_sql(include_str!("../migrations/sqlite/0002_threads.sql"))
            .execute(&*db)
            .await
            .unwrap();
        let old = json!([
            {"role": "user", "content": "Which invoices are overdue?"},
            {"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": "s1", "toolName": "domain_a", "input": {"n": 1.5}},
                {"type": "tool-call", "toolCallId": "b1", "toolName": "view_b", "input": {}}
            ]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "s1", "toolName": "domain_a", "output": {"type": "json", "value": {"é": "ü"}}}]}
        ]);
        for (owner, usage) in [
            (
                "carla",
                Some(
                    r#"{"inputTokens":3,"outputTokens":4,"totalTokens":7,"reasoningTokens":1,"reportedSteps":1}"#,
                ),
            ),
            ("ada", None),
        ] {
            sqlx::query("INSERT INTO threads VALUES ($1, $2, 'T', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', 1, $3, $4)")
                .bind(format!("cnv_{owner}"))
                .bind(owner)
                .bind(old.to_string())
                .bind(usage)
                .execute(&*db)
                .await
                .unwrap();
        }
        sqlx::raw_sql(include_str!("../migrations/sqlite/0004_thread_rows.sql"))
            .execute(&*db)
            .await
            .unwrap();
        let store = SqlThreadStore::new(db, ThreadCaps::from_limits(1 << 20));
        let text = store
            .messages_json("carla", "cnv_carla")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            old
        );
        let meta = store.get("carla", "cnv_carla").await.unwrap().unwrap();
        assert_eq!(
            serde_json::to_value(meta.usage).unwrap(),
            json!({"inputTokens": 3, "outputTokens": 4, "totalTokens": 7, "reasoningTokens": 1, "reportedSteps": 1})
        );
        assert_eq!(meta.created_at, "2026-01-01T00:00:00Z");
        assert!(store
            .get("ada", "cnv_ada")
            .await
            .unwrap()
            .unwrap()
            .usage
            .is_none());
        assert!(store.get("ada", "cnv_carla").await.unwrap().is_none());

        // The carried-over index knows b1 is open and s1 answered.
        let posted = [message(json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "s1", "toolName": "domain_a", "output": {"type": "json", "value": 0}},
            {"type": "tool-result", "toolCallId": "b1", "toolName": "view_b", "output": {"type": "json", "value": 2}}
        ]}))];
        let posting = || ThreadAppend {
            answers: posted.iter().collect(),
            ..ThreadAppend::default()
        };
        let appended = store.append("carla", "cnv_carla", posting()).await.unwrap();
        assert_eq!(
            appended.answered,
            ["b1"],
            "only the open call's answer is new"
        );
        let all = store.messages("carla", "cnv_carla").await.unwrap().unwrap();
        assert_eq!(all.len(), 4);
        let ids: Vec<_> = call_ids(&all[3..]).into_keys().collect();
        assert_eq!(ids, ["b1"]);
        // Posted again (the next step's history carries it), it answers nothing new.
        let again = store.append("carla", "cnv_carla", posting()).await.unwrap();
        assert_eq!(again, Appended::default());
        assert_eq!(
            store
                .messages("carla", "cnv_carla")
                .await
                .unwrap()
                .unwrap()
                .len(),
            4
        );
    }

    #[test]
    fn call_ids_mark_the_answered() {
        let m = [
            message(
                json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "x", "input": {}}, {"type": "tool-call", "toolCallId": "b", "toolName": "x", "input": {}}]}),
            ),
            WireModelMessage::tool_result("a", "x", json!(1)),
        ];
        let ids = call_ids(&m);
        assert_eq!(ids.len(), 2);
        assert!(ids["a"]);
        assert!(!ids["b"]);
    }
}
