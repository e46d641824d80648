//! Property tests of the wire-name codec (C2–C8).

use dpas_protocol::wire_name::{
    assign_wire_names, decode_wire_name, encode_raw, encode_wire_name, WireKey, MAX_WIRE_NAME_LEN,
};
use proptest::prelude::*;

fn view_id() -> impl Strategy<Value = String> {
    (
        prop::collection::vec("[a-z][a-z0-9-]{0,14}", 1..5),
        "[a-z][A-Za-z0-9]{0,20}",
    )
        .prop_map(|(segments, name)| format!("view:{}.{name}", segments.join(".")))
}

fn domain_id() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-zA-Z0-9-]{1,20}", 1..5)
        .prop_map(|segments| format!("domain:{}", segments.join(".")))
}

fn canonical_id() -> impl Strategy<Value = String> {
    prop_oneof![view_id(), domain_id()]
}

/// Ids that may carry their own underscores (always shortened).
fn any_id() -> impl Strategy<Value = String> {
    prop_oneof![
        canonical_id(),
        prop::collection::vec("[a-z_][a-z0-9_-]{0,20}", 1..4)
            .prop_map(|s| format!("domain:{}", s.join(".")))
    ]
}

fn provider_safe(name: &str) -> bool {
    name.len() <= MAX_WIRE_NAME_LEN
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_decodable_canonical_id_round_trips(id in canonical_id()) {
        let name = encode_wire_name(&id, None, 0);
        // Unshortened names are exactly the raw form (a raw form may itself contain `_0_`,
        // as `domain:0.0` → `domain_0__0` does, and still be decodable).
        if name == encode_raw(&id, None) {
            prop_assert_eq!(decode_wire_name(&name), Some(id));
        } else {
            prop_assert_eq!(decode_wire_name(&name), None);
        }
    }

    #[test]
    fn every_produced_name_is_provider_safe(
        id in any_id(),
        instance in prop::option::of("[a-z0-9-]{1,40}"),
        level in 0u8..=3,
    ) {
        let name = encode_wire_name(&id, instance.as_deref(), level);
        prop_assert!(provider_safe(&name), "{name}");
    }

    #[test]
    fn shortened_and_instance_names_are_refused(
        id in any_id(),
        instance in "[a-z0-9-]{1,20}",
        level in 0u8..=3,
    ) {
        prop_assert_eq!(decode_wire_name(&encode_wire_name(&id, Some(&instance), level)), None);
        let shortened = encode_wire_name(&id, None, level.max(1));
        prop_assert_ne!(&shortened, &encode_raw(&id, None));
        prop_assert_eq!(decode_wire_name(&shortened), None);
    }

    #[test]
    fn catalog_assignment_gives_distinct_keys_distinct_safe_names(
        ids in prop::collection::vec((any_id(), prop::option::of("[a-z0-9]{1,6}")), 1..40),
    ) {
        let keys: Vec<WireKey<'_>> = ids.iter().map(|(id, inst)| WireKey::new(id, inst.as_deref())).collect();
        let names = assign_wire_names(&keys);
        prop_assert_eq!(names.len(), keys.len());
        for (i, a) in keys.iter().enumerate() {
            prop_assert!(provider_safe(&names[i]));
            for (j, b) in keys.iter().enumerate() {
                if a != b {
                    prop_assert_ne!(&names[i], &names[j]);
                } else {
                    prop_assert_eq!(&names[i], &names[j]);
                }
            }
        }
    }

    #[test]
    fn decode_never_panics_and_only_accepts_exact_encodings(name in "\\PC{0,80}") {
        if let Some(id) = decode_wire_name(&name) {
            prop_assert_eq!(encode_wire_name(&id, None, 0), name);
        }
    }
}
