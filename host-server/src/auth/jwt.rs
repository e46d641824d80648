//! `--auth jwt`: tokens the app's backend (HS256, a shared secret) or its identity provider
//! (RS256/ES256, public keys from a JWKS file or URL) signed, verified with the `jsonwebtoken`
//! crate on its RustCrypto backend.
//!
//! The token is `Authorization: Bearer <jwt>` or, without that header, the `--jwt-cookie`.
//! Checked: the algorithm against the key (an HS256 token never meets a JWKS key, `none` is
//! no algorithm), the signature, `exp` (required), `nbf`, `iss` and `aud` when configured
//! (and then required), each with [`LEEWAY_SECS`] of clock skew; then the claims become the
//! actor. Each failure has its own 401 code; no message carries the token.

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use actix_web::http::header::{HeaderMap, COOKIE};
use dpas_protocol::{HostError, HostErrorCode};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::bearer::bearer;
use super::config::{ClaimNames, JwtConfig, JwtKeys};
use dpas_governance::{Actor, Credential};

/// Clock skew allowed on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: u64 = 30;
/// Shortest time between two fetches of a JWKS URL caused by unknown key ids.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// A JWKS URL must answer within this.
pub const JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest JWKS accepted, in bytes.
pub const JWKS_MAX_BYTES: usize = 1024 * 1024;
/// Longest id, email, name or role taken from a token, in characters.
pub const MAX_CLAIM_CHARS: usize = 320;

/// Algorithms a JWKS key may verify: the asymmetric ones only.
const JWKS_ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

#[derive(Debug, thiserror::Error)]
pub enum JwtSetupError {
    #[error("--jwt-jwks {source_name}: {reason}")]
    Jwks { source_name: String, reason: String },
}

/// One usable public key of a JWKS.
#[derive(Debug)]
struct JwksKey {
    kid: Option<String>,
    algorithms: Vec<Algorithm>,
    key: DecodingKey,
}

enum Keys {
    Secret(DecodingKey),
    Jwks {
        keys: RwLock<Arc<Vec<JwksKey>>>,
        /// Set for a URL: fetched again (at most every [`REFETCH_INTERVAL`]) when a token
        /// names a key id the set does not have.
        remote: Option<Remote>,
    },
}

struct Remote {
    url: String,
    /// Background re-read interval ([`JwtConfig::jwks_refresh`]).
    every: Duration,
    http: reqwest::Client,
    last_refetch: tokio::sync::Mutex<Option<Instant>>,
}

/// Verifies tokens and maps their claims to the actor.
pub struct JwtAuth {
    /// One validation per accepted algorithm: the crate checks every algorithm a validation
    /// lists against the key's family, so a validation names exactly one.
    validations: Vec<(Algorithm, Validation)>,
    keys: Keys,
    cookie: Option<String>,
    claims: ClaimNames,
}

impl std::fmt::Debug for JwtAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuth")
            .field(
                "algorithms",
                &self.validations.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
            )
            .field("cookie", &self.cookie)
            .field("claims", &self.claims)
            .finish_non_exhaustive()
    }
}

fn token_error(code: HostErrorCode) -> HostError {
    HostError::of(code)
}

fn claim_error(claim: &str) -> HostError {
    HostError::new(
        HostErrorCode::TokenClaims,
        format!("The token has no usable \"{claim}\" claim."),
    )
}

