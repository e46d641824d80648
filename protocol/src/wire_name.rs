//! The wire-name codec (reference-behaviour C1–C8), byte-exact with `@agent-surface/core`
//! 0.22.0: canonical ids such as `view:invoices.pending.setFilters` become provider-safe
//! tool names such as `view_invoices__pending__setFilters`.
//!
//! Lengths are measured in UTF-16 code units, as the reference (JavaScript) measures them.
//! Names are reversed only through a map built while assigning them; [`decode_wire_name`]
//! exists for re-rendering stored threads and refuses every name it cannot reverse exactly.

use crate::text;

/// Longest wire name a provider accepts.
pub const MAX_WIRE_NAME_LEN: usize = 64;
/// Longest canonical id.
pub const MAX_CANONICAL_ID_LEN: usize = 128;
/// Marks a shortened (hashed) name; such names are never decodable.
pub const SHORTENED_MARKER: &str = "_0_";
/// Separates an instance id; such names are never decodable.
pub const INSTANCE_MARKER: &str = "_at_";
/// Highest escalation level of the catalog-wide assignment.
pub const MAX_LEVEL: u8 = 3;

const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.encode_utf16().count()
    }
}

/// The longest prefix of `s` with at most `units` UTF-16 code units (never splits a char).
pub fn utf16_prefix(s: &str, units: usize) -> &str {
    // `get`, not a range index: the indices are char boundaries, and an index would link
    // core's slicing panic with its `Debug` formatting into the browser build.
    if s.is_ascii() {
        return s.get(..units).unwrap_or(s);
    }
    let mut used = 0;
    for (i, c) in s.char_indices() {
        used += c.len_utf16();
        if used > units {
            return s.get(..i).unwrap_or(s);
        }
    }
    s
}

/// The raw encoding (C2): first `:` → `_`, every `.` → `__`, then `_at_<instance>`.
pub fn encode_raw(canonical_id: &str, instance_id: Option<&str>) -> String {
    let mut out = String::with_capacity(canonical_id.len() + 8);
    let mut colon_done = false;
    for c in canonical_id.chars() {
        match c {
            ':' if !colon_done => {
                colon_done = true;
                out.push('_');
            }
            '.' => out.push_str("__"),
            c => out.push(c),
        }
    }
    if let Some(instance) = instance_id {
        out.push_str(INSTANCE_MARKER);
        out.push_str(instance);
    }
    out
}

