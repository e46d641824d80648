//! OTLP export from the real binary: spans posted with OTLP/HTTP (protobuf) to a receiver
//! this test runs, decoded with the OpenTelemetry protocol's own messages, flushed before the
//! process exits; and nothing posted when the environment names no trace endpoint.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::json;

use crate::cli::clean_command;
use crate::lifecycle::{script, Process};

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Post {
    method: String,
    path: String,
    content_type: String,
    body: web::Bytes,
}

/// A tiny OTLP/HTTP receiver on 127.0.0.1: answers every request 200 and keeps it.
struct Receiver {
    addr: SocketAddr,
    posts: Arc<Mutex<Vec<Post>>>,
    handle: actix_web::dev::ServerHandle,
}

impl Receiver {
    fn start() -> Self {
        let posts = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&posts);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = HttpServer::new(move || {
            let kept = Arc::clone(&kept);
            App::new()
                .app_data(web::PayloadConfig::new(16 << 20))
                .default_service(web::to(move |req: HttpRequest, body: web::Bytes| {
                    let kept = Arc::clone(&kept);
                    async move {
                        kept.lock().expect("lock").push(Post {
                            method: req.method().to_string(),
                            path: req.path().to_owned(),
                            content_type: req
                                .headers()
                                .get("content-type")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned(),
                            body,
                        });
                        // An empty ExportTraceServiceResponse: everything accepted.
                        HttpResponse::Ok()
                            .content_type("application/x-protobuf")
                            .finish()
                    }
                }))
        })
        .workers(1)
        .disable_signals()
        .listen(listener)
        .expect("listen")
        .run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        Self {
            addr,
            posts,
            handle,
        }
    }

    fn posts(&self) -> Vec<Post> {
        self.posts.lock().expect("lock").clone()
    }
}

/// Every span the receiver got, with its resource's `service.name`.
fn exported(posts: &[Post], path: &str) -> Vec<(String, Span)> {
    let mut spans = Vec::new();
    for post in posts {
        assert_eq!(
            (post.method.as_str(), post.path.as_str()),
            ("POST", path),
            "{post:?}"
        );
        assert_eq!(post.content_type, "application/x-protobuf", "{post:?}");
        let request = ExportTraceServiceRequest::decode(post.body.as_ref()).expect("OTLP protobuf");
        for resource_spans in request.resource_spans {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref()?.value.clone())
                .map(|v| match v {
                    AnyValue::StringValue(s) => s,
                    other => panic!("service.name is a string: {other:?}"),
                })
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                spans.extend(scope.spans.into_iter().map(|s| (service.clone(), s)));
            }
        }
    }
    spans
}

/// Runs one scripted step (a capability call, then text) through the binary started with
/// `env`, then stops it with SIGTERM and waits for it to exit 0. Returns its startup line.
async fn one_step_then_sigterm(env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = script(
        dir.path(),
        json!([
            {"toolCalls": [{"name": "domain_receivables-summary", "input": {}}]},
            {"text": ["All done."]}
        ]),
    );
    let mut server = Process::start_with_env(
        &["--demo", "--database", "sqlite::memory:", "--model", &model],
        env,
    );
    let startup = server.startup.clone();
    let cookie = server.sign_in("controller").await;
    let frames = server
        .step(&cookie, "cnv_otlp")
        .await
        .until("step-finish")
        .await;
    assert!(
        frames
            .iter()
            .any(|f| f["type"] == "text-delta" && f["text"] == "All done."),
        "{frames:?}"
    );
    server.sigterm();
    assert!(server.line().await.starts_with("draining: "));
    assert_eq!(server.exit_code().await, Some(0));
    startup
}

/// A 127.0.0.1 address nothing listens on (bound, then closed).
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}", listener.local_addr().expect("addr"))
}

fn named<'a>(spans: &'a [(String, Span)], name: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.name == name)
        .collect()
}