impl JwtAuth {
    /// Keys as configured; a JWKS file or URL is read now, and must hold a usable key.
    pub async fn new(config: &JwtConfig) -> Result<Self, JwtSetupError> {
        // One backend is compiled in; installing it explicitly keeps a second one that some
        // other crate might switch on from turning verification into a panic.
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        let (keys, algorithms) = match &config.keys {
            JwtKeys::Secret(secret) => (
                Keys::Secret(DecodingKey::from_secret(secret.as_bytes())),
                vec![Algorithm::HS256],
            ),
            JwtKeys::JwksFile(path) => {
                let keys = read_jwks_file(path)?;
                (
                    Keys::Jwks {
                        keys: RwLock::new(Arc::new(keys)),
                        remote: None,
                    },
                    JWKS_ALGORITHMS.to_vec(),
                )
            }
            JwtKeys::JwksUrl(url) => {
                let http = reqwest::Client::builder()
                    .timeout(JWKS_FETCH_TIMEOUT)
                    .build()
                    .map_err(|e| jwks_error(url, e.to_string()))?;
                let keys = fetch_jwks(&http, url).await?;
                (
                    Keys::Jwks {
                        keys: RwLock::new(Arc::new(keys)),
                        remote: Some(Remote {
                            url: url.clone(),
                            every: config.jwks_refresh,
                            http,
                            last_refetch: tokio::sync::Mutex::new(None),
                        }),
                    },
                    JWKS_ALGORITHMS.to_vec(),
                )
            }
        };
        let mut validation = Validation::new(algorithms[0]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        let mut required = vec!["exp"];
        if let Some(issuer) = &config.issuer {
            validation.set_issuer(&[issuer]);
            required.push("iss");
        }
        if let Some(audience) = &config.audience {
            validation.set_audience(&[audience]);
            required.push("aud");
        }
        validation.set_required_spec_claims(&required);
        let validations = algorithms
            .into_iter()
            .map(|alg| {
                let mut v = validation.clone();
                v.algorithms = vec![alg];
                (alg, v)
            })
            .collect();
        Ok(Self {
            validations,
            keys,
            cookie: config.cookie.clone(),
            claims: config.claims.clone(),
        })
    }

    /// How often the keys are read again in the background: `Some` for a JWKS URL.
    pub fn refresh_interval(&self) -> Option<Duration> {
        match &self.keys {
            Keys::Jwks {
                remote: Some(remote),
                ..
            } => Some(remote.every),
            _ => None,
        }
    }

    /// Reads the JWKS URL again now: a key the provider no longer lists stops verifying. A
    /// failed read keeps the keys there are (logged, never shown to a client).
    pub async fn refresh(&self) {
        if let Keys::Jwks {
            keys,
            remote: Some(remote),
        } = &self.keys
        {
            match fetch_jwks(&remote.http, &remote.url).await {
                Ok(fresh) => {
                    *keys
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(fresh);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "JWKS refresh failed; keeping the keys we have")
                }
            }
        }
    }

    /// The actor of a request: its bearer token, else its `--jwt-cookie`.
    pub async fn actor(&self, headers: &HeaderMap) -> Result<Actor, HostError> {
        let (token, authorization) = match bearer(headers) {
            Some(Ok(token)) => (token.to_owned(), None),
            Some(Err(())) => {
                return Err(HostError::new(
                    HostErrorCode::TokenInvalid,
                    "The Authorization header is not a bearer token.",
                ))
            }
            None => {
                let token = self
                    .cookie_token(headers)
                    .ok_or_else(|| token_error(HostErrorCode::TokenMissing))?;
                let forwarded = Credential::new(format!("Bearer {token}"));
                (token, Some(forwarded))
            }
        };
        let claims = self.verify(&token).await?;
        let mut actor = self.actor_from(&claims)?;
        actor.authorization = authorization;
        Ok(actor)
    }

