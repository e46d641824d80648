//! One row per value for the runtime's wire vocabularies: each `wire_enum!` row gives the
//! variant and its wire text, and the macro writes the enum, `ALL`, `as_str`, `parse` and
//! `Display` from it; `error_codes!` rows add the HTTP status and the default message. Serde
//! derives stay on the enums (their `rename_all` must spell the same text: a test checks).

/// An enum whose every value has one wire text: `Variant = "text"` rows.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        $vis enum $name { $( $(#[$vmeta])* $variant ),+ }

        impl $name {
            /// Every value, in table order.
            pub const ALL: [Self; [$(Self::$variant),+].len()] = [$(Self::$variant),+];

            /// The wire text.
            pub const fn as_str(self) -> &'static str {
                match self { $( Self::$variant => $text ),+ }
            }

            /// The value whose wire text is `text`.
            pub fn parse(text: &str) -> Option<Self> {
                match text { $( $text => Some(Self::$variant), )+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// An error-code table: `Variant = "TEXT", status, "default message";` rows.
macro_rules! error_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, $status:literal, $message:expr; )+
        }
    ) => {
        $crate::runtime::vocab::wire_enum! {
            $(#[$meta])*
            $vis enum $name { $( $(#[$vmeta])* $variant = $text ),+ }
        }

        impl $name {
            /// The HTTP status of an answer that carries this code as it is.
            pub const fn http_status(self) -> u16 {
                match self { $( Self::$variant => $status ),+ }
            }

            /// The message a client or model sees when there is no more specific one.
            pub const fn default_message(self) -> &'static str {
                match self { $( Self::$variant => $message ),+ }
            }
        }
    };
}

pub(crate) use {error_codes, wire_enum};

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
