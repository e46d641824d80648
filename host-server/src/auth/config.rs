//! The identity flags and what they resolve to (`--auth demo|jwt|proxy-header` and the
//! flags of each mode), with the rules between them.

use std::path::PathBuf;
use std::time::Duration;

/// Shortest session secret accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// Why the identity flags do not make a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("--auth is required without --demo: jwt (tokens from your app or identity provider) or proxy-header (behind an authenticating proxy)")]
    MissingAuth,
    #[error("--auth demo (the demo's role picker) works only with --demo; use --auth jwt or --auth proxy-header")]
    DemoAuthWithoutDemo,
    #[error("--auth {0}: {1}")]
    Identity(&'static str, String),
}

/// How a request says who its user is (`--auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthKind {
    /// The demo's signed session cookies, minted by its role-picker sign-in (`--demo` only).
    Demo,
    /// A JWT from the app's backend or identity provider, as a bearer token or a cookie.
    Jwt,
    /// Headers set by an authenticating reverse proxy.
    ProxyHeader,
}

/// The identity flags (see REFERENCE.md, "Identity").
#[derive(Debug, Clone, clap::Args)]
pub struct IdentityArgs {
    /// demo | jwt | proxy-header. Default: demo under --demo; required without it.
    #[arg(long, env = "DPAS_AUTH", value_enum)]
    pub auth: Option<AuthKind>,
    /// HS256 shared secret (at least 32 bytes) the app's backend signs its JWTs with.
    #[arg(long, env = "DPAS_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// JWKS (RS256/ES256 public keys) from a file or an http(s) URL.
    #[arg(long, env = "DPAS_JWT_JWKS", value_name = "FILE|URL")]
    pub jwt_jwks: Option<String>,
    /// The `iss` a token must carry.
    #[arg(long, env = "DPAS_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// The `aud` a token must carry (a token with an `aud` needs this set).
    #[arg(long, env = "DPAS_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// A cookie the token may come in, when there is no `Authorization: Bearer`.
    #[arg(long, env = "DPAS_JWT_COOKIE", value_name = "NAME")]
    pub jwt_cookie: Option<String>,
    /// Claim holding the user id (required in every token).
    #[arg(long, env = "DPAS_JWT_CLAIM_ID", default_value = "sub")]
    pub jwt_claim_id: String,
    #[arg(long, env = "DPAS_JWT_CLAIM_EMAIL", default_value = "email")]
    pub jwt_claim_email: String,
    #[arg(long, env = "DPAS_JWT_CLAIM_NAME", default_value = "name")]
    pub jwt_claim_name: String,
    /// Claim holding the role (a string, or a list whose first string is taken).
    #[arg(long, env = "DPAS_JWT_CLAIM_ROLE", default_value = "role")]
    pub jwt_claim_role: String,
    /// Header the proxy puts the user id in (required on every request).
    #[arg(
        long,
        env = "DPAS_PROXY_USER_HEADER",
        default_value = "x-forwarded-user"
    )]
    pub proxy_user_header: String,
    #[arg(
        long,
        env = "DPAS_PROXY_EMAIL_HEADER",
        default_value = "x-forwarded-email"
    )]
    pub proxy_email_header: String,
    #[arg(
        long,
        env = "DPAS_PROXY_NAME_HEADER",
        default_value = "x-forwarded-name"
    )]
    pub proxy_name_header: String,
    #[arg(
        long,
        env = "DPAS_PROXY_ROLE_HEADER",
        default_value = "x-forwarded-role"
    )]
    pub proxy_role_header: String,
    /// Address or CIDR range of the proxy whose identity headers are believed; repeatable
    /// (the env var takes a comma-separated list).
    #[arg(
        long = "trusted-proxy",
        env = "DPAS_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_name = "IP|CIDR"
    )]
    pub trusted_proxies: Vec<String>,
    /// A secret (at least 32 bytes) the proxy sends in --proxy-secret-header; a request
    /// carrying it is believed from any address.
    #[arg(long, env = "DPAS_PROXY_SECRET", hide_env_values = true)]
    pub proxy_secret: Option<String>,
    #[arg(
        long,
        env = "DPAS_PROXY_SECRET_HEADER",
        default_value = "x-proxy-secret"
    )]
    pub proxy_secret_header: String,
}

/// Where a request's identity comes from (`--auth`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthConfig {
    /// Signed session cookies (`dpas_session`). The demo's sign-in mints them under `--demo`;
    /// an embedder may mint them itself with [`crate::session::SessionKeys`].
    Session,
    Jwt(JwtConfig),
    ProxyHeader(ProxyConfig),
}

