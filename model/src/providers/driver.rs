//! The driver that turns a vendor's SSE events into `ModelEvent`s through its decoder, and
//! what the decoders share: token counts, payload and argument parsing, fresh call ids.

use std::collections::VecDeque;

use eventsource_stream::Event;
use futures_util::stream::{self, StreamExt};
use serde_json::Value;

use super::sse;
use crate::provider::{EventStream, ModelError, ModelErrorKind, ModelEvent};

/// What a decoder tells the driver after one SSE event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    /// The step is complete (`Finish` was queued); nothing more is read.
    Finished,
}

/// A vendor's stream decoder: a pure state machine over SSE events.
pub(super) trait Decoder: Send + 'static {
    fn on_event(
        &mut self,
        event: &Event,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<Flow, ModelError>;

    /// The byte stream ended; queue what completes the step or fail.
    fn on_end(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError>;
}

struct Driver<D> {
    events: sse::SseEvents,
    decoder: D,
    queue: VecDeque<ModelEvent>,
    error: Option<ModelError>,
    done: bool,
}

/// Runs `decoder` over `events`: everything decoded before a failure is yielded first, then
/// the failure, then the stream ends; nothing is read after `Finish`.
pub(super) fn drive<D: Decoder>(events: sse::SseEvents, decoder: D) -> EventStream {
    let driver = Driver {
        events,
        decoder,
        queue: VecDeque::new(),
        error: None,
        done: false,
    };
    Box::pin(stream::unfold(driver, |mut d| async move {
        loop {
            if let Some(event) = d.queue.pop_front() {
                return Some((Ok(event), d));
            }
            if let Some(error) = d.error.take() {
                return Some((Err(error), d));
            }
            if d.done {
                return None;
            }
            let step = match d.events.next().await {
                Some(Ok(event)) => d.decoder.on_event(&event, &mut d.queue),
                Some(Err(error)) => Err(error),
                None => d.decoder.on_end(&mut d.queue).map(|()| Flow::Finished),
            };
            match step {
                Ok(Flow::Continue) => {}
                Ok(Flow::Finished) => d.done = true,
                Err(error) => {
                    d.error = Some(error);
                    d.done = true;
                }
            }
        }
    }))
}

/// A token count as vendors send it: a finite number ≥ 0 (floored); anything else is absent.
pub(super) fn count(value: Option<&Value>) -> Option<u64> {
    let v = value?.as_f64()?;
    (v.is_finite() && v >= 0.0).then(|| v.floor().min(u64::MAX as f64) as u64)
}

/// Adds two optional counts: absent only when both are.
pub(super) fn add_counts(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
    }
}

pub(super) fn protocol_error(message: &str) -> ModelError {
    ModelError::new(ModelErrorKind::Protocol, message)
}

pub(super) const MALFORMED_JSON: &str =
    "The model provider sent a malformed event (not valid JSON).";
pub(super) const ENDED_EARLY: &str = "The model stream ended before the step finished.";

/// Parses one SSE `data` payload as a JSON object.
pub(super) fn parse_payload(data: &str) -> Result<serde_json::Map<String, Value>, ModelError> {
    match serde_json::from_str::<Value>(data) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(protocol_error(
            "The model provider sent a malformed event (not a JSON object).",
        )),
        Err(_) => Err(protocol_error(MALFORMED_JSON)),
    }
}

/// Parses streamed tool-call arguments: empty means `{}`; anything but a JSON object is
/// reported through `invalid_input` with `{}` as the input.
pub(super) fn parse_arguments(raw: &str) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (Value::Object(serde_json::Map::new()), None);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => (Value::Object(map), None),
        Ok(_) => (
            Value::Object(serde_json::Map::new()),
            Some("The tool arguments were not a JSON object.".to_owned()),
        ),
        Err(_) => (
            Value::Object(serde_json::Map::new()),
            Some("The tool arguments were not valid JSON.".to_owned()),
        ),
    }
}

/// A fresh tool-call id for vendors that send none; unique within this process.
pub(super) fn fresh_call_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "call_{nanos:08x}{:04x}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
