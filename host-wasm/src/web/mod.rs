//! The wasm-bindgen layer (wasm32 only): JS functions wrapped into the core's traits, and the
//! public JS API of `API.md` — `Surface`, `runTurn`, `Conversation`.
//!
//! Types: every exported signature names a type from `types.d.ts` (API.md's declarations,
//! emitted verbatim into the generated `.d.ts`), so no export is typed `any`.

mod conversation;
mod convert;
mod pattern;
mod platform;
mod surface;
mod turn;
mod webmcp;

#[cfg(test)]
mod tests;

pub use conversation::Conversation;
pub use surface::{JsSurface, RegistrationHandle};
pub use turn::run_turn_export;
pub use webmcp::{call_page_tool_export, page_tools};

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = include_str!("types.d.ts");