/// `--auth jwt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtConfig {
    pub keys: JwtKeys,
    pub issuer: Option<String>,
    pub audience: Option<String>,
    /// Cookie the token may come in when there is no bearer token.
    pub cookie: Option<String>,
    pub claims: ClaimNames,
    /// How often a JWKS URL is read again in the background, so that a key the provider
    /// withdraws stops verifying ([`DEFAULT_JWKS_REFRESH`]).
    pub jwks_refresh: Duration,
}

/// Default background re-read interval of a JWKS URL (10 minutes).
pub const DEFAULT_JWKS_REFRESH: Duration = Duration::from_secs(600);

/// Where the keys that verify tokens come from.
#[derive(Clone, PartialEq, Eq)]
pub enum JwtKeys {
    /// HS256 with a shared secret.
    Secret(String),
    /// RS256/ES256 against a JWKS file, read at start.
    JwksFile(PathBuf),
    /// RS256/ES256 against a JWKS URL, fetched at start and again for an unknown key id.
    JwksUrl(String),
}

impl std::fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Secret(_) => f.write_str("Secret(…)"),
            Self::JwksFile(p) => f.debug_tuple("JwksFile").field(p).finish(),
            Self::JwksUrl(u) => f.debug_tuple("JwksUrl").field(u).finish(),
        }
    }
}

/// Which claims make the actor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimNames {
    pub id: String,
    pub email: String,
    pub name: String,
    pub role: String,
}

impl Default for ClaimNames {
    fn default() -> Self {
        Self {
            id: "sub".to_owned(),
            email: "email".to_owned(),
            name: "name".to_owned(),
            role: "role".to_owned(),
        }
    }
}

impl JwtConfig {
    /// HS256 with `secret`, default claim names, no issuer, audience or cookie.
    pub fn hs256(secret: impl Into<String>) -> Self {
        Self::with_keys(JwtKeys::Secret(secret.into()))
    }

    pub fn with_keys(keys: JwtKeys) -> Self {
        Self {
            keys,
            issuer: None,
            audience: None,
            cookie: None,
            claims: ClaimNames::default(),
            jwks_refresh: DEFAULT_JWKS_REFRESH,
        }
    }
}

/// `--auth proxy-header`.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Lower-case header names.
    pub user_header: String,
    pub email_header: String,
    pub name_header: String,
    pub role_header: String,
    pub trusted: Vec<ipnet::IpNet>,
    pub secret: Option<String>,
    pub secret_header: String,
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("user_header", &self.user_header)
            .field("trusted", &self.trusted)
            .field("secret", &self.secret.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

impl ProxyConfig {
    /// The default header names, trusting `trusted` and no secret.
    pub fn trusting(trusted: Vec<ipnet::IpNet>) -> Self {
        Self {
            user_header: "x-forwarded-user".to_owned(),
            email_header: "x-forwarded-email".to_owned(),
            name_header: "x-forwarded-name".to_owned(),
            role_header: "x-forwarded-role".to_owned(),
            trusted,
            secret: None,
            secret_header: "x-proxy-secret".to_owned(),
        }
    }
}

/// An address (`10.0.0.5`, `::1`) or a range (`10.0.0.0/8`).
fn parse_trusted_proxy(s: &str) -> Result<ipnet::IpNet, String> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("--trusted-proxy {s:?} is neither an IP address nor a CIDR range"))
}

/// A header name as actix compares it (lower case), or why it is not one.
fn header_name(flag: &str, s: &str) -> Result<String, String> {
    actix_web::http::header::HeaderName::from_bytes(s.trim().as_bytes())
        .map(|h| h.as_str().to_owned())
        .map_err(|_| format!("{flag} {s:?} is not a header name"))
}

