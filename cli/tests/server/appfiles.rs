//! Capabilities from a file, executed over HTTP by a real backend the test starts on
//! 127.0.0.1: the governed runtime's pipeline in front of it (validation, policies,
//! approvals), what the backend receives, and how each of its failures reaches the caller.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use dpas_engine::{ChatConfig, ModelSet};
use dpas_model::scripted::{Script, ScriptedProvider};
use dpas_protocol::ndjson::decode_all;
use dpas_protocol::Frame;
use host_server::appfiles::capabilities::{CapabilityFile, Format};
use host_server::appfiles::{load_routes, ActorSigner};
use host_server::doors;
use host_server::{Actor, CallSurface, Correlation};
use serde_json::{json, Value};

use crate::cli::{clean_command, Child};
use crate::common::{start_with, start_with_routes, TestServer, SECRET};

/// One request as the backend received it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

#[derive(Default)]
struct Backend {
    seen: Mutex<Vec<Seen>>,
    hits: Mutex<HashMap<String, u32>>,
}

impl Backend {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    fn seen_at(&self, path: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }
}

/// The app's backend: each path answers one way.
async fn backend(req: HttpRequest, body: web::Bytes, state: web::Data<Backend>) -> HttpResponse {
    let path = req
        .uri()
        .path_and_query()
        .map_or("", |p| p.as_str())
        .to_owned();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body_text = String::from_utf8_lossy(&body).into_owned();
    state.seen.lock().unwrap().push(Seen {
        method: req.method().to_string(),
        path: path.clone(),
        headers,
        body: body_text,
    });
    let hits = {
        let mut hits = state.hits.lock().unwrap();
        let n = hits.entry(path.clone()).or_default();
        *n += 1;
        *n
    };
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match path.as_str() {
        "/todos/add" => HttpResponse::Ok().json(json!({"id": 7, "title": input["title"]})),
        "/todos/list" => HttpResponse::Ok().json(json!({"todos": [{"id": 7, "title": "milk"}]})),
        "/todos/clear" => HttpResponse::Ok().json(json!({"deleted": 3})),
        "/refuse" => HttpResponse::UnprocessableEntity()
            .json(json!({"message": "That todo\u{7} is\n\tlocked.\u{202E}"})),
        "/refuse-plain" => HttpResponse::Conflict()
            .content_type("text/plain")
            .body("Already done"),
        "/refuse-html" => HttpResponse::NotFound()
            .content_type("text/html")
            .body("<h1>Not Found</h1>"),
        "/boom" => HttpResponse::InternalServerError().body("stack trace with secrets"),
        "/slow" => {
            actix_web::rt::time::sleep(Duration::from_secs(5)).await;
            HttpResponse::Ok().json(json!({"late": true}))
        }
        "/text" => HttpResponse::Ok()
            .content_type("text/html")
            .body("<p>hi</p>"),
        "/huge" => {
            // 2 MiB in chunks, with no Content-Length: the cap must cut it while reading.
            let chunks =
                (0..64).map(|_| Ok::<_, actix_web::Error>(web::Bytes::from(vec![b'7'; 32 * 1024])));
            HttpResponse::Ok()
                .content_type("application/json")
                .streaming(futures_util::stream::iter(chunks))
        }
        "/huge-declared" => HttpResponse::Ok()
            .content_type("application/json")
            .body(vec![b'7'; 2 * 1024 * 1024]),
        "/wrong-shape" => HttpResponse::Ok().json(json!({"todos": "not a list"})),
        "/empty" => HttpResponse::NoContent().finish(),
        "/redirect" => HttpResponse::Found()
            .insert_header(("location", "/todos/list"))
            .finish(),
        p if p.starts_with("/flaky/") && hits <= 2 => HttpResponse::ServiceUnavailable().finish(),
        p if p.starts_with("/flaky/") => HttpResponse::Ok().json(json!({"attempt": hits})),
        p if p.starts_with("/todos/") => HttpResponse::Ok().json(json!({"path": p})),
        _ => HttpResponse::NotFound().finish(),
    }
}

/// Starts the backend on an ephemeral port; its base URL and what it saw.
fn start_backend() -> (String, Arc<Backend>) {
    let state = web::Data::new(Backend::default());
    let seen = state.clone().into_inner();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .default_service(web::to(backend))
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    actix_web::rt::spawn(server);
    (format!("http://{addr}"), seen)
}

