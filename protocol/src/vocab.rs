//! One row per value for the wire vocabularies (meilisearch's `make_error_codes!` shape): a
//! [`wire_enum!`](crate::wire_enum) row gives a variant and its wire text, and the macro
//! writes the enum, `ALL`, `as_str`, `parse`, `Display` and its JSON text from it; an
//! [`error_codes!`](crate::error_codes) row adds the HTTP status and the default message.
//! The protocol's tables, the browser core's and the server's are all written with these.
//!
//! Serde derives stay beside the rows (their `rename_all` must spell the same text; the
//! tables' tests check). `parse` walks `ALL` through `as_str` rather than matching on
//! strings: one loop over the text table is smaller in the browser build than a string
//! `match`, which compiles to a comparison per row.

/// An enum whose every value has one wire text: `Variant = "text"` rows.
#[macro_export]
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

            /// The wire texts, in table order.
            const TEXTS: [&'static str; [$(Self::$variant),+].len()] = [$($text),+];

            /// The wire text.
            pub const fn as_str(self) -> &'static str {
                // The rows have no explicit discriminants: a value's is its row's index.
                Self::TEXTS[self as usize]
            }

            /// The value whose wire text is `text`.
            pub fn parse(text: &str) -> ::core::option::Option<Self> {
                Self::ALL.get($crate::vocab::position(&Self::TEXTS, text)).copied()
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::json::WriteJson for $name {
            fn write_json(&self, out: &mut ::std::string::String) {
                $crate::json::write_str(self.as_str(), out);
            }
        }
    };
}

/// Where `text` is in `texts` (`texts.len()` when it is not): the one loop behind every
/// table's `parse`.
#[doc(hidden)]
pub fn position(texts: &[&str], text: &str) -> usize {
    texts.iter().position(|t| *t == text).unwrap_or(texts.len())
}

/// An error-code table: `Variant = "TEXT", status, "default message";` rows. The status is a
/// `u16`, or of the type named after the enum's name (`enum Codes: Option<u16> { … }`, for a
/// table where some codes never answer a request on their own).
#[macro_export]
macro_rules! error_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, $status:expr, $message:expr; )+
        }
    ) => {
        $crate::error_codes! {
            $(#[$meta])*
            $vis enum $name: u16 {
                $( $(#[$vmeta])* $variant = $text, $status, $message; )+
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $status_ty:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, $status:expr, $message:expr; )+
        }
    ) => {
        $crate::wire_enum! {
            $(#[$meta])*
            $vis enum $name { $( $(#[$vmeta])* $variant = $text ),+ }
        }

        impl $name {
            /// The HTTP status of an answer that carries this code as it is.
            pub const fn http_status(self) -> $status_ty {
                match self { $( Self::$variant => $status ),+ }
            }

            /// The message a client or model sees when there is no more specific one.
            pub const fn default_message(self) -> &'static str {
                match self { $( Self::$variant => $message ),+ }
            }
        }
    };
}

#[cfg(test)]
// The macros write `pub` methods (the tables' enums are public); these test enums are not.
#[allow(unreachable_pub)]
mod tests {
    crate::wire_enum! {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Fruit { Apple = "apple", BloodOrange = "blood-orange" }
    }

    crate::error_codes! {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Plain { Gone = "GONE", 410, "It is gone."; }
    }

    crate::error_codes! {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Optional: Option<u16> {
            Answered = "ANSWERED", Some(409), "A conflict.";
            FrameOnly = "FRAME_ONLY", None, "Only in a stream.";
        }
    }

    #[test]
    fn a_row_gives_text_parse_list_and_display() {
        assert_eq!(Fruit::ALL, [Fruit::Apple, Fruit::BloodOrange]);
        assert_eq!(Fruit::BloodOrange.as_str(), "blood-orange");
        assert_eq!(Fruit::parse("blood-orange"), Some(Fruit::BloodOrange));
        assert_eq!(Fruit::parse("Apple"), None);
        assert_eq!(Fruit::parse(""), None);
        assert_eq!(Fruit::Apple.to_string(), "apple");
    }

    #[test]
    fn an_error_row_gives_status_and_message() {
        assert_eq!(Plain::Gone.http_status(), 410);
        assert_eq!(Plain::Gone.default_message(), "It is gone.");
        assert_eq!(Plain::parse("GONE"), Some(Plain::Gone));
        assert_eq!(Optional::Answered.http_status(), Some(409));
        assert_eq!(Optional::FrameOnly.http_status(), None);
        assert_eq!(Optional::FrameOnly.default_message(), "Only in a stream.");
        assert_eq!(Optional::parse("FRAME_ONLY"), Some(Optional::FrameOnly));
    }
}
