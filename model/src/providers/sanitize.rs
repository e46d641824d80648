//! Safe messages from vendor error bodies: only the vendor's own error text is kept, and
//! from it every word that looks like a URL, a host, an address, an e-mail or a key is
//! replaced, as are the configured key and base URL wherever they appear.

use serde_json::Value;

/// The longest message handed to the loop (the reference cuts at 300 characters).
pub(crate) const MAX_MESSAGE_CHARS: usize = 300;

const REDACTED: &str = "[redacted]";

/// Top-level domains that make a dotted word a host name.
const TLDS: &[&str] = &[
    "com",
    "net",
    "org",
    "io",
    "ai",
    "dev",
    "app",
    "co",
    "cloud",
    "local",
    "internal",
    "lan",
    "localhost",
    "us",
    "uk",
    "eu",
    "de",
    "fr",
    "cn",
    "jp",
    "in",
    "sh",
    "me",
    "xyz",
    "info",
    "biz",
    "tech",
    "site",
    "online",
    "run",
    "host",
    "svc",
    "cluster",
    "corp",
    "home",
    "test",
    "example",
    "invalid",
];

/// The error text inside a vendor's error body, when the body is JSON and has one:
/// `error.message` (OpenAI, Anthropic), `error` as a string (Ollama), `message`, `detail`.
pub(crate) fn vendor_error_text(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    error_text(&value)
}

/// The error text inside an error object as vendors shape it.
pub(crate) fn error_text(value: &Value) -> Option<String> {
    let candidates = [
        value.pointer("/error/message"),
        value.get("error"),
        value.get("message"),
        value.get("detail"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().filter(|s| !s.trim().is_empty()))
        .map(str::to_owned)
}

/// A vendor error reported inside a 2xx answer or mid-stream, with the vendor's text when
/// there is one.
pub(crate) fn reported_error<S: AsRef<str>>(
    text: Option<String>,
    secrets: &[S],
) -> crate::provider::ModelError {
    const LEAD: &str = "The model provider reported an error";
    let message = match text {
        Some(text) => {
            let secrets: Vec<&str> = secrets.iter().map(AsRef::as_ref).collect();
            let room = MAX_MESSAGE_CHARS.saturating_sub(LEAD.len() + 2);
            format!("{LEAD}: {}", sanitize_vendor_text(&text, &secrets, room))
        }
        None => format!("{LEAD}."),
    };
    crate::provider::ModelError::new(crate::provider::ModelErrorKind::Vendor, message)
}

/// `text` with anything URL-, host-, address- or key-like replaced, the given secrets
/// removed wherever they occur, whitespace collapsed, and cut to `max_chars`.
pub fn sanitize_vendor_text(text: &str, secrets: &[&str], max_chars: usize) -> String {
    let mut text = text.to_owned();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        text = text.replace(secret, REDACTED);
    }
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| {
            if is_sensitive(word) {
                REDACTED.to_owned()
            } else {
                word.to_owned()
            }
        })
        .collect();
    truncate(&words.join(" "), max_chars)
}

/// Cuts `text` to at most `max_chars` characters, marking a cut with an ellipsis.
pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn is_sensitive(word: &str) -> bool {
    let core = word.trim_matches(|c: char| {
        matches!(
            c,
            '.' | ','
                | ';'
                | ':'
                | '!'
                | '?'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '"'
                | '\''
                | '`'
                | '<'
                | '>'
        )
    });
    if core.is_empty() {
        return false;
    }
    let lower = core.to_ascii_lowercase();
    // The rest of a URL whose configured base was already replaced.
    word.contains("[redacted]/")
        || lower.contains("://")
        || lower.starts_with("www.")
        || lower.contains('@')
        || lower.contains("localhost")
        || looks_like_address(&lower)
        || looks_like_address(&word.to_ascii_lowercase())
        || looks_like_host(&lower)
        || looks_like_key(core)
}

