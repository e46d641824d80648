//! The DPAS host protocol: everything the server and the browser loop must agree on.
//!
//! Pure: no I/O, no runtime types. Builds for native targets and `wasm32-unknown-unknown`.

pub mod error;

pub use error::{HostError, HostErrorCode, LimitPlane, Retry};
