//! Server-sent events for the doors that re-encode the step engine's frames (`/agent/ai-sdk`,
//! `/agent/ag-ui`): the run writes frames into a channel, an encoder turns each frame into
//! JSON events, and each event goes out as one `data:` line.

use std::convert::Infallible;

use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use actix_web::web::Bytes;
use actix_web::{HttpResponse, HttpResponseBuilder};
use dpas_engine::{spawn_run, FrameSink, StepRun, FRAME_BUFFER};
use dpas_protocol::Frame;
use serde_json::Value;
use tokio::sync::mpsc;

/// Turns frames into events; `encode` returns `true` once the stream is complete.
pub(crate) trait FrameEncoder: Send + 'static {
    fn encode(&mut self, frame: Frame, out: &mut Vec<Value>) -> bool;
    /// Written after the last event (the AI SDK's `[DONE]`), if anything.
    fn trailer(&self) -> Option<&'static str> {
        None
    }
}

fn data_lines(events: &[Value], trailer: Option<&str>) -> Bytes {
    let mut out = Vec::with_capacity(128 * events.len());
    for event in events {
        out.extend_from_slice(b"data: ");
        // Serialising a `Value` cannot fail.
        let _ = serde_json::to_writer(&mut out, event);
        out.extend_from_slice(b"\n\n");
    }
    if let Some(trailer) = trailer {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(trailer.as_bytes());
        out.extend_from_slice(b"\n\n");
    }
    Bytes::from(out)
}

/// Starts the run as its own task (a departed client stops nothing) and streams its frames
/// through `encoder` as an SSE response built on `response`.
pub(crate) fn stream(
    run: StepRun,
    encoder: impl FrameEncoder,
    mut response: HttpResponseBuilder,
) -> HttpResponse {
    let (tx, rx) = mpsc::channel::<Frame>(FRAME_BUFFER);
    let closing = tx.clone();
    spawn_run(run, FrameSink::frames(tx), closing);
    let body = futures_util::stream::unfold(
        (rx, encoder, false),
        |(mut rx, mut encoder, finished)| async move {
            if finished {
                return None;
            }
            let frame = rx.recv().await?;
            let mut events = Vec::new();
            let done = encoder.encode(frame, &mut events);
            let trailer = if done { encoder.trailer() } else { None };
            Some((
                Ok::<_, Infallible>(data_lines(&events, trailer)),
                (rx, encoder, done),
            ))
        },
    );
    response
        .insert_header((CONTENT_TYPE, "text/event-stream"))
        .insert_header((CACHE_CONTROL, "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_data_lines_and_the_trailer_closes() {
        let bytes = data_lines(&[json!({"a": 1}), json!("x")], Some("[DONE]"));
        assert_eq!(
            &bytes[..],
            b"data: {\"a\":1}\n\ndata: \"x\"\n\ndata: [DONE]\n\n"
        );
        assert!(data_lines(&[], None).is_empty());
    }
}
