//! Conversation threads, each keyed by its owner and its id: a thread is only ever seen,
//! appended to or deleted by its owner, and any user may use any conversation id without
//! learning whether another user has one like it.
//!
//! A thread is rows (migration 0004): its messages are append-only, keyed by (owner,
//! conversation, seq); the tool-call ids it holds are indexed; usage is summed in place.
//! Appending a step therefore costs the same whatever the thread's length, and a thread is
//! capped ([`ThreadCaps`]) instead of growing without bound.

use dpas_protocol::limits::MAX_MESSAGES;
use dpas_protocol::{ContentPart, MessageContent, Role, Usage, WireModelMessage};
use futures_util::future::BoxFuture;
use serde::Serialize;

/// Threads kept per owner; the least recently updated beyond this are removed.
pub const MAX_THREADS_PER_OWNER: i64 = 50;
const TITLE_MAX_CHARS: usize = 80;

/// How large one stored thread may grow. A thread is posted back whole by the browser that
/// continues it, so its limits are the request's: the protocol's message limit and the
/// server's body limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadCaps {
    pub messages: usize,
    pub bytes: usize,
}

impl ThreadCaps {
    /// [`MAX_MESSAGES`] messages and `body_limit` bytes of message JSON.
    pub fn from_limits(body_limit: usize) -> Self {
        Self {
            messages: MAX_MESSAGES,
            bytes: body_limit,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ThreadError {
    /// Appending would take the thread past its caps; nothing was written.
    #[error("the thread is full ({} messages or {} bytes at most)", .0.messages, .0.bytes)]
    Full(ThreadCaps),
    #[error("thread storage: {0}")]
    Storage(String),
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
    pub usage: Option<Usage>,
}

/// What one step (or an approval receipt) adds to a thread.
#[derive(Debug, Default, Clone)]
pub struct ThreadAppend<'a> {
    /// Tool messages posted with a step. Of these, only the results that answer a call the
    /// thread holds unanswered are stored (the browser's results, L4), ahead of `messages`.
    pub answers: Vec<&'a WireModelMessage>,
    /// Messages appended as they are.
    pub messages: Vec<&'a WireModelMessage>,
    /// Added to the thread's usage (absent adds nothing).
    pub usage: Option<Usage>,
}

/// What one append stored.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The tool-call ids of the posted results ([`ThreadAppend::answers`]) stored now: each
    /// answers a call the thread held unanswered, so no later append stores it again.
    pub answered: Vec<String>,
}

/// Thread storage; every operation is scoped to `owner`.
pub trait ThreadStore: Send + Sync {
    /// The owner's threads, most recently updated first.
    fn list<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<ThreadMeta>, ThreadError>>;
    /// `None` when the owner has no such thread.
    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<ThreadMeta>, ThreadError>>;
    /// The stored messages, in order; `None` when the owner has no such thread.
    fn messages<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<WireModelMessage>>, ThreadError>>;
    /// The stored messages as one JSON array, exactly as appended (never re-parsed).
    fn messages_json<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, ThreadError>>;
    /// Appends in one transaction, creating the thread if needed. A step with nothing to
    /// store and no usage writes nothing.
    fn append<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        append: ThreadAppend<'a>,
    ) -> BoxFuture<'a, Result<Appended, ThreadError>>;
    /// `true` when the owner's thread existed and is gone.
    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, ThreadError>>;
}

/// First line of the first user message, at most 80 characters; else `Untitled thread`.
pub fn title_of<'a>(messages: impl IntoIterator<Item = &'a WireModelMessage>) -> String {
    let text = messages
        .into_iter()
        .find(|m| m.role == Role::User)
        .and_then(|m| match &m.content {
            MessageContent::Text(s) => Some(s.as_str()),
            MessageContent::Parts(parts) => parts.iter().find_map(|p| match p {
                ContentPart::Text { text, .. } => Some(text.as_str()),
                _ => None,
            }),
        });
    let line = text.and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()));
    match line {
        Some(l) => l.chars().take(TITLE_MAX_CHARS).collect(),
        None => "Untitled thread".to_owned(),
    }
}
