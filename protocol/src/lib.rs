//! The DPAS host protocol: everything the server and the browser loop must agree on.
//!
//! Pure: no I/O, no runtime types. Builds for native targets and `wasm32-unknown-unknown`.

pub mod catalog;
pub mod error;
pub mod frame;
pub mod json;
pub mod limits;
pub mod message;
pub mod ndjson;
pub mod request;
pub mod scope;
pub mod sort;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod text;
pub mod tool;
pub mod usage;
pub mod vocab;
pub mod wire_name;

pub use error::{tool_results, HostError, HostErrorCode, LimitPlane, Retry};
pub use frame::{
    DomainToolInfo, ErrorBody, Executor, Frame, InspectorFrame, Lane, PendingToolCall, StepFinish,
    StepStart, ToolCallFrame, ToolResultFrame,
};
pub use message::{ContentPart, MessageContent, Role, WireModelMessage};
#[cfg(any(feature = "serde-json-value", feature = "test-support", test))]
pub use ndjson::{encode_frame, encode_frame_into};
pub use ndjson::{FrameDecoder, TrailingFragment};
#[cfg(feature = "server")]
pub use request::{decode_request, decode_request_value, ChatStepRequest};
pub use request::{CatalogV2, ProtocolVersion, StepRequestV1, StepRequestV2};
pub use scope::{resolve_scope, RouteFloors};
#[cfg(feature = "server")]
pub use tool::RawSchema;
pub use tool::{
    CatalogMode, Confirmation, Plane, Truncated, TruncationReason, WireToolDescriptor,
    WireToolState,
};
pub use usage::{Usage, UsageAccumulator, UsageReport};