/// A port nothing listens on.
fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn cap(id: &str, effect: &str, url: &str, extra: Value) -> Value {
    let mut c = json!({
        "id": id,
        "description": format!("The test's {id}."),
        "sideEffect": effect,
        "risk": "low",
        "tags": ["todos"],
        "expose": ["aiSdk", "mcp", "direct"],
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "http": {"url": url, "timeoutMs": 3000}
    });
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn test_file(base: &str) -> CapabilityFile {
    let title = json!({"type": "object", "required": ["title"], "properties": {"title": {"type": "string", "minLength": 1}}, "additionalProperties": false});
    let by_id = json!({"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}, "additionalProperties": false});
    let u = |p: &str| format!("{base}{p}");
    let file = json!({
        "capabilities": [
            cap("add-todo", "write", &u("/todos/add"), json!({"inputSchema": title})),
            cap("list-todos", "read", &u("/todos/list"), json!({"outputSchema": {"type": "object", "required": ["todos"], "properties": {"todos": {"type": "array"}}}})),
            cap("clear-todos", "destructive", &u("/todos/clear"), json!({})),
            cap("get-todo", "read", &u("/todos/{id}"), json!({"inputSchema": by_id, "http": {"method": "GET", "url": u("/todos/{id}")}})),
            cap("refuse", "read", &u("/refuse"), json!({})),
            cap("refuse-plain", "read", &u("/refuse-plain"), json!({})),
            cap("refuse-html", "read", &u("/refuse-html"), json!({})),
            cap("boom", "read", &u("/boom"), json!({})),
            cap("slow", "read", &u("/slow"), json!({"http": {"url": u("/slow"), "timeoutMs": 300}})),
            cap("text", "read", &u("/text"), json!({})),
            cap("huge", "read", &u("/huge"), json!({})),
            cap("huge-declared", "read", &u("/huge-declared"), json!({})),
            cap("wrong-shape", "read", &u("/wrong-shape"), json!({"outputSchema": {"type": "object", "properties": {"todos": {"type": "array"}}}})),
            cap("empty", "write", &u("/empty"), json!({})),
            cap("redirect", "read", &u("/redirect"), json!({})),
            cap("unreachable", "read", &format!("{}/x", closed_port_url()), json!({})),
            cap("flaky-idempotent", "write", &u("/flaky/a"), json!({"idempotent": true})),
            cap("flaky-once", "write", &u("/flaky/b"), json!({})),
            cap("unreachable-idempotent", "read", &format!("{}/x", closed_port_url()), json!({"idempotent": true})),
            cap("mcp-only", "read", &u("/todos/list"), json!({"expose": ["mcp"]})),
            cap("report", "read", &u("/todos/list"), json!({"tags": ["reports"]}))
        ],
        "policies": [
            {"name": "gate-model-clears", "requireApproval": {"ids": ["clear-todos"], "surfaces": ["aiSdk", "mcp"]}},
            {"name": "viewers-read-only", "hideUnlessRole": {"roles": ["editor"], "sideEffects": ["write", "destructive", "external"]}},
            {"name": "no-lists-for-guests", "denyIfRole": {"roles": ["guest"], "ids": ["list-todos"], "message": "Guests see no todos."}}
        ]
    });
    CapabilityFile::parse(
        std::path::Path::new("test.json"),
        &file.to_string(),
        Format::Json,
    )
    .expect("the test file is valid")
}

fn editor() -> Actor {
    Actor::user("eddie@example.com", "Eddie Editor", "editor")
}

fn viewer() -> Actor {
    Actor::user("vera@example.com", "Vera Viewer", "viewer")
}

fn guest() -> Actor {
    Actor::user("gus@example.com", "Gus Guest", "guest")
}

fn cookie(s: &TestServer, actor: &Actor) -> String {
    let c = s.state.sessions.set_cookie(actor);
    format!("{}={}", c.name(), c.value())
}

/// A server with only the file's capabilities (no demo domain), and its backend.
async fn start_app() -> (TestServer, Arc<Backend>) {
    let (base, backend) = start_backend();
    let s = start_with(crate::common::plain_builder().capability_file(test_file(&base))).await;
    (s, backend)
}

#[actix_web::test]
async fn a_file_capability_runs_over_rpc_and_the_backend_learns_who_and_which_call() {
    let (s, backend) = start_app().await;
    let mut audit = s.state.runtime.subscribe(Some("eddie@example.com"));
    let (status, env) = s
        .rpc(&cookie(&s, &editor()), "add-todo", json!({"title": "milk"}))
        .await;
    assert_eq!(status, 200, "{env}");
    // Audited like a built-in capability, under the id the backend is given, without values.
    let entries = audit.drain();
    let kinds: Vec<&str> = entries.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "capability.requested",
            "capability.started",
            "capability.completed",
            "operation.outcome"
        ]
    );
    let completed = &entries[2];
    assert_eq!(completed.capability_id.as_deref(), Some("add-todo"));
    for e in &entries {
        assert!(
            !serde_json::to_string(&e.data).unwrap().contains("milk"),
            "{e:?}"
        );
    }
    assert_eq!(
        env,
        json!({"status": "ok", "data": {"id": 7, "title": "milk"}})
    );

    let seen = backend.seen_at("/todos/add");
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.method, "POST");
    assert_eq!(
        serde_json::from_str::<Value>(&req.body).unwrap(),
        json!({"title": "milk"})
    );
    assert_eq!(req.headers["content-type"], "application/json");
    let invocation = &req.headers["x-dpas-invocation-id"];
    assert_eq!(Some(invocation), completed.execution_id.as_ref());
    // The actor header verifies with the key derived from the session secret, and only so.
    let claims = ActorSigner::from_secret(SECRET.as_bytes())
        .verify(&req.headers["x-dpas-actor"])
        .expect("the actor header verifies");
    assert_eq!(claims["id"], "eddie@example.com");
    assert_eq!(claims["role"], "editor");
    assert_eq!(claims["name"], "Eddie Editor");
    assert_eq!(&claims["invocationId"], invocation);
    assert!(ActorSigner::from_secret(b"some other secret of 32 bytes!!")
        .verify(&req.headers["x-dpas-actor"])
        .is_none());
    assert!(!req.headers.contains_key("authorization"));
    assert!(
        !req.headers.contains_key("cookie"),
        "the session cookie stays with us"
    );

    // A URL placeholder is filled from the input, percent-encoded; GET sends no body.
    let (status, env) = s
        .rpc(
            &cookie(&s, &editor()),
            "get-todo",
            json!({"id": "a b/../c"}),
        )
        .await;
    assert_eq!(status, 200, "{env}");
    assert_eq!(env["data"]["path"], "/todos/a%20b%2F..%2Fc");
    let get = backend.seen_at("/todos/a%20b%2F..%2Fc");
    assert_eq!((get[0].method.as_str(), get[0].body.as_str()), ("GET", ""));

    // A 2xx with no body is a null output.
    let (status, env) = s.rpc(&cookie(&s, &editor()), "empty", json!({})).await;
    assert_eq!((status, env), (200, json!({"status": "ok", "data": null})));
}

