//! The model providers this crate writes itself, for real vendors: an OpenAI-compatible
//! chat-completions adapter and an Anthropic Messages adapter, over `reqwest` and
//! `eventsource-stream`, and the `<vendor>:<model>` spec the server is configured with.
//!
//! Shared by the adapters: HTTP settings (timeouts, retry policy) in `config`, the request
//! sender that retries 429 and 5xx before the first byte in `http`, the driver that turns SSE
//! events into `ModelEvent`s in `driver`, and the history and texts they send in `request`.

pub mod anthropic;
mod config;
mod driver;
mod http;
pub mod openai;
mod request;
mod sanitize;
mod spec;
mod sse;

pub use anthropic::{AnthropicConfig, AnthropicProvider, ANTHROPIC_VERSION};
pub use config::{HttpSettings, ProviderConfigError, RetryPolicy};
pub use openai::{OpenAiConfig, OpenAiProvider};
pub use sanitize::sanitize_vendor_text;
pub use spec::{
    provider_from_spec, provider_from_spec_env, providers_from_spec, Vendor, VendorSpec,
};

#[cfg(test)]
mod tests {
    use super::driver::{add_counts, count, fresh_call_id, parse_arguments};
    use super::request::{repaired_history, tool_output_text};
    use dpas_protocol::{ContentPart, MessageContent, Role, WireModelMessage};
    use serde_json::json;

    #[test]
    fn counts_follow_h2() {
        assert_eq!(count(Some(&json!(3))), Some(3));
        assert_eq!(count(Some(&json!(3.7))), Some(3));
        assert_eq!(count(Some(&json!(-1))), None);
        assert_eq!(count(Some(&json!("3"))), None);
        assert_eq!(count(None), None);
        assert_eq!(add_counts(None, None), None);
        assert_eq!(add_counts(Some(2), None), Some(2));
        assert_eq!(add_counts(Some(2), Some(3)), Some(5));
    }

    #[test]
    fn arguments_parse_or_report() {
        assert_eq!(parse_arguments(""), (json!({}), None));
        assert_eq!(parse_arguments(" {\"a\":1} "), (json!({"a": 1}), None));
        assert!(parse_arguments("[1]").1.is_some());
        assert!(parse_arguments("{\"a\":").1.is_some());
    }

    fn call(id: &str) -> ContentPart {
        ContentPart::tool_call(id, "view_a", json!({}))
    }

    #[test]
    fn unanswered_calls_are_answered_and_orphans_dropped() {
        let history = vec![
            WireModelMessage::user_text("hi"),
            WireModelMessage::new(
                Role::Assistant,
                MessageContent::Parts(vec![call("a"), call("b")]),
            ),
            WireModelMessage::tool_result("a", "view_a", json!({"ok": true})),
            WireModelMessage::system_text("state"),
            WireModelMessage::tool_result("zz", "view_a", json!({"ok": true})),
            WireModelMessage::user_text("again"),
        ];
        let out = repaired_history(&history);
        let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool,
                Role::System,
                Role::User
            ]
        );
        match &out[3].parts()[0] {
            ContentPart::ToolResult {
                tool_call_id,
                output,
                ..
            } => {
                assert_eq!(tool_call_id, "b");
                assert_eq!(output["value"]["error"]["code"], "TOOL_NOT_EXECUTED");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn tool_outputs_as_text() {
        assert_eq!(
            tool_output_text(&json!({"type":"json","value":{"a":1}})),
            (r#"{"a":1}"#.into(), false)
        );
        assert_eq!(
            tool_output_text(&json!({"type":"error-text","value":"boom"})),
            ("boom".into(), true)
        );
        assert_eq!(
            tool_output_text(&json!({"type":"text","value":"t"})),
            ("t".into(), false)
        );
    }

    #[test]
    fn fresh_ids_differ() {
        assert_ne!(fresh_call_id(), fresh_call_id());
    }
}
