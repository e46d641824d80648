//! The per-turn loop guard (reference-behaviour J8) and the unexecuted-results builder (J7).

use crate::canonical::into_canonical_string;
use crate::vec_map::VecMap;
use dpas_protocol::error::tool_results::tool_not_executed;
use dpas_protocol::json::{Map, Value};
use dpas_protocol::limits::{MAX_CONSECUTIVE_FAILURES, MAX_IDENTICAL_FAILURES};
use dpas_protocol::{HostError, PendingToolCall, WireModelMessage};

/// Watches settled tool calls of both planes, in the order they settled.
#[derive(Debug, Default, Clone)]
pub struct LoopGuard {
    consecutive: u32,
    identical: VecMap<String, u32>,
    answered_retry_no: Vec<String>,
}

/// The guard's key of a call: `<canonicalId>:` + the input's canonical JSON (`{}` if absent).
pub fn call_key(canonical_id: &str, input: Option<&Value>) -> String {
    let input = match input {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(value) => value.clone(),
    };
    format!("{canonical_id}:{}", into_canonical_string(input))
}

impl LoopGuard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one settled call; `Some` is the verdict that stops the turn.
    ///
    /// `ok` is the call's success flag; `result` is the value the model sees, whose
    /// `error.retry` is read (domain errors carry `retryable` instead, so never match).
    pub fn observe(
        &mut self,
        canonical_id: &str,
        input: Option<&Value>,
        ok: bool,
        result: &Value,
    ) -> Option<HostError> {
        if ok {
            // A success resets the streak only; identical counts and retry-no keys stay.
            self.consecutive = 0;
            return None;
        }
        let key = call_key(canonical_id, input);
        self.consecutive += 1;
        let identical = match self.identical.get_mut(&key) {
            Some(count) => {
                *count += 1;
                *count
            }
            None => {
                self.identical.insert(key.clone(), 1);
                1
            }
        };
        if self.answered_retry_no.contains(&key) {
            return Some(HostError::run_limit(format!(
                "Stopped: {canonical_id} was called again with the same arguments after answering \"retry: no\"."
            )));
        }
        // Indexed, not `pointer`: its `~1` unescaping links core's substring searcher.
        if result["error"]["retry"].as_str() == Some("no") {
            self.answered_retry_no.push(key);
        }
        if identical >= MAX_IDENTICAL_FAILURES {
            return Some(HostError::run_limit(format!(
                "Stopped: {canonical_id} failed identically {identical} times."
            )));
        }
        if self.consecutive >= MAX_CONSECUTIVE_FAILURES {
            return Some(HostError::run_limit(format!(
                "Stopped: {} tool calls failed in a row without a single success.",
                self.consecutive
            )));
        }
        None
    }
}

