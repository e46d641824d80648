//! Test support (feature `test-support`, for this workspace's own tests): where the
//! repository's fixtures are (`fixtures/` at the workspace root, see its README).
//!
//! A missing fixture is a failing test, never a skip: the fixtures are part of the checkout.

use std::path::{Path, PathBuf};

use crate::RouteFloors;

/// The reference behaviour's example route table (D2), which the reference traces were
/// recorded against: the fixture of the scope tests. The demo app's own table is
/// host-server's `demo::route_floors`, which serves the same routes.
pub fn reference_route_floors() -> RouteFloors {
    RouteFloors::new(
        "app",
        [
            (
                "/receivables/pending",
                vec!["invoices", "reporting", "collections"],
            ),
            ("/receivables/all", vec!["invoices", "reporting"]),
            ("/receivables/clients", vec!["clients", "invoices"]),
            ("/architecture", vec!["app"]),
        ],
    )
}

/// The repository's fixtures: `fixtures/` at the workspace root.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

/// The reference implementation's recorded request/response pairs
/// (`fixtures/reference-traces/`).
pub fn traces_dir() -> PathBuf {
    fixtures_dir().join("reference-traces")
}

/// `json::Value` from serde_json's (the same value when they are one type, the
/// `serde-json-value` feature on).
#[allow(clippy::useless_conversion)] // the identity with `serde-json-value` on
pub fn from_serde(value: serde_json::Value) -> crate::json::Value {
    value.into()
}

/// serde_json's value of a `json::Value`.
#[allow(clippy::useless_conversion)] // the identity with `serde-json-value` on
pub fn into_serde(value: crate::json::Value) -> serde_json::Value {
    value.into()
}

/// `serde_json::to_value`, as a `json::Value`: what a type's `Serialize` derive writes.
pub fn to_value<T: serde::Serialize>(value: T) -> Result<crate::json::Value, serde_json::Error> {
    serde_json::to_value(value).map(from_serde)
}

/// `serde_json::from_value` from a `json::Value`: what a type's `Deserialize` derive reads.
pub fn from_value<T: serde::de::DeserializeOwned>(
    value: crate::json::Value,
) -> Result<T, serde_json::Error> {
    serde_json::from_value(into_serde(value))
}

/// `serde_json::from_str` into a `json::Value` (serde_json's parser, the oracle's).
pub fn from_str(text: &str) -> crate::json::Value {
    from_serde(serde_json::from_str(text).expect("JSON text"))
}

/// `serde_json::json!`, as a `json::Value`.
#[macro_export]
macro_rules! test_json {
    ($($json:tt)+) => {
        $crate::test_support::from_serde(::serde_json::json!($($json)+))
    };
}
