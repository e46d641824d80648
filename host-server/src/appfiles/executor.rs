//! The HTTP executor of file capabilities: one governed call is one request (or, for an
//! idempotent capability, up to three) to the app's backend, with the validated input as
//! the JSON body, who the actor is, and the invocation id. Whatever the backend does, the
//! call ends within its `timeoutMs` with an output or a typed error.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use ring::hmac;
use serde_json::{json, Value};

use dpas_governance::{
    Actor, CapabilityError, CapabilityErrorCode, HandlerError, InputIssue, InvocationContext,
};

/// The header that tells the backend who acts, signed (see [`ActorSigner`]).
pub const ACTOR_HEADER: &str = "x-dpas-actor";
/// The header that names the execution; the same on every retry of one call.
pub const INVOCATION_HEADER: &str = "x-dpas-invocation-id";
/// Attempts an idempotent call gets at most (the first and two retries).
pub const MAX_ATTEMPTS: u32 = 3;
/// Wait before the first retry; doubled before the next.
pub const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// Largest backend answer read; a larger one is an error, read no further.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
/// Longest backend refusal message passed on (in characters).
pub const MAX_MESSAGE_CHARS: usize = 300;
/// Largest refusal body read for its message.
const MAX_REFUSAL_BYTES: usize = 16 * 1024;

/// Characters a placeholder's value keeps as they are: RFC 3986's unreserved ones.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Signs the `X-DPAS-Actor` header: `v1.<payload>.<signature>`, where `payload` is the
/// base64url (no padding) of the JSON `{"id","kind","name","role","iat","invocationId"}`
/// (plus `"email"` when the identity gave one apart from the id) and
/// `signature` the base64url of HMAC-SHA256 over the ASCII text `v1.<payload>`, keyed with
/// HMAC-SHA256(key = the session secret's bytes, message = `dpas-actor-v1`).
#[derive(Clone)]
pub struct ActorSigner {
    key: hmac::Key,
}

impl std::fmt::Debug for ActorSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ActorSigner")
    }
}

impl ActorSigner {
    /// The key derived from the session secret (a backend derives the same one).
    pub fn from_secret(secret: &[u8]) -> Self {
        let master = hmac::Key::new(hmac::HMAC_SHA256, secret);
        let derived = hmac::sign(&master, b"dpas-actor-v1");
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
        }
    }

    /// A key nobody else knows (the demo's per-process secret): signed, not verifiable.
    pub fn random() -> Self {
        let bytes: [u8; 32] = rand_bytes();
        Self::from_secret(&bytes)
    }

    /// The header value for `actor` acting in `invocation_id`, issued at `iat` (Unix s).
    pub fn sign(&self, actor: &Actor, invocation_id: &str, iat: i64) -> String {
        let mut claims = json!({
            "id": actor.id,
            "kind": actor.kind,
            "name": actor.display_name,
            "role": actor.role,
            "iat": iat,
            "invocationId": invocation_id,
        });
        if let Some(email) = &actor.email {
            claims["email"] = json!(email);
        }
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("v1.{payload}");
        let tag = hmac::sign(&self.key, signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The claims of a header this key signed, or `None` (what a Rust backend would do).
    pub fn verify(&self, header: &str) -> Option<Value> {
        let (signed, tag) = header.rsplit_once('.')?;
        let payload = signed.strip_prefix("v1.")?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        hmac::verify(&self.key, signed.as_bytes(), &tag).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
    }
}

fn rand_bytes() -> [u8; 32] {
    // Two v4 UUIDs are 244 bits from the OS's generator.
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out
}

/// A URL on the backend with `{name}` placeholders for top-level input properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Input(String),
}

