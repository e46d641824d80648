//! `--model <vendor>:<model id>` → a configured provider, reading the vendor's environment
//! variables. Errors name variables, never their values.

use std::sync::Arc;

use super::anthropic::{self, AnthropicConfig, AnthropicProvider};
use super::config::{HttpSettings, ProviderConfigError};
use super::openai::{self, OpenAiConfig, OpenAiProvider};
use crate::provider::ModelProvider;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// Any OpenAI-compatible chat-completions server.
    OpenAi,
    Anthropic,
}

impl Vendor {
    /// The prefix of listed provider ids (`openai/<model>`).
    pub fn id_prefix(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }
}

/// A parsed `<vendor>:<model>` spec. The model id may itself contain `:` (`llama3.2:3b`).
/// `host-server`'s `--model` (`host_server::ModelSpec`) holds one for its vendor models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VendorSpec {
    pub vendor: Vendor,
    pub model: String,
}

impl VendorSpec {
    pub fn parse(spec: &str) -> Result<Self, ProviderConfigError> {
        let spec = spec.trim();
        let (vendor, model) = spec.split_once(':').unwrap_or((spec, ""));
        let vendor = match vendor.trim().to_ascii_lowercase().as_str() {
            "openai" => Vendor::OpenAi,
            "anthropic" => Vendor::Anthropic,
            other => {
                return Err(ProviderConfigError::UnknownVendor {
                    vendor: other.to_owned(),
                })
            }
        };
        let model = model.trim();
        if model.is_empty() {
            return Err(ProviderConfigError::MissingModel {
                spec: spec.to_owned(),
            });
        }
        Ok(Self {
            vendor,
            model: model.to_owned(),
        })
    }

    /// The id the provider is listed under: `openai/<model>` or `anthropic/<model>`.
    pub fn provider_id(&self) -> String {
        format!("{}/{}", self.vendor.id_prefix(), self.model)
    }

    /// A provider for this model, reading `OPENAI_API_KEY` / `OPENAI_BASE_URL` /
    /// `OPENAI_HTTP2_PRIOR_KNOWLEDGE` or `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL` /
    /// `ANTHROPIC_HTTP2_PRIOR_KNOWLEDGE` / `ANTHROPIC_MAX_TOKENS` /
    /// `ANTHROPIC_THINKING_BUDGET` through `env` (empty values count as unset).
    pub fn provider(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        mut http: HttpSettings,
    ) -> Result<Arc<dyn ModelProvider>, ProviderConfigError> {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let h2 = match self.vendor {
            Vendor::OpenAi => "OPENAI_HTTP2_PRIOR_KNOWLEDGE",
            Vendor::Anthropic => "ANTHROPIC_HTTP2_PRIOR_KNOWLEDGE",
        };
        if let Some(on) = flag(var(h2), h2)? {
            http.http2_prior_knowledge = on;
        }
        match self.vendor {
            Vendor::OpenAi => {
                let base_url = var("OPENAI_BASE_URL");
                let api_key = var("OPENAI_API_KEY");
                // The vendor's own API needs a key; a server at a chosen base URL may not.
                if api_key.is_none() && base_url.is_none() {
                    return Err(ProviderConfigError::MissingKey {
                        var: "OPENAI_API_KEY",
                    });
                }
                let base_url = checked_url(base_url, openai::DEFAULT_BASE_URL, "OPENAI_BASE_URL")?;
                let provider = OpenAiProvider::new(OpenAiConfig {
                    api_key,
                    base_url,
                    model: self.model.clone(),
                    http,
                })?;
                Ok(Arc::new(provider))
            }
            Vendor::Anthropic => {
                let api_key = var("ANTHROPIC_API_KEY").ok_or(ProviderConfigError::MissingKey {
                    var: "ANTHROPIC_API_KEY",
                })?;
                let base_url = checked_url(
                    var("ANTHROPIC_BASE_URL"),
                    anthropic::DEFAULT_BASE_URL,
                    "ANTHROPIC_BASE_URL",
                )?;
                let max_tokens = number(var("ANTHROPIC_MAX_TOKENS"), "ANTHROPIC_MAX_TOKENS")?
                    .unwrap_or(anthropic::DEFAULT_MAX_TOKENS);
                let thinking_budget = number(
                    var("ANTHROPIC_THINKING_BUDGET"),
                    "ANTHROPIC_THINKING_BUDGET",
                )?;
                let provider = AnthropicProvider::new(AnthropicConfig {
                    api_key,
                    base_url,
                    model: self.model.clone(),
                    max_tokens,
                    thinking_budget,
                    http,
                })?;
                Ok(Arc::new(provider))
            }
        }
    }

