-- Threads as rows. A thread is keyed by (owner, id), so any user may use any conversation id
-- and one owner's id says nothing about another's. Messages are append-only rows keyed by
-- (owner, conversation, seq); tool-call ids are indexed so a step never re-reads its thread;
-- usage is summed in place. Every existing thread is carried over unchanged.

CREATE TABLE conversations (
    owner TEXT NOT NULL,
    id TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    -- Per-owner recency: larger is more recently updated.
    recency INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    -- Bytes of the stored messages' JSON.
    byte_count INTEGER NOT NULL,
    -- Usage: the first four are NULL together when no step reported usage; each subset
    -- is NULL when never reported (absent is not zero).
    input_tokens INTEGER,
    output_tokens INTEGER,
    total_tokens INTEGER,
    reported_steps INTEGER,
    cached_input_tokens INTEGER,
    reasoning_tokens INTEGER,
    cache_write_input_tokens INTEGER,
    PRIMARY KEY (owner, id)
) WITHOUT ROWID;

CREATE INDEX conversations_by_recency ON conversations (owner, recency);

CREATE TABLE conversation_messages (
    owner TEXT NOT NULL,
    conversation TEXT NOT NULL,
    seq INTEGER NOT NULL,
    -- One `WireModelMessage` as JSON, exactly as `GET …/model-messages` returns it.
    body TEXT NOT NULL,
    PRIMARY KEY (owner, conversation, seq),
    FOREIGN KEY (owner, conversation) REFERENCES conversations (owner, id) ON DELETE CASCADE
) WITHOUT ROWID;

-- Tool calls stored in a thread, and whether the thread holds their result.
CREATE TABLE conversation_tool_calls (
    owner TEXT NOT NULL,
    conversation TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    answered INTEGER NOT NULL,
    PRIMARY KEY (owner, conversation, tool_call_id),
    FOREIGN KEY (owner, conversation) REFERENCES conversations (owner, id) ON DELETE CASCADE
) WITHOUT ROWID;

INSERT INTO conversations
SELECT owner, id, title, created_at, updated_at, seq,
       json_array_length(messages),
       0,
       json_extract(usage, '$.inputTokens'),
       json_extract(usage, '$.outputTokens'),
       json_extract(usage, '$.totalTokens'),
       json_extract(usage, '$.reportedSteps'),
       json_extract(usage, '$.cachedInputTokens'),
       json_extract(usage, '$.reasoningTokens'),
       json_extract(usage, '$.cacheWriteInputTokens')
FROM threads;

INSERT INTO conversation_messages
SELECT t.owner, t.id, m.key, m.value
FROM threads AS t, json_each(t.messages) AS m;

UPDATE conversations SET byte_count = (
    SELECT COALESCE(SUM(length(CAST(body AS BLOB))), 0) FROM conversation_messages AS m
    WHERE m.owner = conversations.owner AND m.conversation = conversations.id
);

INSERT OR IGNORE INTO conversation_tool_calls
SELECT t.owner, t.id, json_extract(p.value, '$.toolCallId'), 0
FROM threads AS t, json_each(t.messages) AS m,
     json_each(CASE WHEN json_type(m.value, '$.content') = 'array'
                    THEN json_extract(m.value, '$.content') ELSE '[]' END) AS p
WHERE json_extract(p.value, '$.type') = 'tool-call'
  AND json_type(p.value, '$.toolCallId') = 'text';

UPDATE conversation_tool_calls SET answered = 1
WHERE EXISTS (
    SELECT 1
    FROM threads AS t, json_each(t.messages) AS m,
         json_each(CASE WHEN json_type(m.value, '$.content') = 'array'
                        THEN json_extract(m.value, '$.content') ELSE '[]' END) AS p
    WHERE t.owner = conversation_tool_calls.owner
      AND t.id = conversation_tool_calls.conversation
      AND json_extract(p.value, '$.type') = 'tool-result'
      AND json_extract(p.value, '$.toolCallId') = conversation_tool_calls.tool_call_id
);

DROP TABLE threads;
