//! One middleware in front of every route: cross-site request refusal (CSRF) and the security
//! headers.
//!
//! - A request that can change state (any method but GET, HEAD, OPTIONS) whose `Origin` is
//!   neither the server's own nor an `--allowed-origin`, or that says `Sec-Fetch-Site:
//!   cross-site`, is 403 `ORIGIN_REFUSED`. Requests without `Origin` (curl, SDK clients) pass:
//!   browsers always send it on such requests.
//! - Such a request that carries a body must say `Content-Type: application/json` (415
//!   `UNSUPPORTED_MEDIA_TYPE` otherwise): a plain form or `text/plain` post, which needs no
//!   CORS preflight, never reaches a handler.
//! - Every response gets `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
//!   `X-Frame-Options: DENY` and a CSP with `frame-ancestors 'none'`; API answers get the
//!   strictest CSP and `Cache-Control: no-store` unless they set their own.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{
    HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_SECURITY_POLICY, CONTENT_TYPE,
    ORIGIN, REFERRER_POLICY, TRANSFER_ENCODING, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{web, ResponseError};
use dpas_protocol::{HostError, HostErrorCode};

use super::error::ApiError;
use crate::app::AppState;
use crate::config::normalise_origin;

/// The app's policy: its own scripts (and wasm), its own styles plus the inline ones its UI
/// libraries inject, its own API, nothing framed, nothing embedded.
pub const APP_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; \
connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
/// API answers are data, never documents.
pub const API_CSP: &str = "default-src 'none'; frame-ancestors 'none'";

const SEC_FETCH_SITE: &str = "sec-fetch-site";

/// Paths whose answers are API data (JSON or NDJSON), not the web app.
pub fn is_api_path(path: &str) -> bool {
    ["/api/", "/rpc/", "/agent/", "/mcp"]
        .iter()
        .any(|p| path.starts_with(p))
        || path == "/api"
        || path == "/rpc"
}

fn refused(code: HostErrorCode) -> ApiError {
    ApiError::Host(HostError::of(code))
}

/// Why a state-changing request is refused, if it is.
fn refusal(req: &ServiceRequest) -> Option<ApiError> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    let headers = req.headers();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match header(ORIGIN.as_str()) {
        Some(origin) => {
            let info = req.connection_info();
            let own = format!("{}://{}", info.scheme(), info.host()).to_ascii_lowercase();
            let allowed = normalise_origin(origin).is_some_and(|o| {
                o == own
                    || req
                        .app_data::<web::Data<AppState>>()
                        .is_some_and(|s| s.config.allowed_origins.contains(&o))
            });
            if !allowed {
                return Some(refused(HostErrorCode::OriginRefused));
            }
        }
        None if header(SEC_FETCH_SITE).is_some_and(|s| s.eq_ignore_ascii_case("cross-site")) => {
            return Some(refused(HostErrorCode::OriginRefused));
        }
        None => {}
    }
    let has_body = headers.contains_key(TRANSFER_ENCODING)
        || header(CONTENT_LENGTH.as_str()).is_some_and(|n| n.trim() != "0");
    let json = header(CONTENT_TYPE.as_str()).is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
    });
    (has_body && !json).then(|| refused(HostErrorCode::UnsupportedMediaType))
}

fn set_default(headers: &mut actix_web::http::header::HeaderMap, name: HeaderName, value: &str) {
    if !headers.contains_key(&name) {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(name, v);
        }
    }
}

/// The middleware (mount with `middleware::from_fn(harden)`).
pub async fn harden(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let api = is_api_path(req.path());
    let mut res = match refusal(&req) {
        Some(err) => req
            .into_response(err.error_response())
            .map_into_right_body(),
        None => next.call(req).await?.map_into_left_body(),
    };
    let headers = res.headers_mut();
    set_default(headers, X_CONTENT_TYPE_OPTIONS, "nosniff");
    set_default(headers, REFERRER_POLICY, "no-referrer");
    set_default(headers, X_FRAME_OPTIONS, "DENY");
    set_default(
        headers,
        CONTENT_SECURITY_POLICY,
        if api { API_CSP } else { APP_CSP },
    );
    if api {
        set_default(headers, CACHE_CONTROL, "no-store");
    }
    Ok(res)
}
