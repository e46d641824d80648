//! The governed domain over MCP at `/mcp` (reference-behaviour N7, domain-runtime §3.10): the
//! streamable HTTP transport in its stateless form, each POST one JSON-RPC message answered
//! with one `application/json` response (or 202 for notifications), no server-sent stream and
//! no `Mcp-Session-Id`. The same runtime as everywhere else, on surface `mcp`:
//!
//! - identity is the server's `--auth` mode (session: `Authorization: Bearer <token>` or the
//!   cookie; jwt: the app's bearer JWT or its cookie; proxy-header: the proxy's headers);
//!   nothing anonymous (401, before the body is read);
//! - `tools/list` is the actor's discovery on `mcp` plus the `approvals_resume` tool;
//! - `tools/call` invokes through the runtime; the E7 envelope is the `structuredContent`,
//!   governed failures are `isError` results with the code, a gated call answers the
//!   approval id, its expiry and a deep link into the app;
//! - `approvals_resume` runs an approved record once, only for the actor and surface that
//!   asked. Deciding is not offered: a person decides in the app.
//!
//! `POST /api/session/token` gives a signed-in user the bearer token to paste into a client.

use crate::http::Caller;
use actix_web::http::header::{self, ContentType, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};

use crate::http::error::ApiError;
use crate::http::{read_limited, require_json, resource};
use crate::AppState;
use dpas_governance::{
    Actor, CallSurface, CapabilityError, CapabilityInfo, Correlation, Envelope, InputIssue,
    SideEffect,
};

/// Protocol revisions served, newest first; `initialize` answers the client's own when it is
/// one of these and the newest otherwise (the client then decides whether to go on).
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The tool that runs an approved request.
pub const RESUME_TOOL: &str = "approvals_resume";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// Mounts `/mcp` (POST; GET and DELETE answer 405: there is no stream and no session to
/// close) and `POST /api/session/token`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/mcp").post(post_mcp))
        .service(resource("/api/session/token").post(post_token));
}

/// The origin links handed to other clients start with: `--public-url`, else the request's.
pub fn public_origin(req: &HttpRequest, state: &AppState) -> String {
    match &state.config.public_url {
        Some(url) => url.clone(),
        None => {
            let info = req.connection_info();
            format!("{}://{}", info.scheme(), info.host())
        }
    }
}

fn unauthenticated(err: ApiError) -> HttpResponse {
    let mut response = actix_web::ResponseError::error_response(&err);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"dpas\""),
    );
    response
}

