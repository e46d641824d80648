//! The catalog mode as the step loop's value: what a step offers the model
//! ([`StepCatalog::project`]) and how one of its calls runs ([`StepCatalog::call`]), so the
//! loop never asks "direct or meta?" itself.

use super::dispatch::{dispatch, Dispatched};
use super::meta::{dispatch_meta, meta_projection, MetaDispatched};
use super::TurnUi;
use crate::capability::Effect;
use crate::projection::{project, Projection};
use crate::registry::Surface;
use dpas_protocol::catalog::SURFACE_ACT;
use dpas_protocol::tool::CatalogMode;
use dpas_protocol::PendingToolCall;
use std::future::Future;

/// A turn's catalog mode, as the step loop uses it.
#[derive(Clone, Copy)]
pub(crate) struct StepCatalog(pub CatalogMode);

/// One of a step's calls, ready to run: the future that runs it (not started), and what the
/// loop needs after it: whether it moves the surface (then the loop settles) and, for a direct
/// call, its effect (the route and reconcile rules; a meta call's comes with its result).
pub(crate) enum Call<D, M> {
    Direct {
        run: D,
        moves_surface: bool,
        effect: Option<Effect>,
    },
    Meta {
        run: M,
        moves_surface: bool,
    },
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

    /// How one of the step's calls runs. Direct: [`dispatch`] through a projection taken
    /// now; what the call moves and its effect are read from the step's `projection`. Meta:
    /// [`dispatch_meta`]; `surface_act` moves the surface. Not an `async fn`: the loop matches
    /// the answer once and awaits the call's own future, where an `async` method (a state
    /// machine of its own nested in the loop's) measured +88 B gzip in the browser build, and
    /// one future over both (`Either` of `Map`s) +328 B.
    pub(crate) fn call<'a>(
        self,
        surface: &'a Surface,
        scope: &'a [String],
        projection: &Projection,
        call: &'a PendingToolCall,
        ui: &'a dyn TurnUi,
    ) -> Call<impl Future<Output = Dispatched> + 'a, impl Future<Output = MetaDispatched> + 'a>
    {
        match self.0 {
            CatalogMode::Direct => Call::Direct {
                run: dispatch(surface, scope, call, ui),
                moves_surface: projection.moves_surface(&call.wire_name),
                effect: projection.binding(&call.wire_name).map(|b| b.effect),
            },
            CatalogMode::Meta => Call::Meta {
                run: dispatch_meta(surface, scope, call, ui),
                moves_surface: call.wire_name == SURFACE_ACT,
            },
        }
    }
}
