//! `--capabilities FILE`: the app's operations, declared as data and executed over HTTP by the
//! app's own backend, plus the policies that govern them. JSON or TOML (by extension), one
//! shape, published as `host-server/schema/capabilities.schema.json`: every file the server
//! accepts passes that schema (the loader validates against the very file it publishes).

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use serde_json::{json, Value};

use super::executor::{HttpCall, HttpExecutor, UrlTemplate};
use super::locate::locate;
use super::policies;
pub use super::spec::{
    CapabilityFile, CapabilitySpec, DenyIfRole, FileSurface, Format, HideUnlessRole, HttpSpec,
    Method, PolicySpec, RequireApproval, DEFAULT_TIMEOUT_MS,
};
use super::text::{json_error, line_column, read_text, FileError};
use dpas_governance::{CallSurface, Capability, Policy, RuntimeBuilder};

/// The file's JSON Schema, as published in the repository.
pub const SCHEMA: &str = include_str!("../../schema/capabilities.schema.json");

static SCHEMA_VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(SCHEMA).map_err(|e| e.to_string())?;
    jsonschema::validator_for(&schema).map_err(|e| e.to_string())
});

fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> FileError {
    let (line, column) = line_column(text, e.span().map_or(0, |s| s.start));
    FileError::at(path, line, column, e.message().trim())
}

impl CapabilityFile {
    /// Reads, parses and checks a capabilities file.
    pub fn load(path: &Path) -> Result<Self, FileError> {
        let text = read_text(path)?;
        Self::parse(path, &text, Format::of(path))
    }

    /// Parses and checks a file's text: syntax and shape errors carry the line, schema
    /// errors the JSON Pointer of what is wrong, the rest the capability or policy it is in.
    pub fn parse(path: &Path, text: &str, format: Format) -> Result<Self, FileError> {
        let (file, raw): (Self, Value) = match format {
            Format::Json => (
                serde_json::from_str(text).map_err(|e| json_error(path, &e))?,
                serde_json::from_str(text).map_err(|e| json_error(path, &e))?,
            ),
            Format::Toml => (
                toml::from_str(text).map_err(|e| toml_error(path, text, &e))?,
                toml::from_str(text).map_err(|e| toml_error(path, text, &e))?,
            ),
        };
        let validator = SCHEMA_VALIDATOR
            .as_ref()
            .map_err(|e| FileError::new(path, format!("the published schema is broken: {e}")))?;
        let mut first = None;
        let issues: Vec<String> = validator
            .iter_errors(&raw)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                first.get_or_insert_with(|| at.clone());
                format!("at {}: {e}", if at.is_empty() { "/" } else { &at })
            })
            .collect();
        if let Some(pointer) = first {
            let reason = format!(
                "does not match the capabilities schema: {}",
                issues.join("; ")
            );
            return Err(match locate(text, format, &pointer) {
                Some(offset) => {
                    let (line, column) = line_column(text, offset);
                    FileError::at(path, line, column, &reason)
                }
                None => FileError::new(path, reason),
            });
        }
        file.check(path)?;
        Ok(file)
    }

    /// What the schema cannot say: unique ids, usable schemas and URLs, policies naming
    /// capabilities that exist.
    fn check(&self, path: &Path) -> Result<(), FileError> {
        let mut ids = HashSet::new();
        for spec in &self.capabilities {
            let refuse =
                |why: String| FileError::new(path, format!("capability {:?}: {why}", spec.id));
            if !ids.insert(spec.id.as_str()) {
                return Err(refuse("the id is used twice".to_owned()));
            }
            jsonschema::validator_for(&spec.input_schema)
                .map_err(|e| refuse(format!("inputSchema is not a usable JSON Schema: {e}")))?;
            if let Some(output) = &spec.output_schema {
                jsonschema::validator_for(output).map_err(|e| {
                    refuse(format!("outputSchema is not a usable JSON Schema: {e}"))
                })?;
            }
            UrlTemplate::parse(&spec.http.url, &spec.input_schema).map_err(refuse)?;
        }
        for policy in &self.policies {
            let refuse =
                |why: String| FileError::new(path, format!("policy {:?}: {why}", policy.name));
            let named = [
                policy.require_approval.as_ref().map(|r| &r.ids),
                policy.deny_if_role.as_ref().and_then(|d| d.ids.as_ref()),
            ];
            for id in named.into_iter().flatten().flatten() {
                if !ids.contains(id.as_str()) {
                    return Err(refuse(format!(
                        "names {id:?}, which is not a capability of this file"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Registers the capabilities, each governed by the file's policies, executed by
    /// `executor`.
    pub fn register(
        &self,
        mut builder: RuntimeBuilder,
        executor: &Arc<HttpExecutor>,
    ) -> RuntimeBuilder {
        let rules: Vec<Arc<dyn Policy>> = self.policies.iter().map(policies::build).collect();
        for spec in &self.capabilities {
            builder = builder.capability(capability(spec, &rules, executor));
        }
        builder
    }
}

/// Time the runtime's own deadline leaves the executor past `timeoutMs`, so that the
/// executor's TIMEOUT (with its retries accounted) is the one that answers.
const RUNTIME_GRACE: Duration = Duration::from_secs(1);

fn capability(
    spec: &CapabilitySpec,
    rules: &[Arc<dyn Policy>],
    executor: &Arc<HttpExecutor>,
) -> Result<Capability, dpas_governance::RegistryError> {
    let invalid = |why: String| dpas_governance::RegistryError::Invalid(spec.id.clone(), why);
    let timeout = Duration::from_millis(spec.http.timeout_ms);
    let call = Arc::new(HttpCall {
        capability_id: spec.id.clone(),
        method: spec.http.method.as_reqwest(),
        url: UrlTemplate::parse(&spec.http.url, &spec.input_schema).map_err(invalid)?,
        timeout,
        idempotent: spec.idempotent,
        output: spec
            .output_schema
            .as_ref()
            .map(jsonschema::validator_for)
            .transpose()
            .map_err(|e| invalid(format!("outputSchema: {e}")))?,
    });
    let surfaces: Vec<CallSurface> = spec.expose.iter().copied().map(CallSurface::from).collect();
    let mut builder = Capability::builder(&spec.id)
        .description(&spec.description)
        .side_effect(spec.side_effect)
        .risk(spec.risk)
        .tags(spec.tags.iter().cloned())
        .expose(&surfaces)
        .untrusted(spec.untrusted)
        .timeout(timeout + RUNTIME_GRACE);
    for rule in rules {
        builder = builder.policy(Arc::clone(rule));
    }
    let executor = Arc::clone(executor);
    builder.json_handler(
        spec.input_schema.clone(),
        spec.output_schema.clone().unwrap_or_else(|| json!({})),
        move |ctx, input| {
            let (executor, call) = (Arc::clone(&executor), Arc::clone(&call));
            async move { executor.call(&call, &ctx, &input).await }
        },
    )
}
