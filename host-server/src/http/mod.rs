//! The HTTP API: health, sessions, `/rpc`, approvals, threads and static files. The demo's own
//! endpoints (`dpas_demo::http`) are not mounted here: the binary mounts them with its extra routes.
//! Every endpoint but health (and a sign-in mounted ahead, such as the demo's) needs a valid
//! session (401 otherwise). `POST /api/session` signs nobody in here: 404.
//! Each resource's handlers are a file of their own; [`crate::routes`] mounts them.

pub(crate) mod approvals;
pub(crate) mod audit;
pub mod body;
pub mod error;
mod extract;
pub mod harden;
pub(crate) mod health;
pub mod limits;
mod resource;
pub(crate) mod rpc;
pub(crate) mod sessions;
pub(crate) mod statics;
pub(crate) mod threads;
pub(crate) mod usage;

pub use body::{read_json, read_limited, require_json};
pub use error::ApiError;
pub use extract::Caller;
pub use resource::{method_not_allowed, resource};
pub use sessions::user_json;

pub use crate::auth::actor_of;