impl IdentityArgs {
    /// The identity configuration, with the rules between the flags.
    pub(crate) fn resolve(
        self,
        demo: bool,
        own_sign_in: bool,
    ) -> Result<AuthConfig, IdentityError> {
        let jwt_flags = self.jwt_secret.is_some()
            || self.jwt_jwks.is_some()
            || self.jwt_issuer.is_some()
            || self.jwt_audience.is_some()
            || self.jwt_cookie.is_some();
        let proxy_flags = !self.trusted_proxies.is_empty() || self.proxy_secret.is_some();
        let kind = match (self.auth, demo) {
            (None, true) => AuthKind::Demo,
            (None, false) if own_sign_in && !jwt_flags && !proxy_flags => {
                return Ok(AuthConfig::Session)
            }
            (None, false) => return Err(IdentityError::MissingAuth),
            (Some(AuthKind::Demo), false) => return Err(IdentityError::DemoAuthWithoutDemo),
            (Some(k), _) => k,
        };
        match kind {
            AuthKind::Demo | AuthKind::ProxyHeader if jwt_flags => Err(IdentityError::Identity(
                if kind == AuthKind::Demo {
                    "demo"
                } else {
                    "proxy-header"
                },
                "the --jwt-* flags need --auth jwt".to_owned(),
            )),
            AuthKind::Demo | AuthKind::Jwt if proxy_flags => Err(IdentityError::Identity(
                if kind == AuthKind::Demo {
                    "demo"
                } else {
                    "jwt"
                },
                "--trusted-proxy and --proxy-secret need --auth proxy-header".to_owned(),
            )),
            AuthKind::Demo => Ok(AuthConfig::Session),
            AuthKind::Jwt => self
                .jwt()
                .map(AuthConfig::Jwt)
                .map_err(|e| IdentityError::Identity("jwt", e)),
            AuthKind::ProxyHeader => self
                .proxy()
                .map(AuthConfig::ProxyHeader)
                .map_err(|e| IdentityError::Identity("proxy-header", e)),
        }
    }

    fn jwt(self) -> Result<JwtConfig, String> {
        let keys = match (self.jwt_secret, self.jwt_jwks) {
            (Some(_), Some(_)) => {
                return Err(
                    "give --jwt-secret (HS256) or --jwt-jwks (RS256/ES256), not both".to_owned(),
                )
            }
            (None, None) => {
                return Err(
                    "needs --jwt-secret (HS256) or --jwt-jwks FILE|URL (RS256/ES256)".to_owned(),
                )
            }
            (Some(s), None) if s.len() < MIN_SECRET_BYTES => {
                return Err(format!(
                    "the --jwt-secret must be at least {MIN_SECRET_BYTES} bytes (it has {})",
                    s.len()
                ))
            }
            (Some(s), None) => JwtKeys::Secret(s),
            (None, Some(j)) if j.starts_with("https://") || j.starts_with("http://") => {
                JwtKeys::JwksUrl(j)
            }
            (None, Some(j)) if j.trim().is_empty() => return Err("--jwt-jwks is empty".to_owned()),
            (None, Some(j)) => JwtKeys::JwksFile(PathBuf::from(j)),
        };
        let cookie = match self.jwt_cookie {
            Some(c)
                if c.is_empty()
                    || !c
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) =>
            {
                return Err(format!("--jwt-cookie {c:?} is not a cookie name"))
            }
            c => c,
        };
        let claims = ClaimNames {
            id: self.jwt_claim_id,
            email: self.jwt_claim_email,
            name: self.jwt_claim_name,
            role: self.jwt_claim_role,
        };
        if [&claims.id, &claims.email, &claims.name, &claims.role]
            .iter()
            .any(|c| c.trim().is_empty())
        {
            return Err("claim names may not be empty".to_owned());
        }
        Ok(JwtConfig {
            keys,
            issuer: self.jwt_issuer,
            audience: self.jwt_audience,
            cookie,
            claims,
            jwks_refresh: DEFAULT_JWKS_REFRESH,
        })
    }

    fn proxy(self) -> Result<ProxyConfig, String> {
        let trusted = self
            .trusted_proxies
            .iter()
            .filter(|s| !s.trim().is_empty())
            .map(|s| parse_trusted_proxy(s))
            .collect::<Result<Vec<_>, _>>()?;
        match &self.proxy_secret {
            Some(s) if s.len() < MIN_SECRET_BYTES => {
                return Err(format!(
                    "the --proxy-secret must be at least {MIN_SECRET_BYTES} bytes (it has {})",
                    s.len()
                ))
            }
            None if trusted.is_empty() => {
                return Err(
                    "needs --trusted-proxy (the proxy's address) or --proxy-secret".to_owned(),
                )
            }
            _ => {}
        }
        Ok(ProxyConfig {
            user_header: header_name("--proxy-user-header", &self.proxy_user_header)?,
            email_header: header_name("--proxy-email-header", &self.proxy_email_header)?,
            name_header: header_name("--proxy-name-header", &self.proxy_name_header)?,
            role_header: header_name("--proxy-role-header", &self.proxy_role_header)?,
            trusted,
            secret: self.proxy_secret,
            secret_header: header_name("--proxy-secret-header", &self.proxy_secret_header)?,
        })
    }
}
