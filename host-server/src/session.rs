//! Signed session cookies (the `cookie` crate's signed jar) and the actor they carry.
//! There is no default user: a missing, forged, tampered, expired or signed-out (revoked)
//! cookie is 401.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use cookie::{Cookie, CookieJar, Key, SameSite};
use dpas_protocol::{HostError, HostErrorCode};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use dpas_governance::Actor;
use dpas_store::{revocations, Db};

pub const COOKIE_NAME: &str = "dpas_session";

/// What the cookie asserts, under the server's signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionClaims {
    pub email: String,
    pub name: String,
    pub role: String,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// The session's own id, so that signing out can revoke exactly this cookie.
    pub sid: String,
}

impl SessionClaims {
    pub fn actor(&self) -> Actor {
        Actor::user(&self.email, &self.name, &self.role)
    }
}

/// Signs and verifies session cookies, and remembers the ones signed out before their expiry.
#[derive(Clone)]
pub struct SessionKeys {
    key: Key,
    ttl: Duration,
    secure: bool,
    /// Revoked session ids and their expiry (Unix seconds); shared by every worker.
    revoked: Arc<RwLock<HashMap<String, i64>>>,
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionKeys")
            .field("ttl", &self.ttl)
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

impl SessionKeys {
    /// Keys derived from a secret of any length (hashed to the 32-byte master key).
    pub fn from_secret(secret: &str, ttl: Duration) -> Self {
        let master = Sha256::digest(secret.as_bytes());
        Self::with_key(Key::derive_from(master.as_slice()), ttl)
    }

    /// Random per-process keys.
    pub fn random(ttl: Duration) -> Self {
        Self::with_key(Key::generate(), ttl)
    }

    fn with_key(key: Key, ttl: Duration) -> Self {
        Self {
            key,
            ttl,
            secure: false,
            revoked: Arc::default(),
        }
    }

    /// Marks the cookies `Secure` (sent over HTTPS only).
    pub fn secure(mut self, on: bool) -> Self {
        self.secure = on;
        self
    }

    /// Refuses the session `sid` from now on (until `exp`, after which it is dead anyway).
    pub fn revoke(&self, sid: &str, exp: i64) {
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let mut revoked = self
            .revoked
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Expired entries need no remembering.
        revoked.retain(|_, e| *e > now);
        revoked.insert(sid.to_owned(), exp);
    }

    fn is_revoked(&self, sid: &str) -> bool {
        self.revoked
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(sid)
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Claims for `actor`, valid for the configured lifetime from now.
    pub fn claims_for(&self, actor: &Actor) -> SessionClaims {
        let ttl = i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX);
        SessionClaims {
            email: actor.id.clone(),
            name: actor.display_name.clone(),
            role: actor.role.clone(),
            exp: OffsetDateTime::now_utc()
                .unix_timestamp()
                .saturating_add(ttl),
            sid: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    /// The signed cookie value for `claims` (also for minting test cookies).
    pub fn sign(&self, claims: &SessionClaims) -> String {
        let payload = serde_json::to_string(claims).unwrap_or_default();
        let mut jar = CookieJar::new();
        jar.signed_mut(&self.key)
            .add(Cookie::new(COOKIE_NAME, payload));
        jar.get(COOKIE_NAME)
            .map(|c| c.value().to_owned())
            .unwrap_or_default()
    }

    /// The `Set-Cookie` for a session of `actor`: signed, HttpOnly, SameSite=Lax, Path=/,
    /// and Secure when configured.
    pub fn set_cookie(&self, actor: &Actor) -> Cookie<'static> {
        let value = self.sign(&self.claims_for(actor));
        let max_age =
            cookie::time::Duration::seconds(i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX));
        self.cookie(value, max_age)
    }

    /// The `Set-Cookie` that makes the browser drop its session cookie.
    pub fn removal_cookie(&self) -> Cookie<'static> {
        self.cookie(String::new(), cookie::time::Duration::ZERO)
    }

