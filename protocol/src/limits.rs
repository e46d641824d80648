//! Catalog, field and run limits (host-protocol "Limits" and "Run limits", B3/B4, K1/K2).

use crate::error::{HostError, LimitPlane};

pub const MAX_FRONTEND_TOOLS: usize = 128;
pub const MAX_DOMAIN_TOOLS: usize = 128;
pub const MAX_TOTAL_TOOLS: usize = 192;
pub const MAX_MESSAGES: usize = 400;
pub const V1_MAX_FRONTEND_TOOLS: usize = 64;
pub const V1_MAX_MESSAGES: usize = 200;

pub const MAX_ID_LEN: usize = 64;
pub const MAX_STEP_INDEX: u64 = 64;
pub const MAX_PATHNAME_LEN: usize = 512;
pub const MAX_MODEL_ID_LEN: usize = 128;
pub const MAX_SCOPE_TOKENS: usize = 32;
pub const MAX_SCOPE_TOKEN_LEN: usize = 64;
pub const MAX_FRONTEND_STATE: usize = 128;
pub const MAX_DESCRIPTION_LEN: usize = 1000;
pub const MAX_EFFECT_LEN: usize = 64;
pub const MAX_REASON_LEN: usize = 300;

/// Model steps one step-request may run (server).
pub const MAX_MODEL_STEPS_PER_REQUEST: usize = 5;
/// Default inactivity window between model chunks, in seconds (server).
pub const MODEL_TIMEOUT_SECS: u64 = 45;
/// Protocol steps per turn (browser).
pub const MAX_STEPS_PER_TURN: usize = 8;
/// Turn deadline in milliseconds (browser).
pub const TURN_DEADLINE_MS: u64 = 180_000;
/// Identical consecutive failures before the browser stops the turn.
pub const MAX_IDENTICAL_FAILURES: u32 = 3;
/// Consecutive failures of any kind before the browser stops the turn.
pub const MAX_CONSECUTIVE_FAILURES: u32 = 4;

/// Server-side composition limits (E4), first match wins: frontend, then domain, then total.
/// Counts are taken after collision filtering and undecodable removal.
pub fn check_catalog_limits(frontend: usize, domain: usize) -> Result<(), HostError> {
    if frontend > MAX_FRONTEND_TOOLS {
        return Err(HostError::catalog_too_large(
            LimitPlane::Frontend,
            frontend,
            MAX_FRONTEND_TOOLS,
        ));
    }
    if domain > MAX_DOMAIN_TOOLS {
        return Err(HostError::catalog_too_large(
            LimitPlane::Domain,
            domain,
            MAX_DOMAIN_TOOLS,
        ));
    }
    let total = frontend + domain;
    if total > MAX_TOTAL_TOOLS {
        return Err(HostError::catalog_too_large(
            LimitPlane::Total,
            total,
            MAX_TOTAL_TOOLS,
        ));
    }
    Ok(())
}

/// The browser's pre-checks before posting (B10): frontend descriptors, then messages.
/// The total is not pre-checked (the browser does not know the domain half).
pub fn precheck_request(frontend: usize, messages: usize) -> Result<(), HostError> {
    if frontend > MAX_FRONTEND_TOOLS {
        return Err(HostError::catalog_too_large(
            LimitPlane::Frontend,
            frontend,
            MAX_FRONTEND_TOOLS,
        ));
    }
    if messages > MAX_MESSAGES {
        return Err(HostError::catalog_too_large(
            LimitPlane::Messages,
            messages,
            MAX_MESSAGES,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HostErrorCode;

    #[test]
    fn e4_order_and_message() {
        assert!(check_catalog_limits(128, 64).is_ok());
        let e = check_catalog_limits(129, 500).unwrap_err();
        assert_eq!(e.code, HostErrorCode::CatalogTooLarge);
        assert_eq!(
            e.message,
            "The frontend catalog has 129 entries, over the limit of 128. Scope the route to fewer capabilities, or switch the catalog to meta mode."
        );
        assert!(check_catalog_limits(10, 129)
            .unwrap_err()
            .message
            .starts_with("The domain catalog has 129 entries, over the limit of 128."));
        assert!(check_catalog_limits(100, 93)
            .unwrap_err()
            .message
            .starts_with("The total catalog has 193 entries, over the limit of 192."));
        assert!(check_catalog_limits(100, 92).is_ok());
    }

    #[test]
    fn b10_prechecks() {
        assert!(precheck_request(128, 400).is_ok());
        assert!(precheck_request(129, 1)
            .unwrap_err()
            .message
            .starts_with("The frontend catalog has 129"));
        assert!(precheck_request(1, 401)
            .unwrap_err()
            .message
            .starts_with("The messages catalog has 401 entries, over the limit of 400."));
        assert_eq!(
            precheck_request(1, 401).unwrap_err().http_status(),
            Some(413)
        );
    }
}
