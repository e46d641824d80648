//! Resources whose unlisted methods answer the contract's 405.

use actix_web::{web, HttpResponse};

/// A route whose unlisted methods answer 405 (the contract's refusal, not actix's 404).
pub fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}

pub async fn method_not_allowed() -> HttpResponse {
    crate::http::error::ApiCode::MethodNotAllowed.response()
}
