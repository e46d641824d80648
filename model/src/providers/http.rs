//! Sending one streaming request: connect and header timeouts, 429/5xx retried with bounded
//! backoff before any byte of a stream is read, and vendor failures turned into safe
//! `ModelError`s. No message built here ever contains a URL, a host or a key: reqwest's
//! own errors (which name the URL) are never formatted.

use std::net::IpAddr;
use std::time::Duration;

use futures_util::stream;
use reqwest::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{Client, Response, StatusCode};

use super::config::{HttpSettings, RetryPolicy};
use super::sanitize::{reported_error, sanitize_vendor_text, vendor_error_text, MAX_MESSAGE_CHARS};
use super::sse::ByteChunks;
use crate::provider::{ModelError, ModelErrorKind};

/// The most of an error body read to find the vendor's message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// How long reading an error body may take.
const ERROR_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Builds the client every request of one provider shares.
pub(crate) fn client(settings: &HttpSettings, base_url: &str) -> Result<Client, reqwest::Error> {
    let mut builder = Client::builder()
        .connect_timeout(settings.connect_timeout)
        .pool_idle_timeout(Duration::from_secs(60));
    if is_loopback(base_url) {
        // A local server (Ollama, llama.cpp, a test stand-in) is never reached through a proxy.
        builder = builder.no_proxy();
    }
    if settings.http2_prior_knowledge {
        builder = builder.http2_prior_knowledge();
    }
    builder.build()
}

/// Whether the vendor's base URL names this machine (a parsed host, not a prefix: a remote
/// `127.example.com` is not loopback).
fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    url.host_str().is_some_and(|host| {
        host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// One POST with a JSON body, retried per `settings.retry`; returns the 2xx response.
pub(crate) async fn post(
    client: &Client,
    settings: &HttpSettings,
    url: &str,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &[&str],
) -> Result<Response, ModelError> {
    let mut attempt = 0usize;
    loop {
        let request = client
            .post(url)
            .headers(headers.clone())
            .body(body.to_vec())
            .send();
        let response = match tokio::time::timeout(settings.response_timeout, request).await {
            Err(_) => return Err(transport("The model provider did not respond in time.")),
            Ok(Err(error)) => return Err(send_error(&error)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() && is_json(response.headers()) {
            // A 2xx JSON answer is not a stream: an error behind a proxy, or a server that
            // ignored `stream: true`.
            let body = read_error_body(response).await;
            return Err(not_streamed(&body, secrets));
        }
        if status.is_success() {
            return Ok(response);
        }
        if retryable(status) && attempt < settings.retry.delays.len() {
            let delay = retry_delay(&settings.retry, attempt, response.headers());
            drop(response);
            tokio::time::sleep(delay).await;
            attempt += 1;
            continue;
        }
        let body = read_error_body(response).await;
        return Err(vendor_error(status, &body, secrets));
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

fn not_streamed(body: &[u8], secrets: &[&str]) -> ModelError {
    match vendor_error_text(body) {
        Some(text) => reported_error(Some(text), secrets),
        None => ModelError::new(
            ModelErrorKind::Protocol,
            "The model provider answered without streaming.",
        ),
    }
}

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// The policy's delay, or the vendor's `retry-after` seconds when longer (capped).
fn retry_delay(policy: &RetryPolicy, attempt: usize, headers: &HeaderMap) -> Duration {
    let base = policy.delays.get(attempt).copied().unwrap_or_default();
    let asked = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s.min(86_400.0)));
    match asked {
        Some(asked) if asked > base => asked.min(policy.max_retry_after.max(base)),
        _ => base,
    }
}

async fn read_error_body(mut response: Response) -> Vec<u8> {
    let read = async {
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            let room = MAX_ERROR_BODY.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= MAX_ERROR_BODY {
                break;
            }
        }
        body
    };
    tokio::time::timeout(ERROR_BODY_TIMEOUT, read)
        .await
        .unwrap_or_default()
}

/// The safe message for a vendor's 4xx/5xx answer.
pub(crate) fn vendor_error(status: StatusCode, body: &[u8], secrets: &[&str]) -> ModelError {
    let code = status.as_u16();
    let lead = if status == StatusCode::TOO_MANY_REQUESTS {
        format!("The model provider is rate limiting requests (HTTP {code})")
    } else if status.is_server_error() {
        format!("The model provider failed (HTTP {code})")
    } else {
        format!("The model provider rejected the request (HTTP {code})")
    };
    let message = match vendor_error_text(body) {
        Some(text) => {
            let room = MAX_MESSAGE_CHARS.saturating_sub(lead.chars().count() + 2);
            format!("{lead}: {}", sanitize_vendor_text(&text, secrets, room))
        }
        None => format!("{lead}."),
    };
    ModelError::new(ModelErrorKind::Vendor, message)
}

fn transport(message: &str) -> ModelError {
    ModelError::new(ModelErrorKind::Transport, message)
}

fn send_error(error: &reqwest::Error) -> ModelError {
    if error.is_connect() {
        transport("Could not connect to the model provider.")
    } else if error.is_timeout() {
        transport("The model provider did not respond in time.")
    } else {
        transport("The request to the model provider failed.")
    }
}

/// The body of a 2xx response as byte chunks; a broken connection is a transport error.
pub(crate) fn body_chunks(response: Response) -> ByteChunks {
    Box::pin(stream::unfold(Some(response), |state| async move {
        let mut response = state?;
        match response.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk.to_vec()), Some(response))),
            Ok(None) => None,
            Err(_) => Some((
                Err(transport(
                    "The connection to the model provider broke mid-stream.",
                )),
                None,
            )),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn loopback_detection() {
        assert!(is_loopback("http://127.0.0.1:1234/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:8080"));
        assert!(!is_loopback("https://api.example.com/v1"));
        assert!(is_loopback("http://127.0.0.2:9000"));
        assert!(!is_loopback("https://127.example.com/v1"));
        assert!(!is_loopback("https://localhost.example.com/v1"));
        assert!(!is_loopback("not a url"));
    }

    #[test]
    fn retry_after_is_honoured_within_the_cap() {
        let policy = RetryPolicy {
            delays: vec![Duration::from_millis(10)],
            max_retry_after: Duration::from_secs(2),
        };
        let mut headers = HeaderMap::new();
        assert_eq!(retry_delay(&policy, 0, &headers), Duration::from_millis(10));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
        assert_eq!(retry_delay(&policy, 0, &headers), Duration::from_secs(1));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("600"));
        assert_eq!(retry_delay(&policy, 0, &headers), Duration::from_secs(2));
    }

    #[test]
    fn vendor_errors_are_safe_and_short() {
        let body = br#"{"error":{"message":"Invalid key sk-abcdef123456 for https://api.example.com/v1 at 10.1.2.3"}}"#;
        let e = vendor_error(StatusCode::BAD_REQUEST, body, &[]);
        assert_eq!(e.kind, ModelErrorKind::Vendor);
        assert_eq!(
            e.message,
            "The model provider rejected the request (HTTP 400): Invalid key [redacted] for [redacted] at [redacted]"
        );
        let e = vendor_error(StatusCode::BAD_GATEWAY, b"<html>", &[]);
        assert_eq!(e.message, "The model provider failed (HTTP 502).");
        let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x ".repeat(400));
        let e = vendor_error(StatusCode::BAD_REQUEST, long.as_bytes(), &[]);
        assert!(e.message.chars().count() <= MAX_MESSAGE_CHARS);
    }
}
