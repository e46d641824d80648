//! `GET /agent/manifest`: what this server speaks and every limit it enforces, so a client can
//! adapt before it meets a 409 or a 413. Needs a session (the capability counts are the
//! caller's own).

use crate::http::Caller;
use actix_web::{web, HttpResponse};
use dpas_protocol::limits as l;
use dpas_protocol::request::ProtocolVersion;
use dpas_protocol::CatalogMode;
use serde_json::{json, Value};

use super::mcp;
use crate::AppState;
use dpas_engine::ChatConfig;
use dpas_governance::CallSurface;

/// The doors into the one step engine and runtime, as the manifest lists them.
fn encodings() -> Value {
    json!([
        {
            "name": "dpas",
            "method": "POST",
            "path": "/agent/chat",
            "contentType": "application/x-ndjson",
            "protocolVersions": [ProtocolVersion::V2.as_u8(), ProtocolVersion::V1.as_u8()],
        },
        {
            "name": "ai-sdk-ui-message-stream",
            "method": "POST",
            "path": "/agent/ai-sdk",
            "contentType": "text/event-stream",
            "streamVersion": "v1",
            "request": "DefaultChatTransport body (id, messages, trigger, messageId) + optional catalog, pathname, modelId",
        },
        {
            "name": "ag-ui",
            "method": "POST",
            "path": "/agent/ag-ui",
            "contentType": "text/event-stream",
            "protocolVersions": [super::ag_ui::AG_UI_VERSION],
            "request": "RunAgentInput; forwardedProps.pathname and forwardedProps.modelId are read",
        },
        {
            "name": "mcp",
            "method": "POST",
            "path": "/mcp",
            "transport": "streamable-http",
            "contentType": "application/json",
            "protocolVersions": mcp::PROTOCOL_VERSIONS,
            "auth": ["bearer", "cookie"],
            "tokenPath": "/api/session/token",
            "resumeTool": mcp::RESUME_TOOL,
        },
    ])
}

/// Every limit, by the names the contract uses; lengths count UTF-16 code units.
fn limits(chat: &ChatConfig, body_limit: usize, budgets: &dpas_engine::BudgetLimits) -> Value {
    json!({
        "frontendTools": l::MAX_FRONTEND_TOOLS,
        "domainTools": l::MAX_DOMAIN_TOOLS,
        "totalTools": l::MAX_TOTAL_TOOLS,
        "messages": l::MAX_MESSAGES,
        "v1": {"frontendTools": l::V1_MAX_FRONTEND_TOOLS, "messages": l::V1_MAX_MESSAGES},
        "fieldLengths": {
            "id": l::MAX_ID_LEN,
            "pathname": l::MAX_PATHNAME_LEN,
            "modelId": l::MAX_MODEL_ID_LEN,
            "scopeTokens": l::MAX_SCOPE_TOKENS,
            "scopeToken": l::MAX_SCOPE_TOKEN_LEN,
            "frontendState": l::MAX_FRONTEND_STATE,
            "description": l::MAX_DESCRIPTION_LEN,
            "effect": l::MAX_EFFECT_LEN,
            "reason": l::MAX_REASON_LEN,
        },
        "stepIndex": l::MAX_STEP_INDEX,
        "modelStepsPerRequest": l::MAX_MODEL_STEPS_PER_REQUEST,
        "modelTimeoutSeconds": chat.model_timeout.as_secs(),
        "requestBodyBytes": body_limit,
        "budgets": {
            "turnTokens": budgets.turn_tokens,
            "turnUsd": budgets.turn_usd,
            "actorDayTokens": budgets.actor_day_tokens,
            "actorDayUsd": budgets.actor_day_usd,
            "tenantDayTokens": budgets.tenant_day_tokens,
            "tenantDayUsd": budgets.tenant_day_usd,
        },
        "browser": {
            "stepsPerTurn": l::MAX_STEPS_PER_TURN,
            "turnDeadlineMs": l::TURN_DEADLINE_MS,
            "identicalFailures": l::MAX_IDENTICAL_FAILURES,
            "consecutiveFailures": l::MAX_CONSECUTIVE_FAILURES,
        },
    })
}

/// What a step posted again gets: with records kept, its run's answer (`idempotent`), whole,
/// also while it still runs (`resumable`), for `retentionSeconds` after it ran.
fn steps(state: &AppState) -> Value {
    let retention = state
        .engine
        .step_log
        .as_ref()
        .map_or(0, |log| log.retention().as_secs());
    json!({
        "idempotent": retention > 0,
        "resumable": retention > 0,
        "retentionSeconds": retention,
        "door": "/agent/chat",
        "replayHeader": super::dpas::STEP_REPLAY,
    })
}

/// Untrusted content (U1, U2): how its results are fenced, what a change proposed beside
/// them needs, and which of the caller's model-surface operations are marked.
fn untrusted_content(state: &AppState, actor: &dpas_governance::Actor) -> Value {
    let registry = state.runtime.registry();
    let ids: Vec<String> = state
        .runtime
        .discover(actor, CallSurface::Model, None)
        .into_iter()
        .filter(|info| registry.get(&info.id).is_some_and(|c| c.meta.untrusted))
        .map(|info| format!("domain:{}", info.id))
        .collect();
    json!({
        "fence": dpas_model::untrusted::TAG,
        "descriptorField": "untrusted",
        "writes": "approval",
        "capabilities": ids,
    })
}

pub async fn agent_manifest(
    state: web::Data<AppState>,
    chat: web::Data<ChatConfig>,
    Caller(actor): Caller,
) -> HttpResponse {
    let count = |surface| state.runtime.discover(&actor, surface, None).len();
    HttpResponse::Ok()
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .json(json!({
            "protocol": {
                "current": ProtocolVersion::CURRENT.as_u8(),
                "versions": [ProtocolVersion::V2.as_u8(), ProtocolVersion::V1.as_u8()],
            },
            "encodings": encodings(),
            "catalogModes": [CatalogMode::Direct.as_str(), CatalogMode::Meta.as_str()],
            "limits": limits(&chat, state.config.body_limit, &state.config.budgets),
            "models": {"ids": chat.models.ids(), "default": chat.models.default_id()},
            "steps": steps(&state),
            "untrustedContent": untrusted_content(&state, &actor),
            "actor": {
                "id": actor.id,
                "role": actor.role,
                "capabilities": {
                    "aiSdk": count(CallSurface::Model),
                    "mcp": count(CallSurface::Mcp),
                },
            },
        }))
}
