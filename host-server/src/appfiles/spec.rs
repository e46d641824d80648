//! The capabilities file's format: what a file may say, as serde reads it. What a file's
//! capabilities and policies do is `capabilities.rs` and `policies.rs`.

use serde::Deserialize;

use std::path::Path;

use serde_json::Value;

use dpas_governance::{CallSurface, Risk, SideEffect};

/// Default `http.timeoutMs`.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// A surface a file capability may be exposed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FileSurface {
    AiSdk,
    Mcp,
    Direct,
}

impl From<FileSurface> for CallSurface {
    fn from(s: FileSurface) -> Self {
        match s {
            FileSurface::AiSdk => CallSurface::Model,
            FileSurface::Mcp => CallSurface::Mcp,
            FileSurface::Direct => CallSurface::Direct,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    #[default]
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    pub fn as_reqwest(self) -> reqwest::Method {
        match self {
            Self::Get => reqwest::Method::GET,
            Self::Post => reqwest::Method::POST,
            Self::Put => reqwest::Method::PUT,
            Self::Patch => reqwest::Method::PATCH,
            Self::Delete => reqwest::Method::DELETE,
        }
    }
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapabilityFile {
    /// Lets editors find the schema; ignored.
    #[serde(default, rename = "$schema")]
    pub schema: Option<String>,
    #[serde(default)]
    pub capabilities: Vec<CapabilitySpec>,
    #[serde(default)]
    pub policies: Vec<PolicySpec>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapabilitySpec {
    pub id: String,
    pub description: String,
    pub side_effect: SideEffect,
    pub risk: Risk,
    #[serde(default)]
    pub tags: Vec<String>,
    pub expose: Vec<FileSurface>,
    pub input_schema: Value,
    #[serde(default)]
    pub output_schema: Option<Value>,
    #[serde(default)]
    pub idempotent: bool,
    /// Returns untrusted content (U1): fenced for the model, and a change proposed beside
    /// it needs an approval (U2).
    #[serde(default)]
    pub untrusted: bool,
    pub http: HttpSpec,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpSpec {
    #[serde(default)]
    pub method: Method,
    pub url: String,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// A named policy with exactly one rule.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicySpec {
    pub name: String,
    #[serde(default)]
    pub require_approval: Option<RequireApproval>,
    #[serde(default)]
    pub hide_unless_role: Option<HideUnlessRole>,
    #[serde(default)]
    pub deny_if_role: Option<DenyIfRole>,
}

/// Calls of `ids` from `surfaces` (default: the model surfaces) wait for the user's approval.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequireApproval {
    pub ids: Vec<String>,
    #[serde(default = "model_surfaces")]
    pub surfaces: Vec<FileSurface>,
}

fn model_surfaces() -> Vec<FileSurface> {
    vec![FileSurface::AiSdk, FileSurface::Mcp]
}

/// Capabilities with `side_effects` (default: the ones that change the world) are hidden
/// from anyone whose role is not in `roles`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HideUnlessRole {
    pub roles: Vec<String>,
    #[serde(default = "changing_effects")]
    pub side_effects: Vec<SideEffect>,
}

fn changing_effects() -> Vec<SideEffect> {
    vec![
        SideEffect::Write,
        SideEffect::Destructive,
        SideEffect::External,
    ]
}

/// Actors with one of `roles` are refused the capabilities named in `ids`, or those with
/// `side_effects`, or (neither given) all of the file's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DenyIfRole {
    pub roles: Vec<String>,
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    #[serde(default)]
    pub side_effects: Option<Vec<SideEffect>>,
    #[serde(default)]
    pub message: Option<String>,
}

/// How the file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

impl Format {
    /// TOML for `.toml`, JSON otherwise.
    pub fn of(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("toml") => Self::Toml,
            _ => Self::Json,
        }
    }
}
