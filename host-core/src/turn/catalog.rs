//! The catalog mode as the step loop's value: what a step offers the model
//! ([`StepCatalog::project`]) and how one of its calls runs ([`StepCatalog::call`]), so the
//! loop never asks "direct or meta?" itself.

use super::dispatch::{prepare, Dispatched};
use super::meta::{meta_projection, prepare_meta, MetaInvoke};
use super::platform::TurnUi;
use crate::capability::Effect;
use crate::projection::{project, Projection};
use crate::registry::{InvokeRequest, Surface};
use dpas_protocol::catalog::SURFACE_ACT;
use dpas_protocol::tool::CatalogMode;
use dpas_protocol::PendingToolCall;

/// A turn's catalog mode, as the step loop uses it.
#[derive(Clone, Copy)]
pub(crate) struct StepCatalog(pub CatalogMode);

/// One of a step's calls, resolved: the invocation to run (or the call's answer when it
/// needs none), and what the loop needs after it: whether it moves the surface (then the loop
/// settles) and the effect it acts with (the route and reconcile rules).
pub(crate) struct Call {
    pub(crate) invoke: Result<InvokeRequest, Dispatched>,
    pub(crate) moves_surface: bool,
    pub(crate) effect: Option<Effect>,
}

impl StepCatalog {
    /// Direct: the live surface projected with the step's scope. Meta: the three constant
    /// `surface_*` tools.
    pub(crate) fn project(self, surface: &Surface, scope: &[String]) -> Projection {
        match self.0 {
            CatalogMode::Direct => project(surface, scope),
            CatalogMode::Meta => meta_projection(surface),
        }
    }

    /// How one of the step's calls runs. Direct: [`prepare`]'s resolution through a
    /// projection taken now; what the call moves and its effect are read from the step's
    /// `projection`. Meta: [`dispatch_meta`]'s; `surface_act` moves the surface. Synchronous:
    /// the loop awaits one invocation future whatever the mode, in its own body.
    ///
    /// [`prepare`]: super::dispatch::prepare
    /// [`dispatch_meta`]: super::meta::dispatch_meta
    pub(crate) fn call(
        self,
        surface: &Surface,
        scope: &[String],
        projection: &Projection,
        call: &PendingToolCall,
        ui: &dyn TurnUi,
    ) -> Call {
        match self.0 {
            CatalogMode::Direct => Call {
                invoke: prepare(surface, scope, call, ui),
                moves_surface: projection.moves_surface(&call.wire_name),
                effect: projection.binding(&call.wire_name).map(|b| b.effect),
            },
            CatalogMode::Meta => {
                let (invoke, effect) = match prepare_meta(surface, scope, call, ui) {
                    Ok(MetaInvoke { request, acted }) => (Ok(request), acted),
                    Err(answered) => (Err(answered), None),
                };
                Call {
                    invoke,
                    moves_surface: call.wire_name == SURFACE_ACT,
                    effect,
                }
            }
        }
    }
}
