//! Integration tests: real HTTP against the server on an ephemeral port.

mod common;

mod appfiles;
mod approvals;
mod audit;
mod audit_trail;
mod budgets;
mod builder;
mod cancel;
mod capabilities_schema;
mod cli;
mod discovery;
mod hardening;
mod hygiene;
mod identity;
mod ledger;
mod lifecycle;
mod manifest;
mod mcp;
mod metrics;
mod otlp;
mod pg;
mod replicas;
mod sessions;
mod stores;
mod threads;
mod traces;
mod untrusted;
