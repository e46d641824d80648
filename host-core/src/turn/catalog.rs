//! The catalog mode as the step loop's value: what a step offers the model
//! ([`StepCatalog::project`]). How a call runs stays a branch in `run_calls` (direct
//! `dispatch` or `meta::dispatch_meta`): as an `async` method here it measured +88 B gzip in
//! the browser build, its own state machine nested in the loop's.

use super::meta::meta_projection;
use crate::projection::{project, Projection};
use crate::registry::Surface;
use dpas_protocol::tool::CatalogMode;

/// A turn's catalog mode, as the step loop uses it.
#[derive(Clone, Copy)]
pub(crate) struct StepCatalog(pub CatalogMode);

impl StepCatalog {
    /// Direct: the live surface projected with the step's scope. Meta: the three constant
    /// `surface_*` tools.
    pub(crate) fn project(self, surface: &Surface, scope: &[String]) -> Projection {
        match self.0 {
            CatalogMode::Direct => project(surface, scope),
            CatalogMode::Meta => meta_projection(surface),
        }
    }
}