    fn cookie(&self, value: String, max_age: cookie::time::Duration) -> Cookie<'static> {
        Cookie::build((COOKIE_NAME, value))
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(self.secure)
            .path("/")
            .max_age(max_age)
            .build()
    }

    /// A bearer token for `actor` (`Authorization: Bearer …`, e.g. for an MCP client): a fresh
    /// session cookie's value exactly as a `Cookie` header carries it (percent-encoded, so
    /// it pastes as one word), and its expiry in Unix seconds.
    pub fn token_for(&self, actor: &Actor) -> (String, i64) {
        let claims = self.claims_for(actor);
        let encoded = Cookie::new(COOKIE_NAME, self.sign(&claims))
            .encoded()
            .to_string();
        let token = encoded
            .strip_prefix(COOKIE_NAME)
            .and_then(|rest| rest.strip_prefix('='))
            .unwrap_or_default()
            .to_owned();
        (token, claims.exp)
    }

    /// Verifies a bearer token: a session cookie's value, percent-encoded or not.
    pub fn verify_token(&self, token: &str) -> Option<SessionClaims> {
        let cookie = Cookie::parse_encoded(format!("{COOKIE_NAME}={token}")).ok()?;
        self.verify_value(cookie.value())
    }

    /// Verifies the session cookie in a `Cookie` request header.
    pub fn verify_header(&self, header: &str) -> Option<SessionClaims> {
        let raw = Cookie::split_parse_encoded(header.to_owned())
            .filter_map(Result::ok)
            .find(|c| c.name() == COOKIE_NAME)?;
        self.verify_value(raw.value())
    }

    /// Verifies a signed cookie value: signature, shape and expiry.
    pub fn verify_value(&self, value: &str) -> Option<SessionClaims> {
        let mut jar = CookieJar::new();
        jar.add_original(Cookie::new(COOKIE_NAME, value.to_owned()));
        let verified = jar.signed(&self.key).get(COOKIE_NAME)?;
        let claims: SessionClaims = serde_json::from_str(verified.value()).ok()?;
        if claims.email.is_empty()
            || claims.exp <= OffsetDateTime::now_utc().unix_timestamp()
            || self.is_revoked(&claims.sid)
        {
            return None;
        }
        Some(claims)
    }

    /// The verified claims of a request, or 401 `UNAUTHENTICATED`.
    pub fn claims_from_headers(
        &self,
        headers: &actix_web::http::header::HeaderMap,
    ) -> Result<SessionClaims, HostError> {
        headers
            .get_all(actix_web::http::header::COOKIE)
            .filter_map(|h| h.to_str().ok())
            .find_map(|h| self.verify_header(h))
            .ok_or_else(|| HostError::of(HostErrorCode::Unauthenticated))
    }

    /// The actor of a request, or 401 `UNAUTHENTICATED`.
    pub fn actor_from_headers(
        &self,
        headers: &actix_web::http::header::HeaderMap,
    ) -> Result<Actor, HostError> {
        self.claims_from_headers(headers).map(|c| c.actor())
    }
}

/// How often every process re-reads the stored revocations ([`load_revoked`]): a session
/// signed out through one replica is refused by the others within this long (at once by the
/// one that signed it out).
pub const REVOCATION_REFRESH: Duration = Duration::from_secs(2);

/// Loads the still-unexpired revocations into `keys` (at start, then every
/// [`REVOCATION_REFRESH`]), dropping the expired ones from the table.
pub async fn load_revoked(db: &Db, keys: &SessionKeys) -> Result<(), sqlx::Error> {
    for (sid, exp) in revocations::load(db).await? {
        keys.revoke(&sid, exp);
    }
    Ok(())
}

/// Signs a session out for good: stored first (so a restart and the other replicas know),
/// then refused at once here.
pub async fn revoke(
    db: &Db,
    keys: &SessionKeys,
    claims: &SessionClaims,
) -> Result<(), sqlx::Error> {
    revocations::store(db, &claims.sid, claims.exp).await?;
    keys.revoke(&claims.sid, claims.exp);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_cookies_round_trip_and_reject_tampering() {
        let keys = SessionKeys::from_secret("secret", Duration::from_secs(60));
        let actor = Actor::user("carla@example.com", "Carla Controller", "controller");
        let value = keys.sign(&keys.claims_for(&actor));
        assert_eq!(
            keys.verify_value(&value).map(|c| c.actor()),
            Some(actor.clone())
        );
        let tampered = value.replace("controller", "superuser");
        assert_ne!(tampered, value);
        assert!(keys.verify_value(&tampered).is_none());
        let other = SessionKeys::from_secret("other", Duration::from_secs(60));
        assert!(other.verify_value(&value).is_none());
        let mut expired = keys.claims_for(&actor);
        expired.exp = OffsetDateTime::now_utc().unix_timestamp() - 1;
        assert!(keys.verify_value(&keys.sign(&expired)).is_none());
        let (token, exp) = keys.token_for(&actor);
        assert!(exp > OffsetDateTime::now_utc().unix_timestamp());
        assert!(token.bytes().all(|b| b.is_ascii_graphic()), "{token}");
        assert_eq!(
            keys.verify_token(&token).map(|c| c.actor()),
            Some(actor.clone())
        );
        assert!(other.verify_token(&token).is_none());
        let header = format!("a=b; {}", keys.set_cookie(&actor).encoded());
        assert_eq!(
            keys.verify_header(&header).map(|c| c.email),
            Some("carla@example.com".to_owned())
        );
    }

    #[test]
    fn a_revoked_session_is_refused_and_others_are_not() {
        let keys = SessionKeys::from_secret("secret", Duration::from_secs(60)).secure(true);
        let actor = Actor::user("carla@example.com", "Carla Controller", "controller");
        let (one, two) = (keys.claims_for(&actor), keys.claims_for(&actor));
        assert_ne!(one.sid, two.sid);
        let (v1, v2) = (keys.sign(&one), keys.sign(&two));
        keys.clone().revoke(&one.sid, one.exp);
        assert!(keys.verify_value(&v1).is_none());
        assert!(keys.verify_value(&v2).is_some());
        assert_eq!(keys.set_cookie(&actor).secure(), Some(true));
    }
}