/// IPv4 (with or without a port) and IPv6-ish words.
fn looks_like_address(word: &str) -> bool {
    let host = word.split('/').next().unwrap_or(word);
    let v4 = host.split(':').next().unwrap_or(host);
    let octets: Vec<&str> = v4.split('.').collect();
    if octets.len() == 4
        && octets
            .iter()
            .all(|o| !o.is_empty() && o.len() <= 3 && o.bytes().all(|b| b.is_ascii_digit()))
    {
        return true;
    }
    let colons = word.matches(':').count();
    colons >= 2
        && word
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || matches!(b, b':' | b'.' | b'[' | b']' | b'%'))
}

/// `name.tld`, `name.tld:port`, `name.tld/path`, or `name:port`.
fn looks_like_host(word: &str) -> bool {
    let host = word.split('/').next().unwrap_or(word);
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    if port.is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    {
        return true;
    }
    let labels: Vec<&str> = name.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        && labels.last().is_some_and(|tld| TLDS.contains(tld))
}

/// Known key prefixes, long mixed-case alphanumeric runs, long hex runs, masked keys.
fn looks_like_key(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    const PREFIXES: &[&str] = &[
        "sk-", "sk_", "pk-", "pk_", "rk-", "rk_", "key-", "key_", "ghp_", "gho_", "gsk_", "xai-",
        "aiza", "bearer", "eyj",
    ];
    if PREFIXES.iter().any(|p| lower.starts_with(p)) && word.len() >= 8 {
        return true;
    }
    if word.contains("***") || word.contains("…") && word.len() >= 8 {
        return true;
    }
    let token_chars = word
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'+' | b'/' | b'='));
    if !token_chars || word.len() < 20 {
        return false;
    }
    let upper = word.bytes().any(|b| b.is_ascii_uppercase());
    let lower_case = word.bytes().any(|b| b.is_ascii_lowercase());
    let digit = word.bytes().any(|b| b.is_ascii_digit());
    let hex = word.len() >= 32 && word.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    (upper && lower_case && digit) || hex
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(text: &str) -> String {
        sanitize_vendor_text(text, &[], MAX_MESSAGE_CHARS)
    }

    #[test]
    fn urls_hosts_addresses_and_keys_go() {
        let out = clean(
            "Incorrect API key provided: sk-proj-abc***xyz. You can find your API key at \
             https://platform.example.com/account/api-keys. Upstream api.openai.com \
             10.0.0.12:8080 [::1]:443 localhost:11434 ops@example.com \
             Ab3dEf6hIj9kLm2nOp5qRs8t",
        );
        for leak in [
            "sk-proj",
            "https",
            "example.com",
            "api.openai.com",
            "10.0.0",
            "::1",
            "11434",
            "ops@",
            "Ab3dEf",
        ] {
            assert!(!out.contains(leak), "{leak} leaked in {out}");
        }
        assert!(out.starts_with("Incorrect API key provided: [redacted]"));
    }

    #[test]
    fn ordinary_vendor_messages_survive() {
        let text = "messages.1.content.0.tool_use.input: Field required; \
                    model 'llama3.2:3b' not found, try pulling it first (gpt-4o-2024-08-06)";
        assert_eq!(clean(text), text);
    }

    #[test]
    fn configured_secrets_go_wherever_they_are() {
        let out = sanitize_vendor_text("bad key=abcd1234xyz!", &["abcd1234xyz"], 300);
        assert_eq!(out, "bad key=[redacted]!");
    }

    #[test]
    fn long_text_is_cut() {
        let out = clean(&"word ".repeat(200));
        assert_eq!(out.chars().count(), MAX_MESSAGE_CHARS);
    }

    #[test]
    fn error_text_shapes() {
        assert_eq!(
            vendor_error_text(br#"{"type":"error","error":{"type":"x","message":"m1"}}"#),
            Some("m1".into())
        );
        assert_eq!(vendor_error_text(br#"{"error":"m2"}"#), Some("m2".into()));
        assert_eq!(
            vendor_error_text(br#"{"object":"error","message":"m3"}"#),
            Some("m3".into())
        );
        assert_eq!(vendor_error_text(b"<html>bad gateway</html>"), None);
    }
}
