//! What the adapters are configured with: HTTP settings and retries, and why a configuration
//! makes no provider.

use std::time::Duration;

/// How the adapters talk HTTP. Every field is public so tests (and the server) can shorten
/// timeouts and retry delays.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// Limit on establishing the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Limit on receiving the response status and headers of one attempt.
    pub response_timeout: Duration,
    pub retry: RetryPolicy,
    /// Speak HTTP/2 from the first byte to a plaintext (`http://`) vendor, which multiplexes
    /// every stream in flight on one connection; over TLS HTTP/2 is chosen by ALPN anyway.
    pub http2_prior_knowledge: bool,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            http2_prior_knowledge: false,
        }
    }
}

/// Retries of a 429 or 5xx answer, only ever before the first byte of a stream was read.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// The wait before each retry; its length is the number of retries.
    pub delays: Vec<Duration>,
    /// The longest wait a vendor's `retry-after` header may ask for; longer asks are cut.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            delays: vec![
                Duration::from_millis(500),
                Duration::from_millis(1500),
                Duration::from_millis(4000),
            ],
            max_retry_after: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            delays: Vec::new(),
            max_retry_after: Duration::ZERO,
        }
    }
}

/// Why a model spec could not be turned into a provider.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderConfigError {
    #[error("unknown model vendor \"{vendor}\" (expected openai:<model> or anthropic:<model>)")]
    UnknownVendor { vendor: String },
    #[error(
        "the model spec \"{spec}\" names no model (expected openai:<model> or anthropic:<model>)"
    )]
    MissingModel { spec: String },
    #[error("{var} is not set")]
    MissingKey { var: &'static str },
    #[error("{var} must be an http:// or https:// URL")]
    InvalidBaseUrl { var: &'static str },
    #[error("{var} must be a positive whole number")]
    InvalidNumber { var: &'static str },
    #[error("{var} must be true or false")]
    InvalidFlag { var: &'static str },
    #[error("the HTTP client could not be built")]
    HttpClient,
}
