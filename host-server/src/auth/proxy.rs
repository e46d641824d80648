//! `--auth proxy-header`: an authenticating reverse proxy in front of the server says who the
//! user is in headers. They are believed only when the request comes from a `--trusted-proxy`
//! address or carries the `--proxy-secret` (compared in constant time); from anyone else the
//! identity headers count for nothing and the request is 401.

use actix_web::http::header::HeaderMap;
use actix_web::HttpRequest;
use dpas_protocol::{HostError, HostErrorCode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::config::ProxyConfig;
use super::jwt::MAX_CLAIM_CHARS;
use dpas_governance::Actor;

#[derive(Debug)]
pub struct ProxyAuth {
    config: ProxyConfig,
    /// SHA-256 of the secret: comparing digests takes the same time whatever the length.
    secret_digest: Option<[u8; 32]>,
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl ProxyAuth {
    pub fn new(config: ProxyConfig) -> Self {
        let secret_digest = config.secret.as_deref().map(|s| digest(s.as_bytes()));
        Self {
            config,
            secret_digest,
        }
    }

    /// Whether the request comes through the proxy: from a trusted address, or with the secret.
    fn trusted(&self, req: &HttpRequest) -> bool {
        let from_proxy = req.peer_addr().is_some_and(|peer| {
            self.config
                .trusted
                .iter()
                .any(|net| net.contains(&peer.ip()))
        });
        let with_secret = match (
            &self.secret_digest,
            req.headers().get(&self.config.secret_header),
        ) {
            (Some(expected), Some(sent)) => bool::from(digest(sent.as_bytes()).ct_eq(expected)),
            _ => false,
        };
        from_proxy || with_secret
    }

    pub fn actor(&self, req: &HttpRequest) -> Result<Actor, HostError> {
        let headers = req.headers();
        let c = &self.config;
        if !self.trusted(req) {
            let claims_identity = [
                &c.user_header,
                &c.email_header,
                &c.name_header,
                &c.role_header,
            ]
            .iter()
            .any(|h| headers.contains_key(h.as_str()));
            return Err(HostError::of(if claims_identity {
                HostErrorCode::ProxyUntrusted
            } else {
                HostErrorCode::Unauthenticated
            }));
        }
        let id = value(headers, &c.user_header)?
            .ok_or_else(|| HostError::of(HostErrorCode::Unauthenticated))?;
        let email = value(headers, &c.email_header)?;
        let name = value(headers, &c.name_header)?
            .or_else(|| email.clone())
            .unwrap_or_else(|| id.clone());
        let role = value(headers, &c.role_header)?.unwrap_or_default();
        let mut actor = Actor::user(id, name, role);
        actor.email = email;
        Ok(actor)
    }
}

/// A header's value as text: UTF-8, no control characters, trimmed, not too long; `None`
/// when absent or blank.
fn value(headers: &HeaderMap, name: &str) -> Result<Option<String>, HostError> {
    let Some(raw) = headers.get(name) else {
        return Ok(None);
    };
    let bad = || {
        HostError::new(
            HostErrorCode::Unauthenticated,
            format!("The proxy's {name} header is not a usable value."),
        )
    };
    let text = std::str::from_utf8(raw.as_bytes())
        .map_err(|_| bad())?
        .trim();
    if text.chars().count() > MAX_CLAIM_CHARS || text.chars().any(char::is_control) {
        return Err(bad());
    }
    Ok((!text.is_empty()).then(|| text.to_owned()))
}