/// J7: one `TOOL_NOT_EXECUTED` tool message per call not run, in call order, so the
/// re-posted history answers every call.
pub fn unexecuted_results(calls: &[PendingToolCall]) -> Vec<WireModelMessage> {
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        results.push(WireModelMessage::tool_result(
            &call.tool_call_id,
            &call.wire_name,
            tool_not_executed(),
        ));
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpas_protocol::test_json as json;
    use dpas_protocol::HostErrorCode;

    fn failure(retry: &str) -> Value {
        json!({ "error": { "code": "PRECONDITION_FAILED", "message": "m", "retry": retry } })
    }

    fn message(verdict: Option<HostError>) -> String {
        let verdict = verdict.expect("a verdict");
        assert_eq!(verdict.code, HostErrorCode::RunLimitExceeded);
        verdict.message
    }

    #[test]
    fn keys_sort_input_keys_and_default_to_an_empty_object() {
        assert_eq!(call_key("view:a.b", None), "view:a.b:{}");
        assert_eq!(call_key("view:a.b", Some(&Value::Null)), "view:a.b:{}");
        assert_eq!(
            call_key(
                "view:a.b",
                Some(&json!({ "z": 1, "a": { "d": 2, "c": 3 } }))
            ),
            r#"view:a.b:{"a":{"c":3,"d":2},"z":1}"#
        );
    }

    #[test]
    fn three_identical_failures_stop_the_turn() {
        let mut guard = LoopGuard::new();
        let input = json!({ "key": "x" });
        assert!(guard
            .observe("view:t.sort", Some(&input), false, &failure("with-changes"))
            .is_none());
        assert!(guard
            .observe(
                "view:t.sort",
                Some(&json!({ "key": "x" })),
                false,
                &failure("with-changes")
            )
            .is_none());
        assert_eq!(
            message(guard.observe("view:t.sort", Some(&input), false, &failure("with-changes"))),
            "Stopped: view:t.sort failed identically 3 times."
        );
    }

    #[test]
    fn identical_counts_survive_a_success_in_between() {
        let mut guard = LoopGuard::new();
        let input = json!({ "key": "x" });
        guard.observe("view:t.sort", Some(&input), false, &failure("yes"));
        guard.observe("view:t.sort", Some(&input), false, &failure("yes"));
        assert!(guard
            .observe("view:t.read", None, true, &json!({}))
            .is_none());
        assert_eq!(
            message(guard.observe("view:t.sort", Some(&input), false, &failure("yes"))),
            "Stopped: view:t.sort failed identically 3 times."
        );
    }

    #[test]
    fn four_failures_in_a_row_stop_the_turn() {
        let mut guard = LoopGuard::new();
        for n in 0..3 {
            assert!(guard
                .observe("view:t.a", Some(&json!({ "n": n })), false, &failure("yes"))
                .is_none());
        }
        assert_eq!(
            message(guard.observe("view:t.a", Some(&json!({ "n": 9 })), false, &failure("yes"))),
            "Stopped: 4 tool calls failed in a row without a single success."
        );
    }

    #[test]
    fn a_success_resets_the_streak() {
        let mut guard = LoopGuard::new();
        for n in 0..3 {
            guard.observe("view:t.a", Some(&json!({ "n": n })), false, &failure("yes"));
        }
        assert!(guard
            .observe("view:t.b", None, true, &json!({ "done": true }))
            .is_none());
        for n in 10..13 {
            assert!(guard
                .observe("view:t.a", Some(&json!({ "n": n })), false, &failure("yes"))
                .is_none());
        }
    }

    #[test]
    fn repeating_a_call_that_answered_retry_no_stops_the_turn_first() {
        let mut guard = LoopGuard::new();
        let input = json!({ "id": 1 });
        assert!(guard
            .observe("domain:x", Some(&input), false, &failure("no"))
            .is_none());
        assert_eq!(
            message(guard.observe("domain:x", Some(&input), false, &failure("no"))),
            "Stopped: domain:x was called again with the same arguments after answering \"retry: no\"."
        );
        // Different arguments are a different key.
        let mut guard = LoopGuard::new();
        guard.observe("domain:x", Some(&input), false, &failure("no"));
        assert!(guard
            .observe("domain:x", Some(&json!({ "id": 2 })), false, &failure("no"))
            .is_none());
    }

    #[test]
    fn retry_no_is_checked_before_the_identical_count() {
        let mut guard = LoopGuard::new();
        let input = json!({});
        guard.observe("view:t.a", Some(&input), false, &failure("yes"));
        guard.observe("view:t.a", Some(&input), false, &failure("no"));
        assert_eq!(
            message(guard.observe("view:t.a", Some(&input), false, &failure("yes"))),
            "Stopped: view:t.a was called again with the same arguments after answering \"retry: no\"."
        );
    }

    #[test]
    fn domain_errors_with_retryable_never_trip_the_retry_no_rule() {
        let mut guard = LoopGuard::new();
        let domain = json!({ "status": "error", "error": { "code": "EXECUTION_FAILED", "message": "m", "retryable": false } });
        guard.observe(
            "domain:issue-invoice",
            Some(&json!({ "id": 3 })),
            false,
            &domain,
        );
        assert!(guard
            .observe(
                "domain:issue-invoice",
                Some(&json!({ "id": 3 })),
                false,
                &domain
            )
            .is_none());
    }

    #[test]
    fn unexecuted_results_answer_every_call_in_order() {
        let call = |id: &str, wire: &str| PendingToolCall {
            tool_call_id: id.into(),
            wire_name: wire.into(),
            canonical_id: String::new(),
            input: json!({}),
        };
        let calls = vec![call("c1", "view_a__b__c"), call("c2", "domain_x")];
        let messages: Vec<Value> = unexecuted_results(&calls)
            .iter()
            .map(|m| dpas_protocol::test_support::to_value(m).unwrap())
            .collect();
        assert_eq!(messages.len(), 2);
        assert_eq!(
            messages[1],
            json!({ "role": "tool", "content": [{
                "type": "tool-result", "toolCallId": "c2", "toolName": "domain_x",
                "output": { "type": "json", "value": { "error": {
                    "code": "TOOL_NOT_EXECUTED",
                    "message": "The run ended before this tool produced a result. Call it again.",
                    "retry": "yes"
                } } }
            }] })
        );
        assert_eq!(messages[0]["content"][0]["toolCallId"], "c1");
    }
}
