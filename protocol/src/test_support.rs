//! Test support (feature `test-support`, for this workspace's own tests): where the reference
//! implementation's recorded traffic is, and skipping the tests that need it in a plain clone.
//!
//! The recorded traffic is not part of the repository. It is found at
//! `$DPAS_CONFORMANCE_DIR` (the reference's `conformance/` folder), else at
//! `$DPAS_SHARED_DIR/conformance`, else at `../shared/conformance` beside the checkout.

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

/// The reference material folder: `$DPAS_SHARED_DIR`, else `shared/` beside the checkout.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("DPAS_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    }
}

/// The reference's recorded traffic: `$DPAS_CONFORMANCE_DIR`, else `conformance/` inside
/// [`shared_dir`].
pub fn conformance_dir() -> PathBuf {
    match std::env::var_os("DPAS_CONFORMANCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => shared_dir().join("conformance"),
    }
}

/// The recorded request/response pairs.
pub fn traces_dir() -> PathBuf {
    conformance_dir().join("reference-traces")
}

/// Whether the recorded traffic is here. Without it (a plain clone) this says once per test
/// binary, on the real stderr (libtest does not capture direct writes), that the replay suite
/// is skipped and why. Under CI (`CI` set) its absence is a failure, since CI always has it.
pub fn traces_available() -> bool {
    static SAID: std::sync::Once = std::sync::Once::new();
    let dir = traces_dir();
    if dir.is_dir() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the reference traces are missing under CI: {} (set DPAS_CONFORMANCE_DIR)",
        dir.display()
    );
    SAID.call_once(|| {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "reference replay suite skipped: no recorded traffic at {} \
             (set DPAS_CONFORMANCE_DIR to the reference's conformance/ folder to run it)",
            dir.display()
        );
    });
    false
}

/// Returns from the calling test when the reference's recorded traffic is absent.
#[macro_export]
macro_rules! require_traces {
    () => {
        if !$crate::test_support::traces_available() {
            return;
        }
    };
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
