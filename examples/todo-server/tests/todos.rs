//! The todo domain on the host, in process: what the model may do alone, what it must ask for,
//! and how bad input is answered.

use actix_web::http::StatusCode;
use actix_web::test::{call_service, init_service, read_body_json, TestRequest};
use dpas_governance::Envelope;
use host_server::{Actor, AppState, CallSurface, Correlation, ServerConfig};
use serde_json::{json, Value};

async fn app() -> AppState {
    let mut config = ServerConfig::for_tests("todo-server-test-secret-0123456789abcdef");
    config.demo = false;
    todo_server::build(config).await.expect("the app builds").0
}

fn sam() -> Actor {
    Actor::user("Sam", "Sam", "member")
}

async fn invoke(state: &AppState, surface: CallSurface, id: &str, input: Value) -> Envelope {
    state
        .runtime
        .invoke_envelope(&sam(), surface, id, input, Correlation::default())
        .await
}

#[actix_web::test]
async fn the_model_asks_before_deleting_and_the_app_does_not() {
    let state = app().await;
    let added = invoke(
        &state,
        CallSurface::Model,
        "add-todo",
        json!({"text": " milk "}),
    )
    .await;
    assert_eq!(
        added,
        Envelope::Ok {
            data: json!({"id": 1, "text": "milk", "done": false})
        }
    );
    let asked = invoke(&state, CallSurface::Model, "delete-todo", json!({"id": 1})).await;
    let Envelope::ApprovalRequired { approval_id, .. } = asked else {
        panic!("a model's delete must wait for approval: {asked:?}")
    };
    let listed = invoke(&state, CallSurface::Model, "list-todos", json!({})).await;
    assert_eq!(listed.to_value()["data"].as_array().map(Vec::len), Some(1));
    let (_, ran) = state
        .runtime
        .decide_and_run(&approval_id, &sam(), true, Correlation::default())
        .await
        .expect("the approval is decided");
    assert_eq!(
        ran,
        Some(Envelope::Ok {
            data: json!({"id": 1, "text": "milk", "done": false})
        })
    );
    // The app's own button is the user acting: no approval.
    invoke(
        &state,
        CallSurface::Direct,
        "add-todo",
        json!({"text": "bread"}),
    )
    .await;
    let direct = invoke(&state, CallSurface::Direct, "delete-todo", json!({"id": 2})).await;
    assert!(direct.is_ok(), "{direct:?}");
}

#[actix_web::test]
async fn the_chat_is_offered_everything_but_the_screens_procedure() {
    let state = app().await;
    let ids = |surface| -> Vec<String> {
        let found = state
            .runtime
            .discover(&sam(), surface, Some(&["todos".to_owned()]));
        found.into_iter().map(|c| c.id).collect()
    };
    assert_eq!(
        ids(CallSurface::Model),
        ["list-todos", "add-todo", "delete-todo"]
    );
    assert_eq!(
        ids(CallSurface::Direct),
        ["list-todos", "add-todo", "complete-todo", "delete-todo"]
    );
}

#[actix_web::test]
async fn sign_in_and_bad_input_get_the_contracts_answers() {
    let state = app().await;
    let chat = host_server::doors::for_app(
        &state.config,
        todo_server::route_floors(),
        todo_server::APP_PROMPT,
    )
    .expect("the scripted model builds");
    let service = init_service(host_server::app_with(
        state.clone(),
        todo_server::routes(chat),
    ))
    .await;
    let post = |path: &str, body: Value| {
        TestRequest::post()
            .uri(path)
            .insert_header(("content-type", "application/json"))
            .set_payload(body.to_string())
    };

    for bad in [
        json!({"name": ""}),
        json!({"name": "x".repeat(41)}),
        json!({"name": 7}),
        json!({"name": "a\u{7}"}),
    ] {
        let reply = call_service(&service, post("/api/sign-in", bad.clone()).to_request()).await;
        assert_eq!(reply.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    let reply = call_service(
        &service,
        post("/api/sign-in", json!({"name": "Sam"})).to_request(),
    )
    .await;
    assert_eq!(reply.status(), StatusCode::OK);
    let set_cookie = reply.headers().get("set-cookie").expect("a session cookie");
    let cookie = set_cookie
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();

    let session = TestRequest::get()
        .uri("/api/session")
        .insert_header(("cookie", cookie.clone()));
    let body: Value = read_body_json(call_service(&service, session.to_request()).await).await;
    assert_eq!(body["user"]["name"], "Sam");
    assert_eq!(body["models"], json!(["scripted"]));

    let rpc = |input: Value| {
        post("/rpc/add-todo", input)
            .insert_header(("cookie", cookie.clone()))
            .to_request()
    };
    let blank = call_service(&service, rpc(json!({"text": "   "}))).await;
    assert_eq!(blank.status(), StatusCode::CONFLICT);
    let body: Value = read_body_json(blank).await;
    assert_eq!(body["error"]["message"], "A todo needs some text.");
    let long = call_service(&service, rpc(json!({"text": "x".repeat(201)}))).await;
    assert_eq!(long.status(), StatusCode::BAD_REQUEST);
    let body: Value = read_body_json(long).await;
    assert_eq!(body["error"]["code"], "INPUT_INVALID");
    // A decision answers with a receipt that names the todo, not the demo's invoice.
    let added = call_service(&service, rpc(json!({"text": "milk"}))).await;
    assert_eq!(added.status(), StatusCode::OK);
    let asked = invoke(&state, CallSurface::Model, "delete-todo", json!({"id": 1})).await;
    let Envelope::ApprovalRequired { approval_id, .. } = asked else {
        panic!("{asked:?}")
    };
    let decide = post(
        &format!("/api/approvals/{approval_id}"),
        json!({"approved": true}),
    )
    .insert_header(("cookie", cookie.clone()));
    let body: Value = read_body_json(call_service(&service, decide.to_request()).await).await;
    assert_eq!(
        body["receipt"],
        json!({"text": "You approved delete-todo (id 1), and it completed.", "ok": true})
    );
    // Nobody signed in reaches nothing.
    let anonymous = post("/rpc/list-todos", json!({})).to_request();
    assert_eq!(
        call_service(&service, anonymous).await.status(),
        StatusCode::UNAUTHORIZED
    );
}
