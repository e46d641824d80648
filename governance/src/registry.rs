//! The capability registry: metadata, schemas generated from Rust types, validators and
//! type-erased async handlers, built once and immutable afterwards.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::error::{CapabilityError, HandlerError, InputIssue};
use super::policy::Policy;
// `CapabilityMeta` lives with the plain vocabulary so that `policy` can read it without
// depending on the registry, which holds policies (no module cycle); its path here stays.
pub use super::types::CapabilityMeta;
use super::types::{Actor, CallSurface, Correlation, Risk, SideEffect};

/// Default handler deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What a handler learns about the call besides its input.
#[derive(Debug, Clone)]
pub struct InvocationContext {
    pub capability_id: String,
    pub surface: CallSurface,
    /// The original requester, also on resumed approvals.
    pub actor: Actor,
    pub execution_id: String,
    pub correlation: Correlation,
    /// Set when this execution resumes an approved request.
    pub approval_id: Option<String>,
}

type ErasedHandler = Arc<
    dyn Fn(InvocationContext, Value) -> BoxFuture<'static, Result<Value, HandlerError>>
        + Send
        + Sync,
>;
type Normalizer = Arc<dyn Fn(&Value) -> Result<Value, String> + Send + Sync>;
/// Rewrites a successful output for model surfaces (aiSdk, mcp) only.
pub type ModelOutputFn = Arc<dyn Fn(Value) -> Value + Send + Sync>;
/// The details an approval receipt names the call by (`invoice 5`, `€12,346`).
pub type ReceiptDetailFn = Arc<dyn Fn(&Value) -> Vec<String> + Send + Sync>;
/// Reads the current state of what a call with this (validated) input would act on.
pub type TargetReader =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, HandlerError>> + Send + Sync>;

/// A registered capability.
pub struct Capability {
    pub meta: CapabilityMeta,
    validator: jsonschema::Validator,
    normalize: Normalizer,
    handler: ErasedHandler,
    pub(crate) model_output: Option<ModelOutputFn>,
    pub(crate) policies: Vec<Arc<dyn Policy>>,
    target: Option<TargetReader>,
    receipt_detail: Option<ReceiptDetailFn>,
}

impl std::fmt::Debug for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capability")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl Capability {
    pub fn builder(id: impl Into<String>) -> CapabilityBuilder {
        CapabilityBuilder {
            id: id.into(),
            description: String::new(),
            side_effect: None,
            risk: Risk::Low,
            tags: Vec::new(),
            expose: Vec::new(),
            approval_required: false,
            approval_expires_in: None,
            timeout: DEFAULT_TIMEOUT,
            untrusted: false,
            model_output: None,
            policies: Vec::new(),
            target: None,
            receipt_detail: None,
        }
    }

    /// The details an approval receipt names a call with `input` by; `None` when the
    /// capability words none (the receipt then says `id <id>` when the input has one).
    pub fn receipt_detail(&self, input: &Value) -> Option<Vec<String>> {
        self.receipt_detail.as_ref().map(|f| f(input))
    }

    /// Whether the capability declares how to read its target's current state.
    pub fn reads_target(&self) -> bool {
        self.target.is_some()
    }

    /// The current state of what `input` (validated) would act on; `None` when the capability
    /// declares no reader. An approval binds this snapshot, not only the input.
    pub(crate) async fn read_target(&self, input: &Value) -> Option<Result<Value, HandlerError>> {
        let reader = self.target.as_ref()?;
        Some(reader(input.clone()).await)
    }

    /// Validates raw input against the schema and returns the typed round trip of it (unknown
    /// keys dropped): what is validated is exactly what executes.
    pub fn validate(&self, input: &Value) -> Result<Value, CapabilityError> {
        let issues: Vec<InputIssue> = self
            .validator
            .iter_errors(input)
            .map(|e| InputIssue {
                path: issue_path(&e),
                message: e.masked().to_string(),
            })
            .collect();
        if !issues.is_empty() {
            return Err(CapabilityError::input_invalid(issues));
        }
        (self.normalize)(input).map_err(|message| {
            CapabilityError::input_invalid(vec![InputIssue {
                path: String::new(),
                message,
            }])
        })
    }

    pub(crate) fn call(
        &self,
        ctx: InvocationContext,
        input: Value,
    ) -> BoxFuture<'static, Result<Value, HandlerError>> {
        (self.handler)(ctx, input)
    }
}

