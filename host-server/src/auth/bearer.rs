//! The `Authorization` header: the raw credential a request carries, and its bearer token.

use actix_web::http::header::{HeaderMap, AUTHORIZATION};
use dpas_governance::Credential;

/// The `Authorization` header as received, when it is one readable value.
pub(crate) fn raw_authorization(headers: &HeaderMap) -> Option<Credential> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(Credential::new)
}

/// The token of `Authorization: Bearer <token>`; `Err` when the header is there but is not
/// one bearer token.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<Result<&str, ()>> {
    let value = headers.get(AUTHORIZATION)?;
    Some(
        value
            .to_str()
            .ok()
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty() && !token.contains(char::is_whitespace))
            .ok_or(()),
    )
}