impl UrlTemplate {
    /// Parses `url`; each placeholder must name a required property of `input_schema` and
    /// come after the host (input never chooses where the call goes).
    pub fn parse(url: &str, input_schema: &Value) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = url;
        while let Some(open) = rest.find(['{', '}']) {
            if rest[open..].starts_with('}') {
                return Err(format!("http.url {url:?} has a '}}' without its '{{'"));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| format!("http.url {url:?} has a '{{' without its '}}'"))?;
            let name = &rest[open + 1..open + close];
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(format!(
                    "http.url placeholder {{{name}}} must name an input property"
                ));
            }
            let required = input_schema["required"]
                .as_array()
                .is_some_and(|r| r.iter().any(|p| p == name));
            if !required {
                return Err(format!(
                    "http.url placeholder {{{name}}} must be a required property of inputSchema"
                ));
            }
            parts.push(Part::Literal(rest[..open].to_owned()));
            parts.push(Part::Input(name.to_owned()));
            rest = &rest[open + close + 1..];
        }
        parts.push(Part::Literal(rest.to_owned()));
        let authority_end = url.split_once("://").map_or(0, |(s, r)| {
            s.len() + 3 + r.find(['/', '?', '#']).unwrap_or(r.len())
        });
        if url.find('{').is_some_and(|first| first < authority_end) {
            return Err(format!(
                "http.url {url:?}: placeholders may only follow the host"
            ));
        }
        let template = Self { parts };
        let sample = template.fill(|_| "x".to_owned());
        let parsed = reqwest::Url::parse(&sample)
            .map_err(|e| format!("http.url {url:?} is not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(format!(
                "http.url {url:?} must be an http(s) URL with a host"
            ));
        }
        Ok(template)
    }

    fn fill(&self, mut value: impl FnMut(&str) -> String) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(s) => s.clone(),
                Part::Input(name) => value(name),
            })
            .collect()
    }

    /// The URL for a validated input: each placeholder's value percent-encoded. A value that
    /// is not a string, number or boolean, or that is a dot segment, is refused.
    pub fn render(&self, input: &Value) -> Result<String, CapabilityError> {
        let mut issues = Vec::new();
        let url = self.fill(|name| {
            let text = match &input[name] {
                Value::String(s) => s.clone(),
                v @ (Value::Number(_) | Value::Bool(_)) => v.to_string(),
                _ => String::new(),
            };
            if text.is_empty() || text == "." || text == ".." {
                issues.push(InputIssue {
                    path: format!("/{name}"),
                    message: "must be a non-empty string, number or boolean other than '.' and '..' (it goes into the URL)".to_owned(),
                });
            }
            utf8_percent_encode(&text, UNRESERVED).to_string()
        });
        if issues.is_empty() {
            Ok(url)
        } else {
            Err(CapabilityError::input_invalid(issues))
        }
    }
}

/// One file capability's HTTP target.
#[derive(Debug)]
pub struct HttpCall {
    pub capability_id: String,
    pub method: reqwest::Method,
    pub url: UrlTemplate,
    /// The whole call's deadline, retries included.
    pub timeout: Duration,
    pub idempotent: bool,
    pub output: Option<jsonschema::Validator>,
}

/// Why one attempt did not produce an output.
#[derive(Debug)]
enum Failure {
    /// No connection, or it broke before an answer (connection refused, reset, DNS).
    Unreachable,
    /// 5xx.
    Server(u16),
    /// 4xx, with the backend's message when it gave a usable one.
    Refused(u16, Option<String>),
    /// 1xx or 3xx: not an answer (redirects are not followed).
    Unexpected(u16),
    NotJson,
    TooLarge,
    /// The answer broke off half-way.
    CutOff,
}

impl Failure {
    /// Worth another attempt of an idempotent call.
    fn transient(&self) -> bool {
        matches!(self, Self::Unreachable | Self::Server(_))
    }

    fn into_error(self) -> HandlerError {
        HandlerError::Rejected(match self {
            Self::Unreachable => "The app's backend could not be reached.".to_owned(),
            Self::Server(status) => format!("The app's backend failed (HTTP {status})."),
            Self::Refused(_, Some(message)) => message,
            Self::Refused(status, None) => {
                format!("The app's backend refused the call (HTTP {status}).")
            }
            Self::Unexpected(status) => {
                format!("The app's backend answered HTTP {status}, which is not a result.")
            }
            Self::NotJson => "The app's backend answered something other than JSON.".to_owned(),
            Self::TooLarge => {
                format!("The app's backend answered more than {MAX_RESPONSE_BYTES} bytes.")
            }
            Self::CutOff => "The app's backend's answer broke off.".to_owned(),
        })
    }
}

/// Control characters and the invisible ones that change text direction or hide text.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// What a refusal may say: control and direction-changing characters removed, whitespace
/// collapsed, at most [`MAX_MESSAGE_CHARS`] characters; `None` when nothing is left.
pub fn safe_message(raw: &str) -> Option<String> {
    let cleaned: String = raw
        .chars()
        .map(|c| if hidden(c) { ' ' } else { c })
        .collect();
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    if words.is_empty() {
        return None;
    }
    let joined = words.join(" ");
    if joined.chars().count() <= MAX_MESSAGE_CHARS {
        return Some(joined);
    }
    let mut cut: String = joined.chars().take(MAX_MESSAGE_CHARS - 1).collect();
    cut.push('…');
    Some(cut)
}