#[actix_web::test]
async fn invalid_input_is_refused_before_any_backend_call() {
    let (s, backend) = start_app().await;
    let c = cookie(&s, &editor());
    for input in [
        json!({}),
        json!({"title": ""}),
        json!({"title": 3}),
        json!({"title": "x", "extra": 1}),
    ] {
        let (status, env) = s.rpc(&c, "add-todo", input.clone()).await;
        assert_eq!(status, 400, "{input}: {env}");
        assert_eq!(env["error"]["code"], "INPUT_INVALID");
    }
    // A placeholder value that would change the path is refused too.
    let (status, env) = s.rpc(&c, "get-todo", json!({"id": ".."})).await;
    assert_eq!(
        (status, &env["error"]["code"]),
        (400, &json!("INPUT_INVALID")),
        "{env}"
    );
    assert!(backend.seen().is_empty(), "{:?}", backend.seen());
}

#[actix_web::test]
async fn every_backend_failure_is_a_typed_envelope_within_the_timeout() {
    let (s, _backend) = start_app().await;
    let c = cookie(&s, &editor());
    let cases: [(&str, u16, &str, &str); 12] = [
        ("refuse", 409, "EXECUTION_FAILED", "That todo is locked."),
        ("refuse-plain", 409, "EXECUTION_FAILED", "Already done"),
        ("refuse-html", 409, "EXECUTION_FAILED", "The app's backend refused the call (HTTP 404)."),
        ("boom", 409, "EXECUTION_FAILED", "The app's backend failed (HTTP 500)."),
        ("text", 409, "EXECUTION_FAILED", "The app's backend answered something other than JSON."),
        ("huge", 409, "EXECUTION_FAILED", "The app's backend answered more than 1048576 bytes."),
        ("huge-declared", 409, "EXECUTION_FAILED", "The app's backend answered more than 1048576 bytes."),
        ("wrong-shape", 409, "EXECUTION_FAILED", "The app's backend answered a result that does not match the capability's outputSchema."),
        ("redirect", 409, "EXECUTION_FAILED", "The app's backend answered HTTP 302, which is not a result."),
        ("unreachable", 409, "EXECUTION_FAILED", "The app's backend could not be reached."),
        ("unreachable-idempotent", 409, "EXECUTION_FAILED", "The app's backend could not be reached."),
        ("slow", 504, "TIMEOUT", "The operation timed out."),
    ];
    for (id, status, code, message) in cases {
        let began = Instant::now();
        let (got, env) = s.rpc(&c, id, json!({})).await;
        assert_eq!(got, status, "{id}: {env}");
        assert_eq!(env["status"], "error", "{id}: {env}");
        assert_eq!(env["error"]["code"], code, "{id}: {env}");
        assert_eq!(env["error"]["message"], message, "{id}: {env}");
        assert!(
            began.elapsed() < Duration::from_secs(3),
            "{id} took {:?}",
            began.elapsed()
        );
    }
}

