//! Model providers for the DPAS host: one trait the server's step loop drives, yielding
//! typed events, and its implementations (the scripted provider, vendor adapters).
//!
//! A provider streams exactly one model step: the loop calls it once per model step with
//! the whole prompt, and decides itself what to execute and whether to call again.

pub mod provider;
pub mod scripted;
pub mod vendor;

pub use provider::{
    EventStream, FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelRequest,
    ToolCall, ToolSpec,
};
/// The old name of [`VendorSpec`].
#[allow(deprecated)]
pub use vendor::ModelSpec;
pub use vendor::{
    provider_from_spec, provider_from_spec_env, providers_from_spec, AnthropicConfig,
    AnthropicProvider, HttpSettings, OpenAiConfig, OpenAiProvider, ProviderConfigError,
    RetryPolicy, Vendor, VendorSpec,
};