/// The message of a refusal body: JSON `message`, `error` (a string) or `error.message`, or
/// a `text/plain` body.
fn refusal_message(body: &[u8], plain_text: bool) -> Option<String> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let text = v["message"]
            .as_str()
            .or_else(|| v["error"].as_str())
            .or_else(|| v["error"]["message"].as_str())?;
        return safe_message(text);
    }
    if plain_text {
        return safe_message(&String::from_utf8_lossy(body));
    }
    None
}

async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, Failure> {
    if resp
        .content_length()
        .is_some_and(|n| n > u64::try_from(cap).unwrap_or(u64::MAX))
    {
        return Err(Failure::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|_| Failure::CutOff)? {
        if body.len() + chunk.len() > cap {
            return Err(Failure::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Sends file capabilities' calls to the app's backend.
#[derive(Debug)]
pub struct HttpExecutor {
    client: reqwest::Client,
    signer: ActorSigner,
    forward_authorization: bool,
}

impl HttpExecutor {
    /// An executor that signs `X-DPAS-Actor` with `signer` and, with `forward_authorization`
    /// (`--auth jwt`: the app's own token), passes on the `Authorization` header the actor's
    /// request carried. It follows no redirects and uses no proxy: the backend is called
    /// directly, at the address the file names.
    pub fn new(signer: ActorSigner, forward_authorization: bool) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("dpas-host-server/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            client,
            signer,
            forward_authorization,
        })
    }

    /// Runs one governed call: the output, or the error its envelope will carry.
    pub async fn call(
        &self,
        call: &HttpCall,
        ctx: &InvocationContext,
        input: &Value,
    ) -> Result<Value, HandlerError> {
        let deadline = Instant::now() + call.timeout;
        let url = call.url.render(input).map_err(HandlerError::Governed)?;
        let body = serde_json::to_vec(input).map_err(HandlerError::internal)?;
        let mut attempt = 1;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let outcome =
                tokio::time::timeout(remaining, self.attempt(call, ctx, &url, &body)).await;
            let failure = match outcome {
                Err(_) => {
                    return Err(HandlerError::Governed(CapabilityError::of(
                        CapabilityErrorCode::Timeout,
                    )))
                }
                Ok(Ok(answer)) => return check_output(call, answer),
                Ok(Err(failure)) => failure,
            };
            let backoff = RETRY_BACKOFF * 2u32.pow(attempt - 1);
            let retry = call.idempotent
                && failure.transient()
                && attempt < MAX_ATTEMPTS
                && Instant::now() + backoff < deadline;
            if !retry {
                return Err(failure.into_error());
            }
            tracing::warn!(capability = %call.capability_id, attempt, ?failure, "backend call failed; retrying");
            tokio::time::sleep(backoff).await;
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        call: &HttpCall,
        ctx: &InvocationContext,
        url: &str,
        body: &[u8],
    ) -> Result<Value, Failure> {
        let iat = time::OffsetDateTime::now_utc().unix_timestamp();
        let mut request = self
            .client
            .request(call.method.clone(), url)
            .header(ACCEPT, "application/json")
            .header(INVOCATION_HEADER, &ctx.execution_id)
            .header(
                ACTOR_HEADER,
                self.signer.sign(&ctx.actor, &ctx.execution_id, iat),
            );
        let credential = ctx
            .actor
            .authorization
            .as_ref()
            .filter(|_| self.forward_authorization)
            .and_then(|c| HeaderValue::from_str(c.expose()).ok());
        if let Some(mut value) = credential {
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        if call.method != reqwest::Method::GET {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_vec());
        }
        let resp = request.send().await.map_err(|_| Failure::Unreachable)?;
        let status = resp.status();
        if status.is_success() {
            let bytes = read_capped(resp, MAX_RESPONSE_BYTES).await?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return Ok(Value::Null);
            }
            return serde_json::from_slice(&bytes).map_err(|_| Failure::NotJson);
        }
        if status.is_client_error() {
            let plain = resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("text/plain"));
            let message = read_capped(resp, MAX_REFUSAL_BYTES)
                .await
                .ok()
                .and_then(|b| refusal_message(&b, plain));
            return Err(Failure::Refused(status.as_u16(), message));
        }
        if status.is_server_error() {
            return Err(Failure::Server(status.as_u16()));
        }
        Err(Failure::Unexpected(status.as_u16()))
    }
}

fn check_output(call: &HttpCall, output: Value) -> Result<Value, HandlerError> {
    if let Some(validator) = &call.output {
        if let Some(issue) = validator.iter_errors(&output).next() {
            tracing::warn!(capability = %call.capability_id, path = %issue.instance_path(), error = %issue.masked(), "the backend's answer does not match outputSchema");
            return Err(HandlerError::Rejected(
                "The app's backend answered a result that does not match the capability's outputSchema.".to_owned(),
            ));
        }
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(required: &[&str]) -> Value {
        json!({"type": "object", "required": required})
    }

    #[test]
    fn placeholders_are_required_input_after_the_host() {
        let t = UrlTemplate::parse("http://127.0.0.1:9/todos/{id}?v={v}", &schema(&["id", "v"]))
            .unwrap();
        assert_eq!(
            t.render(&json!({"id": "a b/../c?d#é", "v": 3})).unwrap(),
            "http://127.0.0.1:9/todos/a%20b%2F..%2Fc%3Fd%23%C3%A9?v=3"
        );
        for v in [
            json!(".."),
            json!("."),
            json!(""),
            json!({"x": 1}),
            json!(null),
        ] {
            let err = t.render(&json!({"id": v, "v": 1})).unwrap_err();
            assert_eq!(err.code, CapabilityErrorCode::InputInvalid, "{v}");
        }
        let bad = [
            ("http://{host}/x", "only follow the host"),
            ("http://h:{port}/x", "only follow the host"),
            ("http://h/{id", "without its '}'"),
            ("http://h/id}", "without its '{'"),
            ("http://h/{}", "must name an input property"),
            ("http://h/{other}", "required property"),
            ("ftp://h/{id}", "http(s) URL"),
            ("not a url", "not a URL"),
        ];
        for (url, why) in bad {
            let err = UrlTemplate::parse(url, &schema(&["id", "host", "port"])).unwrap_err();
            assert!(err.contains(why), "{url}: {err}");
        }
    }

    #[test]
    fn refusal_messages_are_bounded_and_stripped() {
        assert_eq!(
            safe_message("  No\u{7}such\n\ttodo \u{202E}x  ").as_deref(),
            Some("No such todo x")
        );
        assert_eq!(safe_message("\u{0}\n "), None);
        let long = safe_message(&"é".repeat(1000)).unwrap();
        assert_eq!(long.chars().count(), MAX_MESSAGE_CHARS);
        assert!(long.ends_with('…'));
        assert_eq!(
            refusal_message(br#"{"error":{"message":"Nope"}}"#, false).as_deref(),
            Some("Nope")
        );
        assert_eq!(
            refusal_message(br#"{"error":"Gone"}"#, false).as_deref(),
            Some("Gone")
        );
        assert_eq!(refusal_message(b"<html>404</html>", false), None);
        assert_eq!(
            refusal_message(b"Plain refusal", true).as_deref(),
            Some("Plain refusal")
        );
    }

    #[test]
    fn the_actor_header_verifies_only_with_the_same_key() {
        let signer = ActorSigner::from_secret(b"0123456789abcdef0123456789abcdef");
        let actor = Actor::user("u1", "Una", "editor");
        let header = signer.sign(&actor, "exe_1", 1_700_000_000);
        // Computed with Node's `crypto` as the server README tells a backend to verify it.
        assert_eq!(
            header,
            "v1.eyJpZCI6InUxIiwia2luZCI6InVzZXIiLCJuYW1lIjoiVW5hIiwicm9sZSI6ImVkaXRvciIsImlhdCI6MTcwMDAwMDAwMCwiaW52b2NhdGlvbklkIjoiZXhlXzEifQ.0Wyg70oWV1ZINuSI3I3pmxpvP8TLYym1EBwTNlE5lpA"
        );
        let claims = signer.verify(&header).unwrap();
        assert_eq!(
            claims,
            json!({"id": "u1", "kind": "user", "name": "Una", "role": "editor", "iat": 1_700_000_000, "invocationId": "exe_1"})
        );
        let other = ActorSigner::from_secret(b"another-secret-another-secret-xx");
        assert!(other.verify(&header).is_none());
        let (signed, _) = header.rsplit_once('.').unwrap();
        let forged_payload = URL_SAFE_NO_PAD.encode(r#"{"id":"admin","role":"editor"}"#);
        let tag = header.rsplit_once('.').unwrap().1;
        assert!(signer
            .verify(&format!("v1.{forged_payload}.{tag}"))
            .is_none());
        assert!(signer.verify(signed).is_none());
    }

    proptest::proptest! {
        /// Whatever a backend says, what reaches the caller is short and shows no control
        /// or direction-changing characters.
        #[test]
        fn any_refusal_text_is_made_safe(raw in ".{0,600}") {
            if let Some(m) = safe_message(&raw) {
                let shown = m.chars().any(hidden);
                proptest::prop_assert!(m.chars().count() <= MAX_MESSAGE_CHARS);
                proptest::prop_assert!(!shown);
                proptest::prop_assert_eq!(m.trim(), m.as_str());
            }
        }
    }
}