    /// [`VendorSpec::provider`] over the process environment with default HTTP settings.
    pub fn provider_from_env(&self) -> Result<Arc<dyn ModelProvider>, ProviderConfigError> {
        self.provider(&|name| std::env::var(name).ok(), HttpSettings::default())
    }
}

/// `<vendor>:<model>`, the form [`VendorSpec::parse`] reads.
impl std::fmt::Display for VendorSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.vendor.id_prefix(), self.model)
    }
}

/// A provider for `spec` ([`VendorSpec::parse`], then [`VendorSpec::provider`]).
pub fn provider_from_spec(
    spec: &str,
    env: &dyn Fn(&str) -> Option<String>,
    http: HttpSettings,
) -> Result<Arc<dyn ModelProvider>, ProviderConfigError> {
    VendorSpec::parse(spec)?.provider(env, http)
}

/// `provider_from_spec` over the process environment with default HTTP settings.
pub fn provider_from_spec_env(spec: &str) -> Result<Arc<dyn ModelProvider>, ProviderConfigError> {
    VendorSpec::parse(spec)?.provider_from_env()
}

/// One provider per comma-separated spec (`openai:gpt-4.1,anthropic:claude-sonnet-4-5`),
/// in order; the first failure is returned.
pub fn providers_from_spec(
    specs: &str,
    env: &dyn Fn(&str) -> Option<String>,
    http: HttpSettings,
) -> Result<Vec<Arc<dyn ModelProvider>>, ProviderConfigError> {
    specs
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|spec| provider_from_spec(spec, env, http.clone()))
        .collect()
}

/// The base URL, or `default`, when it is an `http(s)://` URL with a host (parsed by `Url`,
/// as the client will; the text is kept as given).
fn checked_url(
    value: Option<String>,
    default: &str,
    var: &'static str,
) -> Result<String, ProviderConfigError> {
    let url = value.unwrap_or_else(|| default.to_owned());
    // A special scheme's parse skips extra slashes (`http:///x` is host `x`): refuse them as
    // the text says no host.
    let host_follows = url
        .split_once("://")
        .is_some_and(|(_, rest)| !rest.starts_with('/'));
    match reqwest::Url::parse(&url) {
        Ok(parsed)
            if host_follows
                && matches!(parsed.scheme(), "http" | "https")
                && parsed.host_str().is_some_and(|h| !h.is_empty()) =>
        {
            Ok(url)
        }
        _ => Err(ProviderConfigError::InvalidBaseUrl { var }),
    }
}

fn number(value: Option<String>, var: &'static str) -> Result<Option<u32>, ProviderConfigError> {
    match value {
        None => Ok(None),
        Some(v) => match v.parse::<u32>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(ProviderConfigError::InvalidNumber { var }),
        },
    }
}