    fn cookie_token(&self, headers: &HeaderMap) -> Option<String> {
        let name = self.cookie.as_deref()?;
        headers
            .get_all(COOKIE)
            .filter_map(|h| h.to_str().ok())
            .flat_map(|h| cookie::Cookie::split_parse_encoded(h.to_owned()))
            .filter_map(Result::ok)
            .find(|c| c.name() == name)
            .map(|c| c.value().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The verified claims of `token`.
    pub async fn verify(&self, token: &str) -> Result<Map<String, Value>, HostError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| token_error(HostErrorCode::TokenInvalid))?;
        let validation = self
            .validations
            .iter()
            .find(|(alg, _)| *alg == header.alg)
            .map(|(_, v)| v)
            .ok_or_else(|| token_error(HostErrorCode::TokenInvalid))?;
        match &self.keys {
            Keys::Secret(key) => decode(token, key, validation),
            Keys::Jwks { keys, remote } => {
                let mut set = current(keys);
                let known = |set: &[JwksKey]| match &header.kid {
                    Some(kid) => set.iter().any(|k| k.kid.as_deref() == Some(kid)),
                    None => true,
                };
                if !known(&set) {
                    if let Some(remote) = remote {
                        if let Some(fresh) = remote.refetch().await {
                            *keys
                                .write()
                                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                                Arc::clone(&fresh);
                            set = fresh;
                        }
                    }
                }
                let mut last = token_error(HostErrorCode::TokenInvalid);
                let candidates = set.iter().filter(|k| {
                    k.algorithms.contains(&header.alg)
                        && (header.kid.is_none() || k.kid == header.kid)
                });
                for candidate in candidates {
                    match decode(token, &candidate.key, validation) {
                        Ok(claims) => return Ok(claims),
                        // The signature held: what is wrong is the claims, whatever other
                        // keys would say.
                        Err(e) if e.code != HostErrorCode::TokenInvalid => return Err(e),
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
        }
    }

    /// The actor the claims name, by the configured claim names.
    pub fn actor_from(&self, claims: &Map<String, Value>) -> Result<Actor, HostError> {
        let names = &self.claims;
        let text = |name: &str| -> Result<Option<String>, HostError> {
            match claims.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
                // Numeric user ids are common; they are ids all the same.
                Some(Value::Number(n)) if name == names.id => Ok(Some(n.to_string())),
                // A role list (`["editor", "viewer"]`): its first string.
                Some(Value::Array(items)) if name == names.role => Ok(items
                    .iter()
                    .find_map(Value::as_str)
                    .map(|s| s.trim().to_owned())),
                Some(_) => Err(claim_error(name)),
            }
            .and_then(|v| match v {
                Some(s)
                    if s.chars().count() > MAX_CLAIM_CHARS || s.chars().any(char::is_control) =>
                {
                    Err(claim_error(name))
                }
                Some(s) if s.is_empty() => Ok(None),
                v => Ok(v),
            })
        };
        let id = text(&names.id)?.ok_or_else(|| claim_error(&names.id))?;
        let email = text(&names.email)?;
        let name = text(&names.name)?
            .or_else(|| email.clone())
            .unwrap_or_else(|| id.clone());
        let role = text(&names.role)?.unwrap_or_default();
        let mut actor = Actor::user(id, name, role);
        actor.email = email;
        Ok(actor)
    }
}

/// Verifies `token` with `key` and checks its claims.
fn decode(
    token: &str,
    key: &DecodingKey,
    validation: &Validation,
) -> Result<Map<String, Value>, HostError> {
    jsonwebtoken::decode::<Map<String, Value>>(token, key, validation)
        .map(|data| data.claims)
        .map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => token_error(HostErrorCode::TokenExpired),
            ErrorKind::ImmatureSignature => token_error(HostErrorCode::TokenNotYetValid),
            ErrorKind::InvalidAudience => token_error(HostErrorCode::TokenAudience),
            ErrorKind::InvalidIssuer => token_error(HostErrorCode::TokenIssuer),
            ErrorKind::MissingRequiredClaim(c) if c == "aud" => {
                token_error(HostErrorCode::TokenAudience)
            }
            ErrorKind::MissingRequiredClaim(c) if c == "iss" => {
                token_error(HostErrorCode::TokenIssuer)
            }
            ErrorKind::MissingRequiredClaim(c) | ErrorKind::InvalidClaimFormat(c) => claim_error(c),
            // The header was read before and the signature holds by now: the claims are
            // what does not parse (a registered claim of the wrong type).
            ErrorKind::Json(_) => token_error(HostErrorCode::TokenClaims),
            _ => token_error(HostErrorCode::TokenInvalid),
        })
}

