//! Identifier grammar of the Agent Surface (agent-surface §3.2) and capability-id parsing.

/// Longest canonical capability id, component type or instance id.
pub const MAX_ID_LENGTH: usize = 128;

/// Instance id used when a component does not name one.
pub const DEFAULT_INSTANCE_ID: &str = "default";

pub use dpas_protocol::tool::Plane;

/// A parsed canonical capability id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapabilityId<'a> {
    /// `view:<componentType>.<name>`.
    View {
        component_type: &'a str,
        name: &'a str,
    },
    /// `domain:<path>`, the path kept opaque.
    Domain { path: &'a str },
}

/// Component type: dot-separated segments, each `[a-z][a-z0-9-]*`.
pub fn is_component_type(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_ID_LENGTH
        && dpas_protocol::text::all_pieces(value, b'.', dpas_protocol::wire_name::is_type_segment)
}

/// Capability name: camelCase `[a-z][A-Za-z0-9]*`, no dots (the protocol's own check).
pub use dpas_protocol::wire_name::is_capability_name;

/// Instance id: letters, digits, `-` and `_`, at most [`MAX_ID_LENGTH`].
pub fn is_instance_id(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_ID_LENGTH
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Domain procedure path: opaque, non-empty, printable, without whitespace.
pub fn is_procedure_path(value: &str) -> bool {
    !value.is_empty() && value.chars().all(|c| !c.is_whitespace() && !c.is_control())
}

/// Parses a canonical capability id; `None` for anything outside the grammar.
pub fn parse_capability_id(id: &str) -> Option<CapabilityId<'_>> {
    if id.len() > MAX_ID_LENGTH {
        return None;
    }
    if let Some(path) = id.strip_prefix("domain:") {
        return is_procedure_path(path).then_some(CapabilityId::Domain { path });
    }
    let rest = id.strip_prefix("view:")?;
    let (component_type, name) = dpas_protocol::text::split_last(rest, b'.')?;
    (is_component_type(component_type) && is_capability_name(name)).then_some(CapabilityId::View {
        component_type,
        name,
    })
}

/// The canonical id of a view capability.
pub fn view_capability_id(component_type: &str, name: &str) -> String {
    format!("view:{component_type}.{name}")
}

/// The canonical id of a domain procedure reference.
pub fn domain_capability_id(path: &str) -> String {
    format!("domain:{path}")
}

/// Whether a component type is inside a scope: equal to a prefix or below it at a dot.
/// An empty scope is unscoped and admits everything.
pub fn in_scope(component_type: &str, scope: &[String]) -> bool {
    scope.is_empty()
        || scope.iter().any(|prefix| {
            component_type == prefix
                || (component_type.starts_with(prefix.as_str())
                    && component_type.as_bytes().get(prefix.len()) == Some(&b'.'))
        })
}

const BASE36: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Lowercase base-36 form of a counter.
pub fn base36(mut value: u64) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(BASE36[(value % 36) as usize]);
        value /= 36;
        if value == 0 {
            break;
        }
    }
    let mut out = String::with_capacity(digits.len());
    for &digit in digits.iter().rev() {
        out.push(char::from(digit));
    }
    out
}

/// A small xorshift generator for the random part of minted ids (not a security token).
#[derive(Debug, Clone)]
pub struct IdRng(u64);

impl IdRng {
    pub fn new(seed: u64) -> Self {
        // Zero is the one state xorshift never leaves, so it is replaced.
        Self(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn chars(&mut self, alphabet: &[u8], count: usize) -> String {
        let mut out = String::with_capacity(count);
        for _ in 0..count {
            out.push(char::from(
                alphabet[(self.next() % alphabet.len() as u64) as usize],
            ));
        }
        out
    }

    /// `n` lowercase base-36 characters.
    pub fn base36(&mut self, count: usize) -> String {
        self.chars(BASE36, count)
    }

    /// `n` base-62 characters.
    pub fn base62(&mut self, count: usize) -> String {
        self.chars(BASE62, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_types_follow_the_grammar() {
        assert!(is_component_type("invoices.pending"));
        assert!(is_component_type("app.navigation"));
        assert!(is_component_type("a1-b.c"));
        assert!(!is_component_type(""));
        assert!(!is_component_type("Invoices.pending"));
        assert!(!is_component_type("invoices..pending"));
        assert!(!is_component_type("invoices_pending"));
        assert!(!is_component_type("1abc"));
        assert!(!is_component_type(&"a".repeat(129)));
    }

    #[test]
    fn capability_names_and_instances_follow_the_grammar() {
        assert!(is_capability_name("setFilters"));
        assert!(is_capability_name("read"));
        assert!(!is_capability_name("SetFilters"));
        assert!(!is_capability_name("set_filters"));
        assert!(!is_capability_name("set.filters"));
        assert!(is_instance_id("row-1_a"));
        assert!(!is_instance_id("row 1"));
        assert!(!is_instance_id(""));
    }

    #[test]
    fn capability_ids_parse_by_plane() {
        assert_eq!(
            parse_capability_id("view:invoices.pending.setFilters"),
            Some(CapabilityId::View {
                component_type: "invoices.pending",
                name: "setFilters"
            })
        );
        assert_eq!(
            parse_capability_id("domain:update-collection-status"),
            Some(CapabilityId::Domain {
                path: "update-collection-status"
            })
        );
        assert_eq!(parse_capability_id("view:nodot"), None);
        assert_eq!(parse_capability_id("view:Bad.type"), None);
        assert_eq!(parse_capability_id("domain:"), None);
        assert_eq!(parse_capability_id("meta:surface.act"), None);
        let long = format!("domain:{}", "a".repeat(122));
        assert_eq!(parse_capability_id(&long), None);
    }

    #[test]
    fn scope_matches_whole_segments_only() {
        let scope = vec!["invoices".to_owned(), "app".to_owned()];
        assert!(in_scope("invoices.pending", &scope));
        assert!(in_scope("app", &scope));
        assert!(!in_scope("invoicesx.pending", &scope));
        assert!(!in_scope("clients.list", &scope));
        assert!(in_scope("clients.list", &[]));
    }

    #[test]
    fn minted_parts_use_their_alphabets() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(36), "10");
        assert_eq!(base36(46_655), "zzz");
        assert_eq!(base36(u64::MAX), "3w5e11264sgsf");
        let mut rng = IdRng::new(7);
        let a = rng.base62(12);
        assert_eq!(a.len(), 12);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, rng.base62(12));
    }
}