/// A JSON-RPC error response.
fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> HttpResponse {
    HttpResponse::build(status)
        .json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

async fn post_mcp(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    // Identity before the body: an anonymous caller's body is never read.
    let actor = match crate::auth::actor_at(&req, crate::auth::Door::Mcp).await {
        Ok(actor) => actor,
        Err(e) => return Ok(unauthenticated(e)),
    };
    require_json(&req)?;
    if let Some(version) = req.headers().get("mcp-protocol-version") {
        let known = version
            .to_str()
            .is_ok_and(|v| PROTOCOL_VERSIONS.contains(&v.trim()));
        if !known {
            return Ok(rpc_error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                INVALID_REQUEST,
                "Unsupported MCP-Protocol-Version.",
            ));
        }
    }
    let body = read_limited(&req, payload, state.config.body_limit).await?;
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return Ok(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            PARSE_ERROR,
            "Parse error: the body is not JSON.",
        ));
    };
    let Some(message) = message.as_object() else {
        let what = if message.is_array() {
            "Batches are not supported; send one message per request."
        } else {
            "Invalid request: expected a JSON-RPC message object."
        };
        return Ok(rpc_error(
            StatusCode::BAD_REQUEST,
            Value::Null,
            INVALID_REQUEST,
            what,
        ));
    };
    let id = message.get("id").cloned();
    let id_ok = id
        .as_ref()
        .is_none_or(|id| id.is_string() || id.is_i64() || id.is_u64());
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || !id_ok {
        return Ok(rpc_error(
            StatusCode::BAD_REQUEST,
            if id_ok {
                id.unwrap_or(Value::Null)
            } else {
                Value::Null
            },
            INVALID_REQUEST,
            "Invalid request: not a JSON-RPC 2.0 message.",
        ));
    }
    let is_response = message.contains_key("result") || message.contains_key("error");
    let method = match (message.get("method"), &id) {
        (Some(Value::String(method)), Some(_)) => method.as_str(),
        // A notification, or a response to a request we never send: accepted, no answer.
        (Some(Value::String(_)), None) => return Ok(HttpResponse::Accepted().finish()),
        (None, Some(_)) if is_response => return Ok(HttpResponse::Accepted().finish()),
        _ => {
            return Ok(rpc_error(
                StatusCode::BAD_REQUEST,
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "Invalid request: a request needs a method.",
            ))
        }
    };
    let id = id.unwrap_or(Value::Null);
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let outcome = match method {
        "initialize" => Ok(initialize(&params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools(&state, &actor)})),
        "tools/call" => call(&req, &state, &actor, &params, &id).await,
        _ => Err((METHOD_NOT_FOUND, format!("Method not found: {method}"))),
    };
    Ok(match outcome {
        Ok(result) => HttpResponse::Ok()
            .content_type(ContentType::json())
            .json(json!({"jsonrpc": "2.0", "id": id, "result": result})),
        Err((code, message)) => rpc_error(StatusCode::OK, id, code, &message),
    })
}

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| PROTOCOL_VERSIONS.contains(v))
        .unwrap_or(PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "dpas-host", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Governed operations of this application, run as the signed-in user. \
            A call that needs approval answers an approval link: a person approves it in the \
            app, then call approvals_resume with the approvalId.",
    })
}

fn resume_tool() -> Value {
    json!({
        "name": RESUME_TOOL,
        "description": "Runs a request that needed approval, once, after a person approved it in the app. \
            Only the user and client kind that asked can run it.",
        "inputSchema": {
            "type": "object",
            "properties": {"approvalId": {"type": "string", "minLength": 1, "description": "The approvalId the gated call answered."}},
            "required": ["approvalId"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}
    })
}

fn tool(info: &CapabilityInfo) -> Value {
    let mut description = info.description.clone();
    if info.requires_approval {
        description.push_str(" Requires approval.");
    }
    json!({
        "name": info.id,
        "description": description,
        "inputSchema": info.input_schema,
        "annotations": {
            "readOnlyHint": info.side_effect.is_read_only(),
            "destructiveHint": info.side_effect == SideEffect::Destructive,
            "openWorldHint": info.side_effect == SideEffect::External,
        }
    })
}

/// The actor's catalog on `mcp`, then the resume tool (which wins a name clash).
fn tools(state: &AppState, actor: &Actor) -> Vec<Value> {
    let discovered = state.runtime.discover(actor, CallSurface::Mcp, None);
    let mut out: Vec<Value> = discovered
        .iter()
        .filter(|info| {
            let clash = info.id == RESUME_TOOL;
            if clash {
                tracing::warn!(capability = %info.id, "capability shares the MCP resume tool's name; not listed on mcp");
            }
            !clash
        })
        .map(tool)
        .collect();
    out.push(resume_tool());
    out
}

type RpcFailure = (i64, String);

async fn call(
    req: &HttpRequest,
    state: &AppState,
    actor: &Actor,
    params: &Value,
    id: &Value,
) -> Result<Value, RpcFailure> {
    let invalid = |m: &str| (INVALID_PARAMS, format!("Invalid params: {m}"));
    let params = params
        .as_object()
        .ok_or_else(|| invalid("expected an object"))?;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("name must be a string"))?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(invalid("arguments must be an object")),
    };
    let correlation = Correlation {
        invocation_id: Some(match id {
            Value::String(s) => format!("mcp-{s}"),
            other => format!("mcp-{other}"),
        }),
        ..Correlation::default()
    };
    let envelope = if name == RESUME_TOOL {
        match arguments.get("approvalId").and_then(Value::as_str) {
            Some(approval) if !approval.is_empty() => {
                state
                    .runtime
                    .resume(approval, actor, CallSurface::Mcp, correlation)
                    .await
            }
            _ => Envelope::Error(CapabilityError::input_invalid(vec![InputIssue {
                path: "/approvalId".to_owned(),
                message: "approvalId must be a non-empty string.".to_owned(),
            }])),
        }
    } else {
        state
            .runtime
            .invoke_envelope(actor, CallSurface::Mcp, name, arguments, correlation)
            .await
    };
    Ok(call_result(req, state, envelope).await)
}

