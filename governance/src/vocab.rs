//! One row per value for the runtime's wire vocabularies, written with the protocol crate's
//! macros (the ones the protocol's and the browser core's tables use): a `wire_enum!` row
//! gives the variant and its wire text, and the macro writes the enum, `ALL`, `as_str`,
//! `parse` and `Display` from it; `error_codes!` rows add the HTTP status and the default
//! message. Serde derives stay on the enums (their `rename_all` must spell the same text: a
//! test checks).

pub(crate) use dpas_protocol::{error_codes, wire_enum};

#[cfg(test)]
mod tests {
    use super::super::{ApprovalStatus, CallSurface, CapabilityErrorCode, Risk, SideEffect};

    /// The serde derive and the table spell every value alike, and `parse` inverts `as_str`.
    macro_rules! assert_table {
        ($($ty:ty),+) => {$(
            for v in <$ty>::ALL {
                let text = v.as_str();
                assert_eq!(serde_json::to_value(v).unwrap(), text, "{}", stringify!($ty));
                assert_eq!(<$ty>::parse(text), Some(v));
                assert_eq!(v.to_string(), text);
            }
            assert_eq!(<$ty>::parse("no such value"), None);
        )+};
    }

    #[test]
    fn every_table_is_its_own_inverse_and_matches_serde() {
        assert_table!(CallSurface, SideEffect, Risk, ApprovalStatus);
        for code in CapabilityErrorCode::ALL {
            assert_eq!(CapabilityErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(CapabilityErrorCode::ALL.len(), 23);
        assert_eq!(CallSurface::ALL.len(), 5);
    }

    /// `/rpc`'s statuses, as the contract gives them, now read from the table.
    #[test]
    fn error_codes_carry_the_rpc_status() {
        use CapabilityErrorCode as C;
        let expected = [
            (C::InputInvalid, 400),
            (C::Unauthenticated, 401),
            (C::PolicyDenied, 403),
            (C::Forbidden, 403),
            (C::CapabilityNotFound, 404),
            (C::ApprovalNotFound, 404),
            (C::Timeout, 504),
            (C::InternalError, 500),
            (C::ApprovalPending, 409),
            (C::ApprovalStale, 409),
            (C::ExecutionFailed, 409),
        ];
        for (code, status) in expected {
            assert_eq!(code.http_status(), status, "{code}");
        }
    }
}
