//! Metrics in the Prometheus text format at `GET /metrics` (`metrics` + its Prometheus
//! exporter, rendered inside our own route). Every name and label is written here, once;
//! label values come from fixed sets (route patterns, not raw paths), so cardinality is
//! bounded whatever clients send.

use std::sync::OnceLock;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::HttpResponse;
use dpas_engine::metrics::{
    ACTIVE_STEPS, BUDGET_EXHAUSTED, ERRORS, STEPS, STEP_DURATION, TOKENS, TOOL_CALLS, USAGE_COST,
    USAGE_TOKENS,
};
use dpas_governance::metrics::APPROVALS;
use metrics::{counter, describe_counter, describe_gauge, describe_histogram, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

const HTTP_REQUESTS: &str = "dpas_http_requests_total";
const HTTP_DURATION: &str = "dpas_http_request_duration_seconds";

/// Histogram buckets, in seconds: from a fast API answer to a long model step.
const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process's Prometheus recorder, installed on first use. `None` when the embedder
/// installed another global recorder first (then `/metrics` answers 404).
pub fn prometheus() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let installed = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), BUCKETS)
                .and_then(PrometheusBuilder::install_recorder);
            match installed {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics recorder not installed; GET /metrics is off");
                    None
                }
            }
        })
        .as_ref()
}

fn describe() {
    describe_counter!(
        STEPS,
        "Chat steps run, by how they finished (finishReason)."
    );
    describe_histogram!(
        STEP_DURATION,
        metrics::Unit::Seconds,
        "Chat step durations."
    );
    describe_gauge!(ACTIVE_STEPS, "Chat steps running now.");
    describe_counter!(
        TOOL_CALLS,
        "Tool calls the model made, by plane and outcome."
    );
    describe_counter!(TOKENS, "Model tokens, by kind.");
    describe_counter!(ERRORS, "Errors answered or streamed, by code.");
    describe_counter!(USAGE_TOKENS, "Tokens of model steps, by model and kind.");
    describe_counter!(
        USAGE_COST,
        "What model steps cost by the price table, in billionths of a US dollar, by model."
    );
    describe_counter!(
        BUDGET_EXHAUSTED,
        "Model steps not started because a budget was used up, by scope."
    );
    describe_counter!(APPROVALS, "Approvals requested and decided.");
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests, by method, route pattern and status."
    );
    describe_histogram!(
        HTTP_DURATION,
        metrics::Unit::Seconds,
        "Time to a response's head, by method and route pattern."
    );
}

/// Drains histogram samples now and then (the exporter's upkeep; no listener runs it here).
pub fn run_upkeep() -> Result<(), std::convert::Infallible> {
    if let Some(handle) = prometheus() {
        handle.run_upkeep();
    }
    Ok(())
}

/// `GET /metrics`: the text exposition format.
pub async fn metrics_route() -> HttpResponse {
    match prometheus() {
        Some(handle) => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(handle.render()),
        None => HttpResponse::NotFound().finish(),
    }
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::DELETE => "DELETE",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// Middleware: counts every request by method, route pattern (`/api/threads/{id}`, or
/// `other` for what no route matched: static files, 404s) and status, and times it to the
/// response's head (a streamed step's body is timed by the step's own histogram).
pub async fn http_metrics(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let begun = Instant::now();
    let method = method_label(req.method());
    let res = next.call(req).await;
    let (route, status) = match &res {
        Ok(res) => (
            res.request().match_pattern(),
            res.status().as_u16().to_string(),
        ),
        Err(e) => (
            None,
            e.as_response_error().status_code().as_u16().to_string(),
        ),
    };
    let route = route.unwrap_or_else(|| "other".to_owned());
    histogram!(HTTP_DURATION, "method" => method, "route" => route.clone())
        .record(begun.elapsed().as_secs_f64());
    counter!(HTTP_REQUESTS, "method" => method, "route" => route, "status" => status).increment(1);
    res
}