/// `true`/`1` or `false`/`0`, unset as `None`.
fn flag(value: Option<String>, var: &'static str) -> Result<Option<bool>, ProviderConfigError> {
    match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None => Ok(None),
        Some("true" | "1") => Ok(Some(true)),
        Some("false" | "0") => Ok(Some(false)),
        Some(_) => Err(ProviderConfigError::InvalidFlag { var }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_http2_prior_knowledge_variable_is_a_checked_flag() {
        let spec = VendorSpec::parse("openai:m").unwrap();
        let http = HttpSettings::default;
        let base = ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
        for on in ["true", "1", "FALSE", "0", ""] {
            let vars = [base, ("OPENAI_HTTP2_PRIOR_KNOWLEDGE", on)];
            assert!(spec.provider(&env(&vars), http()).is_ok(), "{on:?}");
        }
        let vars = [base, ("OPENAI_HTTP2_PRIOR_KNOWLEDGE", "yes please")];
        assert!(matches!(
            spec.provider(&env(&vars), http()),
            Err(ProviderConfigError::InvalidFlag {
                var: "OPENAI_HTTP2_PRIOR_KNOWLEDGE"
            })
        ));
        let claude = VendorSpec::parse("anthropic:m").unwrap();
        let vars = [
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_HTTP2_PRIOR_KNOWLEDGE", "2"),
        ];
        assert!(matches!(
            claude.provider(&env(&vars), http()),
            Err(ProviderConfigError::InvalidFlag {
                var: "ANTHROPIC_HTTP2_PRIOR_KNOWLEDGE"
            })
        ));
    }

    #[test]
    fn specs_parse() {
        let spec = VendorSpec::parse("openai:llama3.2:3b").unwrap();
        assert_eq!(spec.vendor, Vendor::OpenAi);
        assert_eq!(spec.model, "llama3.2:3b");
        assert_eq!(spec.provider_id(), "openai/llama3.2:3b");
        // Written back in the form it is read in, spaces and the vendor's case normalised.
        assert_eq!(spec.to_string(), "openai:llama3.2:3b");
        let loose = VendorSpec::parse(" OpenAI : gpt-4.1 ").unwrap();
        assert_eq!(loose.to_string(), "openai:gpt-4.1");
        assert_eq!(VendorSpec::parse(&loose.to_string()), Ok(loose));
        assert_eq!(
            VendorSpec::parse("anthropic:claude-x")
                .unwrap()
                .provider_id(),
            "anthropic/claude-x"
        );
        assert!(matches!(
            VendorSpec::parse("gemini:x"),
            Err(ProviderConfigError::UnknownVendor { .. })
        ));
        assert!(matches!(
            VendorSpec::parse("openai:"),
            Err(ProviderConfigError::MissingModel { .. })
        ));
    }

    #[test]
    fn base_urls_are_parsed_as_urls() {
        let check = |url: &str| checked_url(Some(url.to_owned()), "unused", "OPENAI_BASE_URL");
        for good in [
            "http://localhost:11434/v1",
            "HTTPS://api.example.com/v1",
            "http://[::1]:8080",
            "http://127.0.0.1",
        ] {
            assert_eq!(check(good), Ok(good.to_owned()), "{good}");
        }
        for bad in [
            "localhost:11434",
            "http://",
            "https:///v1",
            "ftp://example.com",
            "http://exa mple.com",
            "http://[::1",
            "",
        ] {
            assert_eq!(
                check(bad),
                Err(ProviderConfigError::InvalidBaseUrl {
                    var: "OPENAI_BASE_URL"
                }),
                "{bad}"
            );
        }
        assert_eq!(
            checked_url(None, "https://api.example.com", "X").as_deref(),
            Ok("https://api.example.com")
        );
    }

    #[test]
    fn keys_and_urls_are_checked() {
        let http = HttpSettings::default;
        let none = env(&[]);
        assert_eq!(
            provider_from_spec("openai:gpt-4.1", &none, http()).err(),
            Some(ProviderConfigError::MissingKey {
                var: "OPENAI_API_KEY"
            })
        );
        let local = env(&[("OPENAI_BASE_URL", "http://localhost:11434/v1")]);
        let p = provider_from_spec("openai:llama3.2", &local, http()).unwrap();
        assert_eq!(p.id(), "openai/llama3.2");
        let bad = env(&[("OPENAI_BASE_URL", "localhost:11434")]);
        assert_eq!(
            provider_from_spec("openai:x", &bad, http()).err(),
            Some(ProviderConfigError::InvalidBaseUrl {
                var: "OPENAI_BASE_URL"
            })
        );
        assert_eq!(
            provider_from_spec("anthropic:claude-x", &none, http()).err(),
            Some(ProviderConfigError::MissingKey {
                var: "ANTHROPIC_API_KEY"
            })
        );
        let key = env(&[("ANTHROPIC_API_KEY", "k"), ("ANTHROPIC_MAX_TOKENS", "0")]);
        assert_eq!(
            provider_from_spec("anthropic:claude-x", &key, http()).err(),
            Some(ProviderConfigError::InvalidNumber {
                var: "ANTHROPIC_MAX_TOKENS"
            })
        );
        let both = env(&[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "k")]);
        let all = providers_from_spec("openai:a, anthropic:b", &both, http()).unwrap();
        let ids: Vec<&str> = all.iter().map(|p| p.id()).collect();
        assert_eq!(ids, ["openai/a", "anthropic/b"]);
    }
}