/// 32-bit FNV-1a over UTF-16 code units with the offset basis XOR `round` (C4).
fn fnv1a_utf16(input: &str, round: u32) -> u32 {
    let mut hash = FNV_OFFSET ^ round;
    for unit in input.encode_utf16() {
        hash ^= u32::from(unit);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

fn push_base36_padded7(out: &mut String, mut value: u32) {
    let mut digits = [b'0'; 7];
    let mut i = digits.len();
    while value > 0 && i > 0 {
        i -= 1;
        let d = (value % 36) as u8;
        digits[i] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
        value /= 36;
    }
    // u32::MAX is 7 base-36 digits, so nothing is lost.
    out.extend(digits.iter().map(|&b| b as char));
}

/// The hash of C4 for `<canonicalId>#<instance>#<level>`, `7 + 2·level` characters.
pub fn wire_hash(canonical_id: &str, instance_id: Option<&str>, level: u8) -> String {
    // The level as a u64, whose `Display` the browser build already has (a `u8`'s is another).
    let seed = format!(
        "{canonical_id}#{}#{}",
        instance_id.unwrap_or(""),
        u64::from(level)
    );
    let len = 7 + 2 * usize::from(level);
    let mut out = String::with_capacity(len + 7);
    let mut round = 0u32;
    while out.len() < len {
        push_base36_padded7(&mut out, fnv1a_utf16(&seed, round));
        round += 1;
    }
    out.truncate(len);
    out
}

/// Encodes one canonical id at an escalation level (C3): the raw form when it is short
/// enough, at level 0 and free of `_`; otherwise a prefix, `_0_` and the hash.
pub fn encode_wire_name(canonical_id: &str, instance_id: Option<&str>, level: u8) -> String {
    let raw = encode_raw(canonical_id, instance_id);
    if level == 0 && utf16_len(&raw) <= MAX_WIRE_NAME_LEN && !text::contains(canonical_id, b'_') {
        return raw;
    }
    let hash = wire_hash(canonical_id, instance_id, level);
    let keep = MAX_WIRE_NAME_LEN - SHORTENED_MARKER.len() - hash.len();
    let mut out = String::with_capacity(MAX_WIRE_NAME_LEN);
    out.push_str(utf16_prefix(&raw, keep));
    out.push_str(SHORTENED_MARKER);
    out.push_str(&hash);
    out
}

/// One `.`-separated segment of a component type: a lowercase letter, then lowercase letters,
/// digits and `-`.
pub fn is_type_segment(seg: &str) -> bool {
    let mut chars = seg.chars();
    matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A capability name: camelCase `[a-z][A-Za-z0-9]*`, no dots.
pub fn is_capability_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z')) && chars.all(|c| c.is_ascii_alphanumeric())
}

/// Whether `id` fits the capability-id grammar (C7): `view:<type segments>.<name>` or a
/// non-empty opaque `domain:<path>`, at most 128 UTF-16 units.
pub fn is_valid_canonical_id(id: &str) -> bool {
    if utf16_len(id) > MAX_CANONICAL_ID_LEN {
        return false;
    }
    if let Some(path) = id.strip_prefix("view:") {
        match text::split_last(path, b'.') {
            Some((component_type, name)) => {
                text::all_pieces(component_type, b'.', is_type_segment) && is_capability_name(name)
            }
            None => false,
        }
    } else if let Some(path) = id.strip_prefix("domain:") {
        !path.is_empty()
    } else {
        false
    }
}

/// Reverses a level-0, instance-free wire name (C7), or `None` ("refuse") for anything it
/// cannot reverse byte-exactly: shortened `_0_` names, `_at_` instance names, unknown planes.
pub fn decode_wire_name(name: &str) -> Option<String> {
    let (plane, rest) = text::split_once(name, b'_')?;
    if plane != "view" && plane != "domain" {
        return None;
    }
    // `__` is a dot, `_` stays, three or more in a row never come from an id. Scanned by
    // hand: `contains`/`replace` with a string pattern link core's substring searcher into
    // the browser build.
    let mut path = String::with_capacity(rest.len());
    let mut run = 0;
    for c in rest.chars().map(Some).chain([None]) {
        if c == Some('_') {
            run += 1;
            continue;
        }
        match run {
            0 => {}
            1 => path.push('_'),
            2 => path.push('.'),
            _ => return None,
        }
        run = 0;
        path.extend(c);
    }
    if !text::all_pieces(&path, b'.', |piece| !piece.is_empty()) {
        return None;
    }
    let id = format!("{plane}:{path}");
    if text::contains(&id, b'_') || !is_valid_canonical_id(&id) {
        return None;
    }
    (encode_wire_name(&id, None, 0) == name).then_some(id)
}

/// Whether the browser executes the tool a wire name names: a view-plane capability
/// (`view_…`, at any shortening level) or one of meta mode's `surface_…` tools. Domain
/// references and the server's own tools run on the server.
pub fn is_browser_tool(wire_name: &str) -> bool {
    wire_name.starts_with("view_") || wire_name.starts_with("surface_")
}

/// One entry of a catalog-wide assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WireKey<'a> {
    pub canonical_id: &'a str,
    pub instance_id: Option<&'a str>,
}

impl<'a> WireKey<'a> {
    pub fn new(canonical_id: &'a str, instance_id: Option<&'a str>) -> Self {
        Self {
            canonical_id,
            instance_id,
        }
    }

    fn sort_key(&self) -> String {
        format!("{}#{}", self.canonical_id, self.instance_id.unwrap_or(""))
    }
}

/// Assigns names for a whole catalog (C6): every set of distinct keys that encode to the
/// same name is re-encoded one level higher, up to level 3; keys still colliding then are
/// sorted and each gets `_0_<rank>` on its level-3 name, trimmed to 64. Identical keys share
/// a name. The result is independent of input order. Returns one name per input entry.
pub fn assign_wire_names(entries: &[WireKey<'_>]) -> Vec<String> {
    assign_with(entries, |key, level| {
        encode_wire_name(key.canonical_id, key.instance_id, level)
    })
}

fn assign_with<F>(entries: &[WireKey<'_>], encode: F) -> Vec<String>
where
    F: Fn(&WireKey<'_>, u8) -> String,
{
    // The distinct keys, sorted, so the result cannot depend on input order and each entry
    // finds its key by binary search (sorted vectors, no hash maps: this runs in the wasm
    // package, where every map type costs bytes).
    let mut order: Vec<usize> = (0..entries.len()).collect();
    crate::sort::sort_indices(&mut order, &mut |a, b| entries[a].cmp(&entries[b]));
    // Each distinct key once, skipped in the loop when it repeats the last (a loop, not
    // `dedup`: the crate's size rule).
    let mut keys: Vec<WireKey<'_>> = Vec::with_capacity(order.len());
    for i in order {
        if keys.last() != Some(&entries[i]) {
            keys.push(entries[i]);
        }
    }
    let mut levels = vec![0u8; keys.len()];
    let mut names: Vec<String> = Vec::with_capacity(keys.len());
    for k in &keys {
        names.push(encode(k, 0));
    }
    loop {
        let groups = colliding_groups(&names);
        if groups.is_empty() {
            break;
        }
        let mut bumped = false;
        for group in &groups {
            for &i in group {
                if levels[i] < MAX_LEVEL {
                    levels[i] += 1;
                    names[i] = encode(&keys[i], levels[i]);
                    bumped = true;
                }
            }
        }
        if !bumped {
            for mut group in groups {
                // Stable by the sort key (`sort_indices` ties by index): the group lists its
                // indexes in ascending order.
                crate::sort::sort_indices(&mut group, &mut |a, b| {
                    keys[a].sort_key().cmp(&keys[b].sort_key())
                });
                for (rank, i) in group.into_iter().enumerate() {
                    let suffix = format!("{SHORTENED_MARKER}{rank}");
                    let base = utf16_prefix(&names[i], MAX_WIRE_NAME_LEN - suffix.len()).to_owned();
                    names[i] = base + &suffix;
                }
            }
            break;
        }
    }
    let mut assigned = Vec::with_capacity(entries.len());
    for k in entries {
        // Every entry is one of the keys, so the search finds it (`Ok`); no panic path.
        if let Ok(i) = keys.binary_search(k) {
            assigned.push(names[i].clone());
        }
    }
    assigned
}

/// Indexes of keys sharing a name, one group per shared name (groups of two or more).
fn colliding_groups(names: &[String]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    crate::sort::sort_indices(&mut order, &mut |a, b| names[a].cmp(&names[b]));
    let mut groups = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && names[order[end]] == names[order[start]] {
            end += 1;
        }
        if end - start > 1 {
            groups.push(order[start..end].to_vec());
        }
        start = end;
    }
    groups
}

#[cfg(test)]
mod tests {

    #[test]
    fn browser_tools_are_the_view_plane_and_the_meta_tools() {
        use super::{encode_wire_name, is_browser_tool};
        use crate::catalog::{SURFACE_ACT, SURFACE_DISCOVER, SURFACE_READ};
        for name in [SURFACE_ACT, SURFACE_DISCOVER, SURFACE_READ] {
            assert!(is_browser_tool(name), "{name}");
        }
        let long = "view:invoices.pending.aVeryLongCapabilityNameThatNeedsShortening";
        for level in 0..=3 {
            let name = encode_wire_name(long, Some("main"), level);
            assert!(is_browser_tool(&name), "{name}");
        }
        let domain = encode_wire_name("domain:update-collection-status", None, 0);
        assert!(!is_browser_tool(&domain), "{domain}");
        assert!(!is_browser_tool("rpc_search"));
    }

    use super::*;

    const LONG_VIEW: &str =
        "view:reporting.very-long-component-name.with-many-segments.and-more.readSomethingLong";

    #[test]
    fn c5_vectors_long_view_id_at_three_levels() {
        assert_eq!(
            encode_wire_name(LONG_VIEW, None, 0),
            "view_reporting__very-long-component-name__with-many-se_0_1jnv05h"
        );
        assert_eq!(encode_wire_name(LONG_VIEW, None, 0).len(), 64);
        assert_eq!(
            encode_wire_name(LONG_VIEW, None, 1),
            "view_reporting__very-long-component-name__with-many-_0_1jdvegi18"
        );
        assert_eq!(
            encode_wire_name(LONG_VIEW, None, 2),
            "view_reporting__very-long-component-name__with-man_0_1j3vsrj192r"
        );
    }

    #[test]
    fn c5_vectors_domain_ids() {
        assert_eq!(
            encode_wire_name(
                "domain:orders.bulk-export-everything-in-the-warehouse-including-archived-records",
                None,
                0
            ),
            "domain_orders__bulk-export-everything-in-the-warehouse_0_067e687"
        );
        let underscored = encode_wire_name("domain:some_underscored.path", None, 0);
        assert_eq!(underscored, "domain_some_underscored__path_0_1er4k37");
        assert_eq!(underscored.len(), 39);
        assert_eq!(encode_wire_name("domain:a.0.b", None, 0), "domain_a__0__b");
        assert_eq!(encode_wire_name("view:at.a.a", None, 0), "view_at__a__a");
        assert_eq!(
            decode_wire_name("domain_a__0__b").as_deref(),
            Some("domain:a.0.b")
        );
        assert_eq!(
            decode_wire_name("view_at__a__a").as_deref(),
            Some("view:at.a.a")
        );
    }

    #[test]
    fn c2_raw_encoding_examples() {
        assert_eq!(
            encode_wire_name("view:invoices.pending.setFilters", None, 0),
            "view_invoices__pending__setFilters"
        );
        assert_eq!(
            encode_wire_name("domain:list-invoices", None, 0),
            "domain_list-invoices"
        );
        assert_eq!(
            encode_wire_name("view:app.navigation.goTo", None, 0),
            "view_app__navigation__goTo"
        );
        assert_eq!(
            encode_raw("view:invoices.pending.readState", Some("row-1")),
            "view_invoices__pending__readState_at_row-1"
        );
        // Only the first colon becomes an underscore.
        assert_eq!(encode_raw("domain:a:b", None), "domain_a:b");
    }

    #[test]
    fn c7_refused_examples() {
        for name in [
            "view_reporting__very-long-component-name__with-many-se_0_1jnv05h",
            "view_invoices__pending__readState_at_row-1",
            "view_x",
            "foo_bar",
            "view_a___b",
            "view_a____b",
            "view_invoices__pending___",
            "view_invoices__pending__",
            "surface_act",
            "domain_",
            "domain_some_underscored__path_0_1er4k37",
            "",
            "view",
            "_view",
        ] {
            assert_eq!(decode_wire_name(name), None, "{name} must be refused");
        }
    }

    #[test]
    fn decodes_the_demo_names() {
        assert_eq!(
            decode_wire_name("view_invoices__pending__setFilters").as_deref(),
            Some("view:invoices.pending.setFilters")
        );
        assert_eq!(
            decode_wire_name("domain_update-collection-status").as_deref(),
            Some("domain:update-collection-status")
        );
        // Grammar: a view id needs a component type and a lower-camel capability name.
        assert_eq!(decode_wire_name("view_Invoices__x"), None);
        assert_eq!(decode_wire_name("view_invoices__Set"), None);
    }

    #[test]
    fn instance_ids_always_shorten_when_id_has_underscore() {
        // An id with its own underscore is shortened even when short (C3).
        let n = encode_wire_name("view:a_b.read", None, 0);
        assert!(n.starts_with("view_a_b__read_0_"));
        assert_eq!(n.len(), "view_a_b__read_0_".len() + 7);
    }

    #[test]
    fn assignment_without_collisions_is_level_zero() {
        let keys = [
            WireKey::new("view:invoices.pending.setFilters", None),
            WireKey::new("domain:list-invoices", None),
        ];
        assert_eq!(
            assign_wire_names(&keys),
            vec!["view_invoices__pending__setFilters", "domain_list-invoices"]
        );
    }

    #[test]
    fn assignment_escalates_every_colliding_entry() {
        // A shortened name can equal another key's raw instance name: `p:q_at` (has `_`, so
        // shortened to `p_q_at_0_<hash>`) and `p:q` at instance `0_<hash>`.
        let hash = wire_hash("p:q_at", None, 0);
        let instance = format!("0_{hash}");
        let k1 = WireKey::new("p:q_at", None);
        let k2 = WireKey::new("p:q", Some(&instance));
        assert_eq!(
            encode_wire_name("p:q_at", None, 0),
            encode_wire_name("p:q", Some(&instance), 0)
        );
        let other = WireKey::new("view:invoices.pending.sort", None);
        let names = assign_wire_names(&[k1, other, k2]);
        assert_eq!(names[0], encode_wire_name("p:q_at", None, 1));
        assert_eq!(names[2], encode_wire_name("p:q", Some(&instance), 1));
        assert_ne!(names[0], names[2]);
        // Entries outside the collision keep their level-0 name.
        assert_eq!(names[1], "view_invoices__pending__sort");
    }

    #[test]
    fn assignment_is_order_independent_and_shares_names_for_identical_keys() {
        let keys = [
            WireKey::new(LONG_VIEW, None),
            WireKey::new("view:invoices.pending.sort", None),
            WireKey::new(LONG_VIEW, None),
            WireKey::new("domain:x", Some("1")),
        ];
        let forward = assign_wire_names(&keys);
        let mut reversed_keys = keys;
        reversed_keys.reverse();
        let mut backward = assign_wire_names(&reversed_keys);
        backward.reverse();
        assert_eq!(forward, backward);
        assert_eq!(forward[0], forward[2]);
    }

    #[test]
    fn rank_suffix_when_collisions_survive_level_three() {
        // Real ids cannot be made to collide at every level, so drive the tie-break with an
        // encoder that always collides: keys are sorted and ranked, names trimmed to 64.
        let long = "x".repeat(70);
        let keys = [
            WireKey::new("b", None),
            WireKey::new("a", Some("2")),
            WireKey::new("a", None),
        ];
        let names = assign_with(&keys, |_, level| format!("{long}{level}"));
        let base = &long[..MAX_WIRE_NAME_LEN - 4];
        assert_eq!(
            names,
            vec![
                format!("{base}_0_2"),
                format!("{base}_0_1"),
                format!("{base}_0_0")
            ]
        );
        let short = assign_with(&keys, |_, _| "same".to_owned());
        assert_eq!(short, vec!["same_0_2", "same_0_1", "same_0_0"]);
    }

    #[test]
    fn level_three_names_fit() {
        let l3 = encode_wire_name(LONG_VIEW, None, 3);
        assert_eq!(l3.len(), 64);
        assert!(l3.contains("_0_"));
        assert_eq!(wire_hash(LONG_VIEW, None, 3).len(), 13);
    }

    #[test]
    fn base36_padding_and_hash_lengths() {
        let mut s = String::new();
        push_base36_padded7(&mut s, 0);
        assert_eq!(s, "0000000");
        s.clear();
        push_base36_padded7(&mut s, u32::MAX);
        assert_eq!(s, "1z141z3");
        for level in 0..=3u8 {
            assert_eq!(
                wire_hash("view:a.b", None, level).len(),
                7 + 2 * level as usize
            );
        }
    }

    #[test]
    fn non_ascii_ids_are_cut_on_char_boundaries() {
        let id = format!("domain:{}", "é".repeat(80));
        let name = encode_wire_name(&id, None, 0);
        assert!(name.contains("_0_"));
        assert!(utf16_len(&name) <= MAX_WIRE_NAME_LEN);
    }
}