/// Builds a [`Capability`]; `handler` generates the schemas from the input and output types.
pub struct CapabilityBuilder {
    id: String,
    description: String,
    side_effect: Option<SideEffect>,
    risk: Risk,
    tags: Vec<String>,
    expose: Vec<CallSurface>,
    approval_required: bool,
    approval_expires_in: Option<Duration>,
    timeout: Duration,
    untrusted: bool,
    model_output: Option<ModelOutputFn>,
    policies: Vec<Arc<dyn Policy>>,
    target: Option<TargetReader>,
    receipt_detail: Option<ReceiptDetailFn>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("capability {0}: {1}")]
    Invalid(String, String),
    #[error("duplicate capability id {0}")]
    Duplicate(String),
    #[error("invalid registry: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Aggregate(Vec<RegistryError>),
}

/// The JSON Pointer of an issue; a missing property points at the property itself.
fn issue_path(e: &jsonschema::ValidationError<'_>) -> String {
    let base = e.instance_path().to_string();
    match e.kind() {
        jsonschema::error::ValidationErrorKind::Required {
            property: Value::String(name),
        } => {
            format!("{base}/{}", name.replace('~', "~0").replace('/', "~1"))
        }
        _ => base,
    }
}

fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("title");
    }
    schema
}

impl CapabilityBuilder {
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = d.into();
        self
    }
    pub fn side_effect(mut self, s: SideEffect) -> Self {
        self.side_effect = Some(s);
        self
    }
    pub fn risk(mut self, r: Risk) -> Self {
        self.risk = r;
        self
    }
    pub fn tags<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }
    pub fn expose(mut self, surfaces: &[CallSurface]) -> Self {
        self.expose = surfaces.to_vec();
        self
    }
    pub fn approval_required(mut self, required: bool) -> Self {
        self.approval_required = required;
        self
    }
    pub fn approval_expires_in(mut self, d: Duration) -> Self {
        self.approval_expires_in = Some(d);
        self
    }
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }
    /// Marks the capability as returning untrusted content (U1): its results reach the
    /// model fenced as data, and a change the model proposes after reading them needs an
    /// approval (U2).
    pub fn untrusted(mut self, untrusted: bool) -> Self {
        self.untrusted = untrusted;
        self
    }
    pub fn model_output(mut self, f: impl Fn(Value) -> Value + Send + Sync + 'static) -> Self {
        self.model_output = Some(Arc::new(f));
        self
    }
    /// How to read the current state of the call's target from its validated input (for an
    /// invoice: reference, client, amount, status, due date). An approval of such a call
    /// stores that snapshot; a change of it before execution makes the approval stale.
    pub fn target_state<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        self.target = Some(Arc::new(move |input| Box::pin(f(input))));
        self
    }
    /// How an approval receipt names a call from its input: `issue-invoice (invoice 5,
    /// €12,346)` rather than `issue-invoice (id 5)`.
    pub fn receipt_detail(
        mut self,
        f: impl Fn(&Value) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.receipt_detail = Some(Arc::new(f));
        self
    }
    /// A capability-scoped policy, evaluated after the runtime-wide ones.
    pub fn policy(mut self, p: Arc<dyn Policy>) -> Self {
        self.policies.push(p);
        self
    }

    /// Finishes the capability with its typed async handler.
    pub fn handler<I, O, F, Fut>(self, f: F) -> Result<Capability, RegistryError>
    where
        I: JsonSchema + DeserializeOwned + Serialize + Send + 'static,
        O: JsonSchema + Serialize + 'static,
        F: Fn(InvocationContext, I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, HandlerError>> + Send + 'static,
    {
        let normalize: Normalizer = Arc::new(|v: &Value| {
            let typed: I = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            serde_json::to_value(typed).map_err(|e| e.to_string())
        });
        let f = Arc::new(f);
        let handler: ErasedHandler = Arc::new(move |ctx, input| {
            let f = Arc::clone(&f);
            Box::pin(async move {
                let typed: I = serde_json::from_value(input).map_err(HandlerError::internal)?;
                let out = f(ctx, typed).await?;
                serde_json::to_value(out).map_err(HandlerError::internal)
            })
        });
        self.finish(schema_for::<I>(), schema_for::<O>(), normalize, handler)
    }

    /// Finishes the capability with JSON Schemas given as data (a capabilities file) and a
    /// handler on JSON values: it receives exactly the input that passed `input_schema`.
    pub fn json_handler<F, Fut>(
        self,
        input_schema: Value,
        output_schema: Value,
        f: F,
    ) -> Result<Capability, RegistryError>
    where
        F: Fn(InvocationContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        let normalize: Normalizer = Arc::new(|v: &Value| Ok(v.clone()));
        let handler: ErasedHandler = Arc::new(move |ctx, input| Box::pin(f(ctx, input)));
        self.finish(input_schema, output_schema, normalize, handler)
    }

    fn finish(
        self,
        input_schema: Value,
        output_schema: Value,
        normalize: Normalizer,
        handler: ErasedHandler,
    ) -> Result<Capability, RegistryError> {
        let id = self.id;
        let invalid = |m: &str| RegistryError::Invalid(id.clone(), m.to_owned());
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(invalid(
                "the id must be non-empty ASCII letters, digits, '-', '_' or '.'",
            ));
        }
        if self.description.trim().is_empty() {
            return Err(invalid("a description is required"));
        }
        let side_effect = self
            .side_effect
            .ok_or_else(|| invalid("a side effect is required"))?;
        if self.timeout.is_zero() || self.approval_expires_in.is_some_and(|d| d.is_zero()) {
            return Err(invalid("timeouts and expiries must be positive"));
        }
        let validator = jsonschema::validator_for(&input_schema)
            .map_err(|e| invalid(&format!("input schema: {e}")))?;
        Ok(Capability {
            meta: CapabilityMeta {
                id,
                description: self.description,
                side_effect,
                risk: self.risk,
                tags: self.tags,
                expose: self.expose,
                approval_required: self.approval_required,
                approval_expires_in: self.approval_expires_in,
                timeout: self.timeout,
                untrusted: self.untrusted,
                input_schema,
                output_schema,
            },
            validator,
            normalize,
            handler,
            model_output: self.model_output,
            policies: self.policies,
            target: self.target,
            receipt_detail: self.receipt_detail,
        })
    }
}

/// Capabilities in registration order.
#[derive(Debug, Default)]
pub struct Registry {
    capabilities: Vec<Capability>,
}

impl Registry {
    pub(crate) fn new(capabilities: Vec<Capability>) -> Result<Self, RegistryError> {
        let mut seen = HashSet::new();
        let errors: Vec<RegistryError> = capabilities
            .iter()
            .filter(|c| !seen.insert(c.meta.id.clone()))
            .map(|c| RegistryError::Duplicate(c.meta.id.clone()))
            .collect();
        if !errors.is_empty() {
            return Err(RegistryError::Aggregate(errors));
        }
        Ok(Self { capabilities })
    }

    pub fn get(&self, id: &str) -> Option<&Capability> {
        self.capabilities.iter().find(|c| c.meta.id == id)
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.capabilities.iter().map(|c| c.meta.id.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Capability> {
        self.capabilities.iter()
    }
}
