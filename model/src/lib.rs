//! Model providers for the DPAS host: one trait the server's step loop drives, yielding
//! typed events ([`ModelProvider`], [`ModelEvent`], [`ModelError`]), and its implementations:
//! the [`scripted`] provider, and the OpenAI and Anthropic adapters in [`providers`] with the
//! `<vendor>:<model>` spec ([`VendorSpec`], [`provider_from_spec`]) that selects one.
//!
//! Architecture Invariant: a provider streams exactly one model step: the loop calls it once
//! per model step with the whole prompt, and decides itself what to execute and whether to
//! call again.
//!
//! Server-only: not part of the browser build.

#![warn(unreachable_pub)]

pub mod provider;
pub mod providers;
pub mod scripted;
pub mod untrusted;

pub use provider::{
    EventStream, FinishReason, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelRequest,
    ToolCall, ToolSpec,
};
pub use providers::{
    provider_from_spec, provider_from_spec_env, providers_from_spec, AnthropicConfig,
    AnthropicProvider, HttpSettings, OpenAiConfig, OpenAiProvider, ProviderConfigError,
    RetryPolicy, Vendor, VendorSpec,
};