#[actix_web::test]
async fn only_idempotent_capabilities_are_retried_with_the_same_invocation_id() {
    let (s, backend) = start_app().await;
    let c = cookie(&s, &editor());
    let (status, env) = s.rpc(&c, "flaky-idempotent", json!({})).await;
    assert_eq!(
        (status, &env["data"]),
        (200, &json!({"attempt": 3})),
        "{env}"
    );
    let tries = backend.seen_at("/flaky/a");
    assert_eq!(tries.len(), 3);
    let ids: Vec<&str> = tries
        .iter()
        .map(|t| t.headers["x-dpas-invocation-id"].as_str())
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");

    let (status, env) = s.rpc(&c, "flaky-once", json!({})).await;
    assert_eq!(status, 409, "{env}");
    assert_eq!(
        env["error"]["message"],
        "The app's backend failed (HTTP 503)."
    );
    assert_eq!(
        backend.seen_at("/flaky/b").len(),
        1,
        "not idempotent: never retried"
    );
}

#[actix_web::test]
async fn a_gated_capability_waits_for_approval_then_runs_exactly_once() {
    let (s, backend) = start_app().await;
    let eddie = editor();
    let c = cookie(&s, &eddie);
    // The app's own call (direct) is not gated; the model's (aiSdk) is.
    let env = s
        .state
        .runtime
        .invoke(
            &eddie,
            CallSurface::Model,
            "clear-todos",
            json!({}),
            Correlation::default(),
        )
        .await;
    assert_eq!(env["status"], "approval-required", "{env}");
    assert_eq!(
        env["message"],
        "Awaiting approval: clear-todos was initiated from a model loop."
    );
    assert!(backend.seen_at("/todos/clear").is_empty());
    let approval = env["approvalId"].as_str().unwrap();
    let card = s.get(&format!("/api/approvals/{approval}"), Some(&c)).await;
    assert_eq!(card.body["capabilityId"], "clear-todos");
    assert!(
        card.body.get("target").is_none(),
        "a file capability has no target snapshot"
    );

    let decided = s
        .post(
            &format!("/api/approvals/{approval}"),
            Some(&c),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(decided.status, 200, "{}", decided.body);
    assert_eq!(
        decided.body["resolution"],
        json!({"status": "completed", "output": {"deleted": 3}})
    );
    assert_eq!(
        decided.body["receipt"]["text"],
        "You approved clear-todos, and it completed."
    );
    let runs = backend.seen_at("/todos/clear");
    assert_eq!(runs.len(), 1);
    let claims = ActorSigner::from_secret(SECRET.as_bytes())
        .verify(&runs[0].headers["x-dpas-actor"])
        .unwrap();
    assert_eq!(claims["id"], "eddie@example.com", "the requester acts");

    let again = s
        .post(
            &format!("/api/approvals/{approval}"),
            Some(&c),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(backend.seen_at("/todos/clear").len(), 1, "ran exactly once");
}

#[actix_web::test]
async fn role_policies_hide_and_deny_as_the_file_says() {
    let (s, backend) = start_app().await;
    let ids = |actor: &Actor, surface| {
        s.state
            .runtime
            .discover(actor, surface, None)
            .into_iter()
            .map(|c| c.id)
            .collect::<Vec<_>>()
    };
    let eddie = ids(&editor(), CallSurface::Model);
    assert!(eddie.contains(&"add-todo".to_owned()) && eddie.contains(&"clear-todos".to_owned()));
    let vera = ids(&viewer(), CallSurface::Model);
    assert!(vera.contains(&"list-todos".to_owned()));
    for hidden in ["add-todo", "clear-todos", "flaky-once", "empty"] {
        assert!(!vera.contains(&hidden.to_owned()), "{hidden} in {vera:?}");
    }
    // Exposure per surface: an MCP-only capability is not on the model's or the app's surface.
    assert!(!eddie.contains(&"mcp-only".to_owned()));
    assert!(ids(&editor(), CallSurface::Mcp).contains(&"mcp-only".to_owned()));
    let (status, _) = s.rpc(&cookie(&s, &editor()), "mcp-only", json!({})).await;
    assert_eq!(status, 404);

    // A hidden write looks like nothing at all.
    let (status, env) = s
        .rpc(&cookie(&s, &viewer()), "add-todo", json!({"title": "x"}))
        .await;
    assert_eq!(
        (status, &env["error"]["code"]),
        (404, &json!("CAPABILITY_NOT_FOUND"))
    );
    // A denied read is refused with the file's message, and stays visible.
    let (status, env) = s.rpc(&cookie(&s, &guest()), "list-todos", json!({})).await;
    assert_eq!(
        (status, &env["error"]["code"]),
        (403, &json!("POLICY_DENIED"))
    );
    assert_eq!(env["error"]["message"], "Guests see no todos.");
    assert!(ids(&guest(), CallSurface::Model).contains(&"list-todos".to_owned()));
    let (status, _) = s.rpc(&cookie(&s, &viewer()), "list-todos", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(backend.seen_at("/todos/add").len(), 0);
    assert_eq!(backend.seen_at("/todos/list").len(), 1);
}

/// A step of a new turn each call (the same ids again would be the same step, answered from
/// its record).
fn step(pathname: &str, text: &str) -> Value {
    static TURNS: AtomicUsize = AtomicUsize::new(1);
    let turn = TURNS.fetch_add(1, Ordering::Relaxed);
    json!({
        "protocolVersion": 2,
        "conversationId": "cnv_todos",
        "turnId": format!("trn_{turn}"),
        "stepIndex": 0,
        "pathname": pathname,
        "messages": [{"role": "user", "content": text}],
        "catalog": {"mode": "direct", "frontendTools": []}
    })
}

async fn chat(s: &TestServer, actor: &Actor, body: &Value) -> Vec<Frame> {
    let resp = s
        .http
        .post(s.url("/agent/chat"))
        .header("content-type", "application/json")
        .header("cookie", cookie(s, actor))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (frames, end) = decode_all(&resp.bytes().await.unwrap());
    assert!(end.is_ok());
    frames
}

#[actix_web::test]
async fn a_model_step_calls_a_file_capability_by_its_domain_wire_name_within_the_routes_scope() {
    let (base, backend) = start_backend();
    let script = Script::from_json(
        br#"{"turns": [
            {"when": {"lastUserContains": "report", "offered": "domain_report"}, "text": ["report offered"]},
            {"when": {"lastUserContains": "report"}, "text": ["no report here"]},
            {"when": {"lacksResult": "domain_add-todo"}, "toolCalls": [{"name": "domain_add-todo", "input": {"title": "milk"}}]},
            {"when": {}, "text": ["Added."]}
        ]}"#,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let routes = dir.path().join("routes.json");
    std::fs::write(&routes, r#"{"/todos": ["todos"], "/reports": ["reports"]}"#).unwrap();
    let chat_config = ChatConfig {
        models: ModelSet::new(vec![ScriptedProvider::from_script(script).into_arc()]),
        floors: Arc::new(load_routes(&routes).unwrap()),
        app_prompt: Arc::from("You help with todos."),
        model_timeout: Duration::from_secs(45),
    };
    let s = start_with_routes(
        crate::common::plain_builder().capability_file(test_file(&base)),
        doors::mount(chat_config),
    )
    .await;

    let frames = chat(&s, &editor(), &step("/todos", "add milk")).await;
    let result = frames
        .iter()
        .find_map(|f| match f {
            Frame::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .expect("a tool result");
    assert_eq!(result.wire_name, "domain_add-todo");
    assert!(result.ok);
    assert_eq!(
        result.result,
        json!({"status": "ok", "data": {"id": 7, "title": "milk"}})
    );
    let text: String = frames
        .iter()
        .filter_map(|f| match f {
            Frame::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Added.");
    let seen = backend.seen_at("/todos/add");
    assert_eq!(seen.len(), 1);
    assert!(seen[0].headers["x-dpas-invocation-id"].starts_with("exe_"));

    // The routes file scopes what the model is offered: `report` is tagged `reports`.
    let text_of = |frames: Vec<Frame>| -> String {
        frames
            .into_iter()
            .filter_map(|f| match f {
                Frame::TextDelta { text } => Some(text),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        text_of(chat(&s, &editor(), &step("/todos", "report?")).await),
        "no report here"
    );
    assert_eq!(
        text_of(chat(&s, &editor(), &step("/reports", "report?")).await),
        "report offered"
    );
    assert_eq!(
        text_of(chat(&s, &editor(), &step("/elsewhere", "report?")).await),
        "report offered"
    );
}

#[test]
fn toml_and_json_files_are_the_same_capabilities() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../host-server/examples/app");
    let json = CapabilityFile::load(&dir.join("capabilities.json")).unwrap();
    let toml = CapabilityFile::load(&dir.join("capabilities.toml")).unwrap();
    assert_eq!(json, toml);
    assert_eq!(json.capabilities.len(), 4);
    assert_eq!(json.policies.len(), 3);
}

#[test]
fn a_malformed_file_is_refused_with_its_line_and_reason() {
    let p = std::path::Path::new("caps.json");
    let parse = |text: &str, format| {
        CapabilityFile::parse(p, text, format)
            .unwrap_err()
            .to_string()
    };
    let good = |extra: &str| {
        format!(
            "{{\"capabilities\": [{{\n\"id\": \"a\",\n\"description\": \"d\",\n\"sideEffect\": \"read\",\n\"risk\": \"low\",\n\"expose\": [\"direct\"],\n\"inputSchema\": {{\"type\": \"object\"}},\n\"http\": {{\"url\": \"http://127.0.0.1:1/a\"}}{extra}\n}}]}}"
        )
    };
    assert!(CapabilityFile::parse(p, &good(""), Format::Json).is_ok());
    // Syntax: the line of the stray comma.
    let err = parse(&good(",\n"), Format::Json);
    assert!(err.starts_with("caps.json: line 10, column 1:"), "{err}");
    // Shape: an unknown side effect, on its line.
    let err = parse(&good("").replace("\"read\"", "\"writes\""), Format::Json);
    assert!(err.starts_with("caps.json: line 4,"), "{err}");
    assert!(err.contains("unknown variant `writes`"), "{err}");
    // An unknown field is named.
    let err = parse(&good(",\n\"retries\": 3"), Format::Json);
    assert!(
        err.starts_with("caps.json: line 9,") && err.contains("unknown field `retries`"),
        "{err}"
    );
    // What only the schema says: the pointer to it.
    let err = parse(&good("").replace("\"a\"", "\"a b\""), Format::Json);
    assert!(err.contains("at /capabilities/0/id:"), "{err}");
    assert!(err.starts_with("caps.json: line 2, column 7:"), "{err}");
    let err = parse(
        "[[capabilities]]\nid = \"a\"\ndescription = \"\"\nsideEffect = \"read\"\nrisk = \"low\"\nexpose = []\ninputSchema = { type = \"object\" }\nhttp = { url = \"http://h/x\" }\n",
        Format::Toml,
    );
    assert!(
        err.starts_with("caps.json: line 3,") && err.contains("at /capabilities/0/description:"),
        "{err}"
    );
    let err = parse(
        &good("").replace("{\"type\": \"object\"}", "{\"type\": \"array\"}"),
        Format::Json,
    );
    assert!(
        err.contains("at /capabilities/0/inputSchema/type:"),
        "{err}"
    );
    // More capabilities than one step may offer the model.
    let one: Value = serde_json::from_str::<Value>(&good("")).unwrap()["capabilities"][0].clone();
    let many: Vec<Value> = (0..129)
        .map(|i| {
            let mut c = one.clone();
            c["id"] = json!(format!("c{i}"));
            c
        })
        .collect();
    let err = parse(&json!({"capabilities": many}).to_string(), Format::Json);
    assert!(
        err.contains("at /capabilities:") && err.contains("more than 128"),
        "{err}"
    );
    // What neither can say: named by capability or policy.
    let twice = good("").replace("[{", "[{\"id\":\"a\",\"description\":\"d\",\"sideEffect\":\"read\",\"risk\":\"low\",\"expose\":[],\"inputSchema\":{\"type\":\"object\"},\"http\":{\"url\":\"http://h/x\"}},{");
    assert!(parse(&twice, Format::Json).contains("capability \"a\": the id is used twice"));
    let err = parse(&good("").replace("/a\"", "/{missing}\""), Format::Json);
    assert!(
        err.contains("capability \"a\": http.url placeholder {missing}"),
        "{err}"
    );
    let policy = good("").replace(
        "}]}",
        "}], \"policies\": [{\"name\": \"p\", \"requireApproval\": {\"ids\": [\"nope\"]}}]}",
    );
    let err = parse(&policy, Format::Json);
    assert!(err.contains("policy \"p\": names \"nope\""), "{err}");
    let two_rules = good("").replace("}]}", "}], \"policies\": [{\"name\": \"p\", \"requireApproval\": {\"ids\": [\"a\"]}, \"hideUnlessRole\": {\"roles\": [\"x\"]}}]}");
    assert!(parse(&two_rules, Format::Json).contains("at /policies/0:"));
    // TOML errors carry the line too.
    let err = parse(
        "[[capabilities]]\nid = \"a\"\nrisk = = \"low\"\n",
        Format::Toml,
    );
    assert!(err.starts_with("caps.json: line 3,"), "{err}");
    let err = parse(
        "[[capabilities]]\nid = \"a\"\nsideEffect = \"writes\"\n",
        Format::Toml,
    );
    assert!(err.contains("line 3") && err.contains("writes"), "{err}");
}

/// Starts the binary with `args`; the child and its address.
fn start_binary(args: &[&str]) -> (Child, String) {
    use std::io::{BufRead, BufReader};
    let mut cmd = clean_command();
    cmd.args(["--listen", "127.0.0.1:0", "--database", "sqlite::memory:"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = Child(cmd.spawn().expect("spawn host-server"));
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("startup line: {line:?}"))
        .to_owned();
    (child, addr)
}

const JWT_SECRET: &str = "the-todo-backend-signs-with-this-32+-byte-secret";

/// The app's backend mints the user's token (HS256, shared secret).
fn token(sub: &str, role: &str) -> String {
    let exp = time::OffsetDateTime::now_utc().unix_timestamp() + 600;
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &json!({"sub": sub, "name": format!("User {sub}"), "role": role, "exp": exp}),
        &jsonwebtoken::EncodingKey::from_secret(JWT_SECRET.as_bytes()),
    )
    .unwrap()
}

/// Without --demo, with the app's JWTs, the binary serves exactly the file's capabilities,
/// and the backend gets the user's own `Authorization` header as the server received it.
#[actix_web::test]
async fn with_jwt_and_no_demo_the_binary_serves_exactly_the_files_capabilities() {
    let (base, backend) = start_backend();
    let dir = tempfile::tempdir().unwrap();
    let caps = dir.path().join("capabilities.json");
    let file = json!({"capabilities": [
        cap("add-todo", "write", &format!("{base}/todos/add"), json!({"inputSchema": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}})),
        cap("offline", "read", &format!("{}/x", closed_port_url()), json!({}))
    ], "policies": [
        {"name": "viewers-read-only", "hideUnlessRole": {"roles": ["editor"]}}
    ]});
    std::fs::write(&caps, file.to_string()).unwrap();
    let (_child, addr) = start_binary(&[
        "--auth",
        "jwt",
        "--jwt-secret",
        JWT_SECRET,
        "--capabilities",
        caps.to_str().unwrap(),
    ]);
    let http = reqwest::Client::new();
    let rpc = |id: &str, bearer: &str, body: Value| {
        http.post(format!("{addr}/rpc/{id}"))
            .header("authorization", format!("Bearer {bearer}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let editor = token("u-1", "editor");
    let resp = rpc("add-todo", &editor, json!({"title": "milk"}))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.unwrap()["data"]["title"], "milk");
    let seen = &backend.seen_at("/todos/add")[0];
    assert_eq!(seen.headers["authorization"], format!("Bearer {editor}"));
    assert!(seen.headers["x-dpas-invocation-id"].starts_with("exe_"));

    // The file's policies hold for JWT roles.
    let resp = rpc("add-todo", &token("u-2", "viewer"), json!({"title": "x"}))
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(backend.seen_at("/todos/add").len(), 1);
    // An unreachable backend did not stop the start; its call fails when made.
    let resp = rpc("offline", &editor, json!({})).await.unwrap();
    assert_eq!(resp.status(), 409);
    assert_eq!(
        resp.json::<Value>().await.unwrap()["error"]["code"],
        "EXECUTION_FAILED"
    );
    for demo in ["list-invoices", "receivables-summary", "issue-invoice"] {
        let resp = rpc(demo, &editor, json!({})).await.unwrap();
        assert_eq!(resp.status(), 404, "{demo} is the demo's");
    }
    let sign_in = http
        .post(format!("{addr}/api/session"))
        .header("content-type", "application/json")
        .body(r#"{"role":"controller"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(sign_in.status(), 404, "no demo sign-in without --demo");
    // A forged token reaches nothing, the backend least of all.
    let at = editor.len() - 5;
    let swapped = if &editor[at..=at] == "A" { "B" } else { "A" };
    let forged = format!("{}{swapped}{}", &editor[..at], &editor[at + 1..]);
    let resp = rpc("add-todo", &forged, json!({"title": "x"}))
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(backend.seen_at("/todos/add").len(), 1);
}

#[actix_web::test]
async fn our_own_bearer_token_never_reaches_the_backend_outside_jwt_mode() {
    let (s, backend) = start_app().await;
    let resp = s
        .http
        .post(s.url("/rpc/list-todos"))
        .header("cookie", cookie(&s, &editor()))
        .header("authorization", "Bearer our-own-session-token")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let seen = &backend.seen_at("/todos/list")[0];
    assert!(
        !seen.headers.contains_key("authorization"),
        "{:?}",
        seen.headers
    );
    assert!(seen.headers.contains_key("x-dpas-actor"));
}

#[test]
fn the_binary_refuses_to_start_on_a_bad_file_naming_it_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let caps = dir.path().join("caps.toml");
    std::fs::write(
        &caps,
        "[[capabilities]]\nid = \"a\"\nsideEffect = \"writes\"\n",
    )
    .unwrap();
    let prompt = dir.path().join("empty.txt");
    std::fs::write(&prompt, "  \n").unwrap();
    let routes = dir.path().join("routes.json");
    std::fs::write(&routes, "{\"/a\": [1]}").unwrap();
    let missing = dir.path().join("missing.json");
    let cases = [
        (
            "--capabilities",
            &caps,
            "caps.toml: line 3, column 14: unknown variant `writes`",
        ),
        ("--capabilities", &missing, "missing.json: "),
        (
            "--prompt-file",
            &prompt,
            "empty.txt: the prompt file is empty",
        ),
        (
            "--routes",
            &routes,
            "routes.json: route \"/a\": the scope floor must be an array of strings",
        ),
    ];
    for (flag, path, says) in cases {
        let out = clean_command()
            .args([
                "--demo",
                "--listen",
                "127.0.0.1:0",
                "--database",
                "sqlite::memory:",
            ])
            .arg(flag)
            .arg(path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(says), "{flag}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing listened");
    }
}