/// A `CallToolResult` for an envelope: the envelope as `structuredContent`, a text rendering
/// as `content`, `isError` for governed failures.
async fn call_result(req: &HttpRequest, state: &AppState, envelope: Envelope) -> Value {
    match envelope {
        Envelope::Ok { data } => {
            let text = serde_json::to_string(&data).unwrap_or_default();
            json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": {"status": "ok", "data": data},
                "isError": false,
            })
        }
        Envelope::ApprovalRequired {
            approval_id,
            message,
        } => {
            let url = format!(
                "{}/approvals/{}",
                public_origin(req, state),
                urlencode(&approval_id)
            );
            let expires_at = match state.runtime.approval(&approval_id).await {
                Ok(Some(record)) => Value::from(
                    record
                        .expires_at
                        .format(&time::format_description::well_known::Rfc3339)
                        .unwrap_or_default(),
                ),
                _ => Value::Null,
            };
            let text = format!(
                "{message} Ask a person to approve it at {url}, then call {RESUME_TOOL} with \
                 {{\"approvalId\":\"{approval_id}\"}}."
            );
            json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": {
                    "status": "approval-required",
                    "approvalId": approval_id,
                    "message": message,
                    "expiresAt": expires_at,
                    "approvalUrl": url,
                },
                "isError": false,
            })
        }
        Envelope::Error(e) => {
            let public = e.to_public();
            let text = format!(
                "{}: {}",
                public["code"].as_str().unwrap_or_default(),
                public["message"].as_str().unwrap_or_default()
            );
            json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": {"status": "error", "error": public},
                "isError": true,
            })
        }
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters (approval ids are
/// `apr_…` today; this keeps a link well-formed whatever a store mints).
fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `POST /api/session/token`: a bearer token for the signed-in user (the session cookie's
/// signed value, with the session's lifetime) and the MCP endpoint to paste it into.
async fn post_token(
    req: HttpRequest,
    state: web::Data<AppState>,
    Caller(actor): Caller,
) -> Result<HttpResponse, ApiError> {
    // With `--auth jwt` an MCP client sends the app's own token; there is nothing to mint.
    if !state.auth.is_session() {
        return Err(ApiError::NotFound);
    }
    let (token, exp) = state.sessions.token_for(&actor);
    let expires_at = time::OffsetDateTime::from_unix_timestamp(exp)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        });
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({
            "token": token,
            "tokenType": "Bearer",
            "expiresAt": expires_at,
            "mcpUrl": format!("{}/mcp", public_origin(&req, &state)),
        })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_negotiates_a_served_version() {
        assert_eq!(
            initialize(&json!({"protocolVersion": "2025-06-18"}))["protocolVersion"],
            "2025-06-18"
        );
        assert_eq!(
            initialize(&json!({"protocolVersion": "1999-01-01"}))["protocolVersion"],
            PROTOCOL_VERSIONS[0]
        );
        assert_eq!(
            initialize(&Value::Null)["protocolVersion"],
            PROTOCOL_VERSIONS[0]
        );
    }

    #[test]
    fn links_encode_what_is_not_unreserved() {
        assert_eq!(urlencode("apr_abc-1.2~"), "apr_abc-1.2~");
        assert_eq!(urlencode("a/b c"), "a%2Fb%20c");
    }
}
