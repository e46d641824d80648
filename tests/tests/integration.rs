//! The cross-crate integration tests, one module per behaviour, in one binary (link time on a
//! small machine; `cli/tests/server/` has the same shape). The fuzz targets are their
//! own binary (`fuzz.rs`, run long by `scripts/fuzz.sh`).

mod chat_isolation;
mod chat_models;
mod chat_prompt;
mod chat_replay;
mod chat_scripted;
mod chat_snapshots;
mod chat_steps;
mod chat_vendors;
mod conformance;
mod hardening;
