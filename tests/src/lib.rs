//! Shared helpers for the integration tests: reading the reference traces
//! (`fixtures/reference-traces/`, located by `dpas_protocol::test_support`).

pub mod gated;
pub mod server;
pub mod testing;

use dpas_protocol::test_support::traces_dir;

/// A recorded response: status, lower-cased headers, raw body. A few records start with
/// the request instead (`HTTP GET /api/threads/…`): their `status` is `None`.
#[derive(Debug, Clone)]
pub struct RecordedResponse {
    pub status: Option<u16>,
    pub first_line: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a `*.response.txt`: a status line (`HTTP 409` or `HTTP/1.1 503 …`), headers, a
/// blank line, then the raw body.
pub fn parse_recorded_response(raw: &[u8]) -> RecordedResponse {
    // Headers end at the first blank line, written as `\n\n` or `\r\n\r\n`.
    let (split, sep) = match raw.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i)
            if raw
                .windows(2)
                .position(|w| w == b"\n\n")
                .is_none_or(|j| i < j) =>
        {
            (i, 4)
        }
        _ => (
            raw.windows(2)
                .position(|w| w == b"\n\n")
                .expect("a blank line after the headers"),
            2,
        ),
    };
    let head = std::str::from_utf8(&raw[..split]).expect("utf-8 head");
    let body = raw[split + sep..].to_vec();
    let mut lines = head.lines();
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok());
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    RecordedResponse {
        status,
        first_line: status_line.to_owned(),
        headers,
        body,
    }
}

/// Every trace name (`foo` for `foo.response.txt`) whose record is a chat response, sorted.
pub fn chat_trace_names() -> Vec<String> {
    trace_names()
        .into_iter()
        .filter(|n| read_trace_response(n).status.is_some())
        .collect()
}

/// Every trace name (`foo` for `foo.response.txt`), sorted; never empty, so a suite that
/// iterates over them cannot pass on nothing.
pub fn trace_names() -> Vec<String> {
    let dir = traces_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the reference traces at {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".response.txt")
                .map(str::to_owned)
        })
        .collect();
    assert!(
        !names.is_empty(),
        "no reference traces in {}",
        dir.display()
    );
    names.sort();
    names
}

pub fn read_trace_request(name: &str) -> Option<Vec<u8>> {
    std::fs::read(traces_dir().join(format!("{name}.request.json"))).ok()
}

pub fn read_trace_response(name: &str) -> RecordedResponse {
    let raw =
        std::fs::read(traces_dir().join(format!("{name}.response.txt"))).expect("response file");
    parse_recorded_response(&raw)
}
