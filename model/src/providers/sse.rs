//! SSE events from a response body: the bytes are checked before `eventsource-stream` parses
//! them, so no byte sequence can make the parser panic or buffer without bound.
//!
//! The guard (a) validates UTF-8 incrementally and fails on the first invalid sequence,
//! (b) strips a leading byte-order mark itself (eventsource-stream 0.2.3 slices one byte
//! into the three-byte BOM and panics), (c) caps the length of one line, and (d) appends a
//! blank line at the end of the body so a last event without its terminating blank line is
//! still dispatched.

use std::pin::Pin;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::stream::{self, Stream, StreamExt};

use crate::provider::{ModelError, ModelErrorKind};

/// The longest line accepted (64 MiB): far above any vendor event, far below trouble.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// A body as a stream of byte chunks, errors already made safe.
pub(crate) type ByteChunks = Pin<Box<dyn Stream<Item = Result<Vec<u8>, ModelError>> + Send>>;

pub(crate) type SseEvents = Pin<Box<dyn Stream<Item = Result<Event, ModelError>> + Send>>;

struct Guard {
    body: ByteChunks,
    /// The incomplete UTF-8 sequence at the end of the last chunk (at most 3 bytes).
    pending: Vec<u8>,
    started: bool,
    line_bytes: usize,
    ended: bool,
}

impl Guard {
    /// Turns one chunk into valid text, keeping an incomplete trailing sequence back.
    fn text(&mut self, chunk: &[u8]) -> Result<String, ModelError> {
        self.pending.extend_from_slice(chunk);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            Err(e) if e.error_len().is_some() => {
                return Err(protocol("The model stream was not valid UTF-8."))
            }
            Err(e) => e.valid_up_to(),
        };
        let rest = self.pending.split_off(valid);
        let bytes = std::mem::replace(&mut self.pending, rest);
        let mut text = String::from_utf8(bytes)
            .map_err(|_| protocol("The model stream was not valid UTF-8."))?;
        if !self.started {
            // Every leading BOM goes, however the chunks fall: the parser must never see one
            // at its start (a second BOM would otherwise reach it and panic).
            let stripped = text.trim_start_matches('\u{feff}');
            if stripped.len() != text.len() {
                text = stripped.to_owned();
            }
            self.started = !text.is_empty();
        }
        match text.rfind(['\n', '\r']) {
            Some(pos) => self.line_bytes = text.len() - pos - 1,
            None => self.line_bytes = self.line_bytes.saturating_add(text.len()),
        }
        if self.line_bytes > MAX_LINE_BYTES {
            return Err(protocol("The model stream sent an oversized event."));
        }
        Ok(text)
    }
}

fn protocol(message: &str) -> ModelError {
    ModelError::new(ModelErrorKind::Protocol, message)
}

/// Checked text chunks of `body`, ending with one blank line.
fn guarded(body: ByteChunks) -> impl Stream<Item = Result<String, ModelError>> + Send {
    let guard = Guard {
        body,
        pending: Vec::new(),
        started: false,
        line_bytes: 0,
        ended: false,
    };
    stream::unfold(guard, |mut g| async move {
        if g.ended {
            return None;
        }
        let item = match g.body.next().await {
            Some(Ok(chunk)) => g.text(&chunk),
            Some(Err(error)) => Err(error),
            None if g.pending.is_empty() => {
                g.ended = true;
                return Some((Ok("\n\n".to_owned()), g));
            }
            None => Err(protocol("The model stream was not valid UTF-8.")),
        };
        if item.is_err() {
            g.ended = true;
        }
        Some((item, g))
    })
}

/// The SSE events of `body`. The first error ends the stream.
pub(crate) fn events(body: ByteChunks) -> SseEvents {
    let events = guarded(body).eventsource().map(|item| match item {
        Ok(event) => Ok(event),
        Err(EventStreamError::Transport(error)) => Err(error),
        Err(EventStreamError::Utf8(_)) => Err(protocol("The model stream was not valid UTF-8.")),
        Err(EventStreamError::Parser(_)) => Err(protocol(
            "The model stream was not valid server-sent events.",
        )),
    });
    let mut failed = false;
    Box::pin(events.take_while(move |item| {
        let keep = !failed;
        failed |= item.is_err();
        std::future::ready(keep)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(chunks: Vec<&'static [u8]>) -> ByteChunks {
        Box::pin(stream::iter(chunks.into_iter().map(|c| Ok(c.to_vec()))))
    }

    async fn collect(chunks: Vec<&'static [u8]>) -> Vec<Result<Event, ModelError>> {
        events(body(chunks)).collect().await
    }

    #[tokio::test]
    async fn repeated_leading_boms_never_reach_the_parser() {
        // Found by the SSE-noise property test: two BOMs, then an event.
        let out = collect(vec![
            b"\xef\xbb\xbf",
            b"\xef\xbb\xbf\xef\xbb",
            b"\xbfdata: 1\n\n",
        ])
        .await;
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].as_ref().map(|e| e.data.as_str()), Ok("1"));
    }

    #[tokio::test]
    async fn a_leading_bom_is_stripped_even_split() {
        let out = collect(vec![b"\xef", b"\xbb\xbfdata: 1\n\n"]).await;
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].as_ref().map(|e| e.data.as_str()), Ok("1"));
    }

    #[tokio::test]
    async fn the_last_event_without_a_blank_line_is_dispatched() {
        let out = collect(vec![b"data: 1\n\ndata: 2"]).await;
        let data: Vec<_> = out
            .iter()
            .map(|e| e.as_ref().unwrap().data.clone())
            .collect();
        assert_eq!(data, ["1", "2"]);
    }

    #[tokio::test]
    async fn invalid_utf8_fails_once_and_ends() {
        let out = collect(vec![b"data: 1\n\n", b"data: \xff\xfe\n\n", b"data: 3\n\n"]).await;
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].as_ref().unwrap_err().kind, ModelErrorKind::Protocol);
    }

    #[tokio::test]
    async fn a_split_multibyte_character_survives() {
        let out = collect(vec![b"data: \xc3", b"\xa9\n\n"]).await;
        assert_eq!(out[0].as_ref().map(|e| e.data.as_str()), Ok("é"));
    }
}