#[actix_web::test]
async fn spans_reach_the_otlp_endpoint_with_their_parent_links_before_the_process_exits() {
    let receiver = Receiver::start();
    let base = format!("http://{}", receiver.addr);
    let startup = one_step_then_sigterm(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &base)]).await;
    assert!(
        startup.contains(&format!(" traces={base}/v1/traces")),
        "{startup}"
    );

    // The process has exited: whatever it exported, it exported before (the flush).
    let spans = exported(&receiver.posts(), "/v1/traces");
    assert!(
        spans.iter().all(|(service, _)| service == "host-server"),
        "{spans:?}"
    );
    let step = named(&spans, "agent.step");
    assert_eq!(step.len(), 1, "{spans:?}");
    let step = step[0];
    assert_eq!(step.trace_id.len(), 16);
    assert_eq!(step.span_id.len(), 8);
    assert!(step.parent_span_id.is_empty(), "the step is a root span");

    let model_calls = named(&spans, "agent.model_call");
    assert_eq!(model_calls.len(), 2, "two model steps: {spans:?}");
    for call in model_calls {
        assert_eq!(call.trace_id, step.trace_id);
        assert_eq!(call.parent_span_id, step.span_id);
        assert_ne!(call.span_id, step.span_id);
    }
    let capability = named(&spans, "agent.capability_call");
    assert_eq!(capability.len(), 1, "{spans:?}");
    assert_eq!(capability[0].trace_id, step.trace_id);
    assert_eq!(capability[0].parent_span_id, step.span_id);
    let executions = named(&spans, "agent.procedure_execution");
    assert_eq!(executions.len(), 1, "{spans:?}");
    assert_eq!(executions[0].parent_span_id, capability[0].span_id);
    receiver.handle.stop(true).await;
}

#[actix_web::test]
async fn the_traces_endpoint_is_used_as_given_and_the_service_named_by_the_environment() {
    let receiver = Receiver::start();
    let endpoint = format!("http://{}/collector/spans", receiver.addr);
    let closed = closed_port();
    let startup = one_step_then_sigterm(&[
        // The signal's own endpoint wins over the base one (which would not answer).
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &closed),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_SERVICE_NAME", "billing-agents"),
    ])
    .await;
    assert!(
        startup.contains(&format!(" traces={endpoint}")),
        "{startup}"
    );
    let spans = exported(&receiver.posts(), "/collector/spans");
    assert_eq!(named(&spans, "agent.step").len(), 1, "{spans:?}");
    assert!(
        spans.iter().all(|(service, _)| service == "billing-agents"),
        "{spans:?}"
    );
    receiver.handle.stop(true).await;
}

#[actix_web::test]
async fn nothing_is_exported_without_a_trace_endpoint_or_with_the_sdk_disabled() {
    let receiver = Receiver::start();
    let base = format!("http://{}", receiver.addr);
    let metrics = format!("{base}/v1/metrics");
    let logs = format!("{base}/v1/logs");
    for env in [
        // Other signals' endpoints name the receiver; none names one for traces.
        vec![
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", metrics.as_str()),
            ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", logs.as_str()),
            ("OTEL_SERVICE_NAME", "billing-agents"),
        ],
        vec![
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", base.as_str()),
        ],
    ] {
        let startup = one_step_then_sigterm(&env).await;
        assert!(!startup.contains("traces="), "{env:?}: {startup}");
        // The process ran a step and exited: anything it would export was sent by then.
        assert!(
            receiver.posts().is_empty(),
            "{env:?}: {:?}",
            receiver.posts()
        );
    }
    receiver.handle.stop(true).await;
}

#[actix_web::test]
async fn a_collector_that_is_down_fails_neither_the_step_nor_the_exit() {
    let closed = closed_port();
    let startup = one_step_then_sigterm(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &closed)]).await;
    assert!(startup.contains(" traces="), "{startup}");
}

#[test]
fn a_trace_endpoint_the_server_cannot_use_fails_the_start_naming_the_variable() {
    for (var, value, says) in [
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "127.0.0.1:4318",
            "OTEL_EXPORTER_OTLP_ENDPOINT=",
        ),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "grpc://127.0.0.1:4317",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
        ),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "http/protobuf"),
    ] {
        let out = clean_command()
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
            .env(var, value)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--demo",
                "--database",
                "sqlite::memory:",
            ])
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={value}: {stderr}");
        assert!(out.stdout.is_empty(), "it never listened");
        assert!(stderr.contains(says), "{var}={value}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
