//! Shared helpers for the integration tests: locating `../shared/` and reading traces.