fn current(keys: &RwLock<Arc<Vec<JwksKey>>>) -> Arc<Vec<JwksKey>> {
    Arc::clone(
        &keys
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

impl Remote {
    /// The set fetched again, unless a fetch for an unknown key happened too recently or
    /// fails (then the old set stays; the failure is logged, never shown to the client).
    async fn refetch(&self) -> Option<Arc<Vec<JwksKey>>> {
        let mut last = self.last_refetch.lock().await;
        if last.is_some_and(|t| t.elapsed() < REFETCH_INTERVAL) {
            return None;
        }
        *last = Some(Instant::now());
        match fetch_jwks(&self.http, &self.url).await {
            Ok(keys) => Some(Arc::new(keys)),
            Err(e) => {
                tracing::warn!(error = %e, "JWKS refetch failed; keeping the keys we have");
                None
            }
        }
    }
}

fn jwks_error(source_name: impl std::fmt::Display, reason: impl Into<String>) -> JwtSetupError {
    JwtSetupError::Jwks {
        source_name: source_name.to_string(),
        reason: reason.into(),
    }
}

fn read_jwks_file(path: &Path) -> Result<Vec<JwksKey>, JwtSetupError> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| jwks_error(&shown, e.to_string()))?;
    if bytes.len() > JWKS_MAX_BYTES {
        return Err(jwks_error(&shown, "larger than 1 MiB"));
    }
    parse_jwks(&bytes).map_err(|reason| jwks_error(&shown, reason))
}

async fn fetch_jwks(http: &reqwest::Client, url: &str) -> Result<Vec<JwksKey>, JwtSetupError> {
    let fail = |reason: String| jwks_error(url, reason);
    let mut response = http
        .get(url)
        .send()
        .await
        .map_err(|e| fail(format!("could not be fetched ({})", e.without_url())))?;
    if !response.status().is_success() {
        return Err(fail(format!("answered {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| fail(format!("could not be read ({})", e.without_url())))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > JWKS_MAX_BYTES {
            return Err(fail("larger than 1 MiB".to_owned()));
        }
    }
    parse_jwks(&body).map_err(fail)
}

/// The usable signature keys of a JWKS document: RSA and P-256/P-384 keys not marked for
/// encryption. Keys of other kinds are skipped; a set with none left is an error.
fn parse_jwks(bytes: &[u8]) -> Result<Vec<JwksKey>, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON ({e})"))?;
    let entries = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("not a JWKS: no \"keys\" array")?;
    let keys: Vec<JwksKey> = entries
        .iter()
        .filter_map(|entry| serde_json::from_value::<Jwk>(entry.clone()).ok())
        .filter_map(|jwk| usable(&jwk))
        .collect();
    if keys.is_empty() {
        return Err("holds no RSA or EC (P-256, P-384) signature key".to_owned());
    }
    Ok(keys)
}

fn usable(jwk: &Jwk) -> Option<JwksKey> {
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let mut algorithms: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => JWKS_ALGORITHMS[..6].to_vec(),
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return None,
        },
        _ => return None,
    };
    // A key that names its algorithm verifies that one only.
    if let Some(named) = jwk.common.key_algorithm {
        let named: Algorithm = named.to_string().parse().ok()?;
        algorithms.retain(|a| *a == named);
    }
    if algorithms.is_empty() {
        return None;
    }
    Some(JwksKey {
        kid: jwk.common.key_id.clone(),
        algorithms,
        key: DecodingKey::from_jwk(jwk).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwks_documents_keep_only_signature_keys() {
        assert!(parse_jwks(b"nope").unwrap_err().contains("not JSON"));
        assert!(parse_jwks(b"{}").unwrap_err().contains("no \"keys\""));
        let only_secret = br#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#;
        assert!(parse_jwks(only_secret)
            .unwrap_err()
            .contains("no RSA or EC"));
        let rsa = r#"{"kty":"RSA","kid":"r1","n":"sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw","e":"AQAB"}"#;
        let enc = rsa.replace("\"kid\":\"r1\"", "\"kid\":\"e1\",\"use\":\"enc\"");
        let named = rsa.replace("\"kid\":\"r1\"", "\"kid\":\"p1\",\"alg\":\"PS256\"");
        let doc = format!(r#"{{"keys":[{rsa},{enc},{named},{{"kty":"weird"}}]}}"#);
        let keys = parse_jwks(doc.as_bytes()).unwrap();
        let kids: Vec<_> = keys.iter().map(|k| k.kid.as_deref().unwrap()).collect();
        assert_eq!(kids, ["r1", "p1"]);
        assert!(keys[0].algorithms.contains(&Algorithm::RS256));
        assert_eq!(keys[1].algorithms, [Algorithm::PS256]);
    }
}
