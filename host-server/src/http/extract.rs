//! What a handler takes from a request besides its body: the [`Caller`].

use actix_web::{FromRequest, HttpRequest};
use dpas_governance::Actor;
use futures_util::future::LocalBoxFuture;

use crate::auth::actor_of;
use crate::http::error::ApiError;

/// The request's actor, by the server's `--auth` mode, or the 401 that says why not.
/// Extracting it reads headers only, so a handler that takes a `Caller` is refused before
/// its body is read.
#[derive(Debug, Clone)]
pub struct Caller(pub Actor);

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { actor_of(&req).await.map(Caller) })
    }
}
