//! Who a request's user is, by `--auth` mode:
//!
//! - `demo` ([`AuthConfig::Session`]): the server's own signed session cookie (the demo's
//!   role picker mints it); `/mcp` also takes it as a bearer token;
//! - `jwt`: a JWT from the app's backend or identity provider, as `Authorization: Bearer` or
//!   in a cookie the app names ([`jwt`]);
//! - `proxy-header`: headers set by an authenticating reverse proxy, believed only from the
//!   configured proxy addresses or with the shared secret ([`proxy`]).
//!
//! Every door asks [`actor_of`] before it reads a byte of the body. Every failure is 401
//! with a code from the one host error table; no message ever contains a token.

mod bearer;
pub mod config;
pub mod jwt;
pub mod proxy;

use std::sync::Arc;

use actix_web::http::header::HeaderMap;
use actix_web::{web, HttpRequest};
use dpas_governance::Actor;
use dpas_protocol::{HostError, HostErrorCode};

use crate::http::error::ApiError;
use crate::session::SessionKeys;
use bearer::{bearer, raw_authorization};
use config::AuthConfig;

pub use jwt::{JwtAuth, JwtSetupError};
pub use proxy::ProxyAuth;

/// The identity source the server runs with, built from [`AuthConfig`] at start.
#[derive(Debug)]
pub enum Auth {
    Session,
    Jwt(Box<JwtAuth>),
    Proxy(ProxyAuth),
}

/// The door asking: `/mcp` also takes a session token as a bearer in session mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    App,
    Mcp,
}

impl Auth {
    /// Reads keys (a JWKS file or URL) as the configuration says; a failure fails the start.
    pub async fn from_config(config: &AuthConfig) -> Result<Self, JwtSetupError> {
        Ok(match config {
            AuthConfig::Session => Self::Session,
            AuthConfig::Jwt(c) => Self::Jwt(Box::new(JwtAuth::new(c).await?)),
            AuthConfig::ProxyHeader(c) => Self::Proxy(ProxyAuth::new(c.clone())),
        })
    }

    /// Keeps keys from a JWKS URL current: reads it again every
    /// [`crate::config::JwtConfig::jwks_refresh`] for as long as the server runs. Nothing to
    /// do in the other modes.
    pub fn spawn_refresh(self: &Arc<Self>) {
        let Self::Jwt(jwt) = self.as_ref() else {
            return;
        };
        let Some(every) = jwt.refresh_interval() else {
            return;
        };
        let auth = Arc::clone(self);
        crate::lifecycle::every(every, "refreshing the JWKS", move || {
            let auth = Arc::clone(&auth);
            async move {
                if let Self::Jwt(jwt) = auth.as_ref() {
                    jwt.refresh().await;
                }
                Ok::<(), std::convert::Infallible>(())
            }
        });
    }

    /// Whether identity is the server's own session cookie (sign-in, sign-out and MCP
    /// tokens are offered only then).
    pub fn is_session(&self) -> bool {
        matches!(self, Self::Session)
    }

    /// The actor of a request, from its headers and peer address only.
    pub async fn actor(
        &self,
        req: &HttpRequest,
        sessions: &SessionKeys,
        door: Door,
    ) -> Result<Actor, HostError> {
        let mut actor = match self {
            Self::Session => session_actor(req.headers(), sessions, door)?,
            Self::Jwt(jwt) => jwt.actor(req.headers()).await?,
            Self::Proxy(proxy) => proxy.actor(req)?,
        };
        if actor.authorization.is_none() {
            actor.authorization = raw_authorization(req.headers());
        }
        Ok(actor)
    }
}

fn session_actor(
    headers: &HeaderMap,
    sessions: &SessionKeys,
    door: Door,
) -> Result<Actor, HostError> {
    match (door, bearer(headers)) {
        // An MCP client sends the token `POST /api/session/token` gave it: then only it.
        (Door::Mcp, Some(token)) => token
            .ok()
            .and_then(|t| sessions.verify_token(t))
            .map(|claims| claims.actor())
            .ok_or_else(|| HostError::of(HostErrorCode::Unauthenticated)),
        _ => sessions.actor_from_headers(headers),
    }
}

/// Where identity comes from, registered as app data beside the state: the `--auth` mode and
/// the session keys. What [`actor_at`] reads, and all it reads.
#[derive(Debug, Clone)]
pub struct Identity {
    pub auth: Arc<Auth>,
    pub sessions: SessionKeys,
}

/// The actor of a request to `door`, or the 401 that says why not.
pub async fn actor_at(req: &HttpRequest, door: Door) -> Result<Actor, ApiError> {
    let identity = req
        .app_data::<web::Data<Identity>>()
        .ok_or_else(|| ApiError::Internal("the identity source is not registered".to_owned()))?;
    Ok(identity.auth.actor(req, &identity.sessions, door).await?)
}

/// The actor of a request to the app's own doors (`/rpc`, approvals, threads, chat).
pub async fn actor_of(req: &HttpRequest) -> Result<Actor, ApiError> {
    actor_at(req, Door::App).await
}
