//! `--auth jwt` and `--auth proxy-header` against the real server: tokens and keys are the
//! tests' own (an HS256 secret; the RSA and P-256 test keys in tests/fixtures/auth, served as
//! a JWKS file and over HTTP on 127.0.0.1). Every refusal is a 401 whose code says why, and
//! no answer repeats the token.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use dpas_engine::{ChatConfig, ModelSet};
use dpas_governance::{policy_fn, CallSurface, Capability, Decision, PolicyPhase, SideEffect};
use dpas_model::scripted::{Script, ScriptedProvider};
use host_server::config::{AuthConfig, ClaimNames, JwtConfig, JwtKeys, ProxyConfig};
use host_server::doors;
use host_server::AppBuilder;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE};
use serde_json::{json, Map, Value};

use crate::common::{builder, start_with_routes, Reply, TestServer};

const HS_SECRET: &str = "the-apps-backend-shares-this-32+-byte-secret";
const ISSUER: &str = "https://auth.todo.test";
const AUDIENCE: &str = "dpas-host";
const RSA_PEM: &[u8] = include_bytes!("../fixtures/auth/rsa-test-key.pem");
const RSA_OTHER_PEM: &[u8] = include_bytes!("../fixtures/auth/rsa-other-test-key.pem");
const EC_PEM: &[u8] = include_bytes!("../fixtures/auth/ec-test-key.pem");

/// Offers write tools' presence as text, so a step shows which role it ran as.
const ROLE_SCRIPT: &str = r#"{"turns": [
    {"when": {"offered": "domain_issue-invoice"}, "text": ["writes are offered"]},
    {"text": ["reads only"]}
]}"#;

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Claims of a valid token for `sub`, as the app's backend would mint them.
fn claims(sub: &str, role: &str) -> Map<String, Value> {
    json!({
        "sub": sub,
        "email": format!("{sub}@todo.test"),
        "name": format!("User {sub}"),
        "role": role,
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now(),
        "exp": now() + 600,
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn with(mut c: Map<String, Value>, key: &str, value: Value) -> Map<String, Value> {
    if value.is_null() {
        c.remove(key);
    } else {
        c.insert(key.to_owned(), value);
    }
    c
}

fn hs256(claims: &impl serde::Serialize, secret: &str) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

fn signed(alg: Algorithm, kid: Option<&str>, pem: &[u8], claims: &Map<String, Value>) -> String {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem),
        _ => EncodingKey::from_rsa_pem(pem),
    }
    .unwrap();
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

/// A token whose header says `alg: none`, with no signature.
fn unsigned(claims: &Map<String, Value>) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.",
        part(&json!({"alg": "none", "typ": "JWT"})),
        part(&Value::Object(claims.clone()))
    )
}

/// The public JWK of a private test key, under `kid`.
fn jwk(alg: Algorithm, kid: &str, pem: &[u8]) -> Jwk {
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem),
        _ => EncodingKey::from_rsa_pem(pem),
    }
    .unwrap();
    let mut jwk = Jwk::from_encoding_key(&key, alg).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

fn jwks(keys: Vec<Jwk>) -> String {
    serde_json::to_string(&JwkSet { keys }).unwrap()
}

fn jwt_config(keys: JwtKeys) -> JwtConfig {
    JwtConfig {
        issuer: Some(ISSUER.to_owned()),
        audience: Some(AUDIENCE.to_owned()),
        cookie: Some("todo_token".to_owned()),
        ..JwtConfig::with_keys(keys)
    }
}

/// The server outside demo mode, with `auth`, a `whoami` capability that shows what the
/// runtime got as its actor, and the chat doors on a scripted model.
fn app(auth: AuthConfig) -> AppBuilder {
    builder()
        .with_config(move |c| {
            c.demo = false;
            c.auth = auth;
        })
        .register(|rt, _pool| {
            let whoami = |id: &str| {
                Capability::builder(id)
                    .description("Shows the actor the runtime was given.")
                    .side_effect(SideEffect::Read)
                    .tags(["tools"])
                    .expose(&[CallSurface::Direct])
                    .handler(|ctx, _i: Map<String, Value>| async move {
                        Ok(json!({
                            "id": ctx.actor.id,
                            "email": ctx.actor.email,
                            "role": ctx.actor.role,
                            "authorization": ctx.actor.authorization.as_ref().map(|a| a.expose().to_owned()),
                        }))
                    })
            };
            let gate = policy_fn("gate-whoami-later", &[PolicyPhase::Invocation], |req| {
                Ok(if req.capability.id == "whoami-later" {
                    Decision::RequireApproval {
                        reason: "asks first".to_owned(),
                        approval_type: "human-confirmation".to_owned(),
                        expires_in: None,
                    }
                } else {
                    Decision::Allow
                })
            });
            rt.capability(whoami("whoami"))
                .capability(whoami("whoami-later"))
                .policy(gate)
        })
}

async fn start(auth: AuthConfig) -> TestServer {
    start_app(app(auth)).await
}

async fn start_app(app: AppBuilder) -> TestServer {
    let script = Script::from_json(ROLE_SCRIPT.as_bytes()).unwrap();
    let chat = ChatConfig {
        models: ModelSet::new(vec![ScriptedProvider::from_script(script).into_arc()]),
        floors: Arc::new(dpas_demo::route_floors()),
        app_prompt: Arc::from(dpas_demo::APP_PROMPT),
        model_timeout: std::time::Duration::from_secs(45),
    };
    start_with_routes(app, doors::mount(chat)).await
}

/// Sends `method path` with `headers` (and a JSON body for writes).
async fn call(
    s: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Reply {
    s.send_with_headers(method, path, headers, body.map(|b| b.to_string()))
        .await
}

/// Sends `method path` as the holder of `authorization`.
async fn as_holder(
    s: &TestServer,
    method: &str,
    path: &str,
    authorization: &str,
    body: Option<Value>,
) -> Reply {
    call(
        s,
        method,
        path,
        &[(AUTHORIZATION.as_str(), authorization)],
        body,
    )
    .await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

async fn session_with_bearer(s: &TestServer, token: &str) -> Reply {
    as_holder(s, "GET", "/api/session", &bearer(token), None).await
}

/// Asserts a 401 with `code`, whose answer does not repeat the token.
async fn refused(s: &TestServer, token: &str, code: &str) {
    let a = session_with_bearer(s, token).await;
    assert_eq!(a.status, 401, "{code}: {}", a.text());
    assert_eq!(a.body["error"]["code"], code, "{}", a.text());
    for part in token.split('.').filter(|p| p.len() > 8) {
        assert!(
            !a.text().contains(part),
            "the answer repeats the token: {}",
            a.text()
        );
    }
}

#[actix_web::test]
async fn an_hs256_token_names_the_user_by_bearer_or_by_cookie() {
    let s = start(AuthConfig::Jwt(jwt_config(JwtKeys::Secret(
        HS_SECRET.into(),
    ))))
    .await;
    let token = hs256(&claims("u-42", "editor"), HS_SECRET);
    let a = session_with_bearer(&s, &token).await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(
        a.body["user"],
        json!({"id": "u-42", "email": "u-42@todo.test", "name": "User u-42", "role": "editor"})
    );
    let cookie = format!("other=1; todo_token={token}");
    let a = s.get("/api/session", Some(&cookie)).await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(a.body["user"]["id"], "u-42");
    // A cookie of another name is no token.
    let wrong = format!("session={token}");
    let a = s.get("/api/session", Some(&wrong)).await;
    assert_eq!(a.refusal(), (401, Some("TOKEN_MISSING")));

    // The runtime gets the actor, and the Authorization header to forward: as received, or
    // made from the cookie's token.
    let auth = bearer(&token);
    let (a, b) = (
        as_holder(&s, "POST", "/rpc/whoami", &auth, Some(json!({}))).await,
        s.post("/rpc/whoami", Some(&cookie), json!({})).await,
    );
    assert_eq!(a.status, 200, "{}", a.text());
    let expected =
        json!({"id": "u-42", "email": "u-42@todo.test", "role": "editor", "authorization": auth});
    assert_eq!(a.body["data"], expected);
    assert_eq!(b.body["data"], expected, "{}", b.text());
    // The sign-out and the MCP token are the demo session's: with JWTs the app does both.
    let a = as_holder(&s, "DELETE", "/api/session", &auth, None).await;
    assert_eq!(a.status, 404);
    let a = as_holder(&s, "POST", "/api/session/token", &auth, None).await;
    assert_eq!(a.status, 404);
}

#[actix_web::test]
async fn an_approved_run_gets_the_deciding_requests_credential() {
    let s = start(AuthConfig::Jwt(jwt_config(JwtKeys::Secret(
        HS_SECRET.into(),
    ))))
    .await;
    let first = bearer(&hs256(&claims("u-7", "editor"), HS_SECRET));
    let asked = as_holder(&s, "POST", "/rpc/whoami-later", &first, Some(json!({}))).await;
    assert_eq!(asked.status, 409, "{}", asked.text());
    let id = asked.body["approvalId"]
        .as_str()
        .expect("approval id")
        .to_owned();
    // Credentials are never stored: the run gets the one of the request that approves it.
    let mut later = claims("u-7", "editor");
    later.insert("iat".to_owned(), json!(now() + 1));
    later.insert("jti".to_owned(), json!("second"));
    let second = bearer(&hs256(&later, HS_SECRET));
    assert_ne!(first, second);
    let path = format!("/api/approvals/{id}");
    let other = bearer(&hs256(&claims("u-8", "editor"), HS_SECRET));
    let decided = as_holder(&s, "POST", &path, &other, Some(json!({"approved": true}))).await;
    assert_eq!(
        decided.status, 404,
        "another user's approval is not theirs to decide"
    );
    let decided = as_holder(&s, "POST", &path, &second, Some(json!({"approved": true}))).await;
    assert_eq!(decided.status, 200, "{}", decided.text());
    let output = &decided.body["resolution"]["output"];
    assert_eq!(output["id"], "u-7", "{}", decided.text());
    assert_eq!(output["authorization"], second.as_str());
}

#[actix_web::test]
async fn every_refusal_is_a_401_that_says_why() {
    let s = start(AuthConfig::Jwt(jwt_config(JwtKeys::Secret(
        HS_SECRET.into(),
    ))))
    .await;
    let good = claims("u-1", "editor");
    let sign = |c: &Map<String, Value>| hs256(c, HS_SECRET);
    // Within the documented 30 s of leeway a token still counts.
    let just_expired = sign(&with(good.clone(), "exp", json!(now() - 10)));
    assert_eq!(session_with_bearer(&s, &just_expired).await.status, 200);
    let cases = [
        (
            sign(&with(good.clone(), "exp", json!(now() - 120))),
            "TOKEN_EXPIRED",
        ),
        (
            sign(&with(good.clone(), "nbf", json!(now() + 600))),
            "TOKEN_NOT_YET_VALID",
        ),
        (
            sign(&with(good.clone(), "aud", json!("another-api"))),
            "TOKEN_AUDIENCE",
        ),
        (
            sign(&with(good.clone(), "aud", Value::Null)),
            "TOKEN_AUDIENCE",
        ),
        (
            sign(&with(good.clone(), "iss", json!("https://evil.test"))),
            "TOKEN_ISSUER",
        ),
        (
            sign(&with(good.clone(), "iss", Value::Null)),
            "TOKEN_ISSUER",
        ),
        (
            sign(&with(good.clone(), "sub", Value::Null)),
            "TOKEN_CLAIMS",
        ),
        (sign(&with(good.clone(), "sub", json!(""))), "TOKEN_CLAIMS"),
        (
            sign(&with(good.clone(), "sub", json!({"nested": true}))),
            "TOKEN_CLAIMS",
        ),
        (
            sign(&with(good.clone(), "exp", Value::Null)),
            "TOKEN_CLAIMS",
        ),
        (sign(&with(good.clone(), "role", json!(7))), "TOKEN_CLAIMS"),
        (
            hs256(&good, "a-different-secret-of-enough-length-0123"),
            "TOKEN_INVALID",
        ),
        (unsigned(&good), "TOKEN_INVALID"),
        (
            signed(Algorithm::RS256, None, RSA_PEM, &good),
            "TOKEN_INVALID",
        ),
        ("not-a-jwt".to_owned(), "TOKEN_INVALID"),
        ("a.b.c".to_owned(), "TOKEN_INVALID"),
    ];
    for (token, code) in &cases {
        refused(&s, token, code).await;
    }
    // A payload changed after signing.
    let token = sign(&good);
    let mut parts: Vec<&str> = token.split('.').collect();
    let payload = URL_SAFE_NO_PAD
        .encode(Value::Object(with(good.clone(), "role", json!("admin"))).to_string());
    parts[1] = &payload;
    refused(&s, &parts.join("."), "TOKEN_INVALID").await;

    let a = call(&s, "GET", "/api/session", &[], None).await;
    assert_eq!(a.refusal(), (401, Some("TOKEN_MISSING")));
    let a = as_holder(&s, "GET", "/api/session", "Basic dTpw", None).await;
    assert_eq!(a.refusal(), (401, Some("TOKEN_INVALID")));
    // The bearer wins over the cookie: a bad bearer is not rescued by a good cookie.
    let cookie = format!("todo_token={}", sign(&good));
    let expired = bearer(&cases[0].0);
    let a = call(
        &s,
        "GET",
        "/api/session",
        &[
            (AUTHORIZATION.as_str(), &expired),
            (COOKIE.as_str(), &cookie),
        ],
        None,
    )
    .await;
    assert_eq!(a.body["error"]["code"], "TOKEN_EXPIRED");
}

#[actix_web::test]
async fn claim_names_map_to_the_actor() {
    let config = JwtConfig {
        claims: ClaimNames {
            id: "uid".into(),
            email: "mail".into(),
            name: "display".into(),
            role: "roles".into(),
        },
        ..JwtConfig::hs256(HS_SECRET)
    };
    let s = start(AuthConfig::Jwt(config)).await;
    let token = hs256(
        &json!({"uid": 1234, "mail": "ann@todo.test", "display": "Ann", "roles": ["editor", "viewer"], "exp": now() + 60}),
        HS_SECRET,
    );
    let a = session_with_bearer(&s, &token).await;
    assert_eq!(
        a.body["user"],
        json!({"id": "1234", "email": "ann@todo.test", "name": "Ann", "role": "editor"}),
        "{}",
        a.text()
    );
    // `sub` means nothing here, and without the id claim there is no actor.
    let token = hs256(&json!({"sub": "u-1", "exp": now() + 60}), HS_SECRET);
    refused(&s, &token, "TOKEN_CLAIMS").await;
    // Only email and id: the name falls back to the email, the role to none; no `aud`
    // configured, so none may be present.
    let token = hs256(
        &json!({"uid": "u-2", "mail": "bo@todo.test", "exp": now() + 60}),
        HS_SECRET,
    );
    let a = session_with_bearer(&s, &token).await;
    assert_eq!(
        a.body["user"],
        json!({"id": "u-2", "email": "bo@todo.test", "name": "bo@todo.test", "role": ""})
    );
    let token = hs256(
        &json!({"uid": "u-2", "aud": "someone", "exp": now() + 60}),
        HS_SECRET,
    );
    refused(&s, &token, "TOKEN_AUDIENCE").await;
}

#[actix_web::test]
async fn a_jwks_file_verifies_rs256_and_es256_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(
        &path,
        jwks(vec![
            jwk(Algorithm::RS256, "rsa-1", RSA_PEM),
            jwk(Algorithm::ES256, "ec-1", EC_PEM),
            jwk(Algorithm::RS256, "rsa-2", RSA_OTHER_PEM),
        ]),
    )
    .unwrap();
    let s = start(AuthConfig::Jwt(jwt_config(JwtKeys::JwksFile(path.clone())))).await;
    let good = claims("idp-user", "editor");
    for token in [
        signed(Algorithm::RS256, Some("rsa-1"), RSA_PEM, &good),
        signed(Algorithm::ES256, Some("ec-1"), EC_PEM, &good),
        // No kid: each key that fits the algorithm is tried.
        signed(Algorithm::RS256, None, RSA_PEM, &good),
        signed(Algorithm::RS256, None, RSA_OTHER_PEM, &good),
    ] {
        let a = session_with_bearer(&s, &token).await;
        assert_eq!(a.status, 200, "{}", a.text());
        assert_eq!(a.body["user"]["id"], "idp-user");
    }
    // Alg confusion: an HS256 token signed with public key material as the secret.
    let public = std::fs::read_to_string(&path).unwrap();
    refused(&s, &hs256(&good, &public), "TOKEN_INVALID").await;
    refused(&s, &unsigned(&good), "TOKEN_INVALID").await;
    // Another key under a known kid; an unknown kid; a key of the wrong kind for the alg.
    refused(
        &s,
        &signed(Algorithm::RS256, Some("rsa-1"), RSA_OTHER_PEM, &good),
        "TOKEN_INVALID",
    )
    .await;
    refused(
        &s,
        &signed(Algorithm::RS256, Some("rsa-9"), RSA_PEM, &good),
        "TOKEN_INVALID",
    )
    .await;
    refused(
        &s,
        &signed(Algorithm::RS256, Some("ec-1"), RSA_PEM, &good),
        "TOKEN_INVALID",
    )
    .await;
    // The claims are checked as with a secret; without a kid, the key whose signature holds
    // says why, not the others.
    let expired = with(good.clone(), "exp", json!(now() - 300));
    refused(
        &s,
        &signed(Algorithm::RS256, None, RSA_PEM, &expired),
        "TOKEN_EXPIRED",
    )
    .await;
    refused(
        &s,
        &signed(Algorithm::ES256, Some("ec-1"), EC_PEM, &expired),
        "TOKEN_EXPIRED",
    )
    .await;
}

/// A JWKS endpoint on 127.0.0.1 whose document the test can change, counting its fetches.
struct JwksServer {
    url: String,
    document: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
}

fn serve_jwks(document: String) -> JwksServer {
    let document = Arc::new(Mutex::new(document));
    let fetches = Arc::new(AtomicUsize::new(0));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/.well-known/jwks.json",
        listener.local_addr().unwrap()
    );
    let (doc, count) = (Arc::clone(&document), Arc::clone(&fetches));
    let server = actix_web::HttpServer::new(move || {
        let (doc, count) = (Arc::clone(&doc), Arc::clone(&count));
        actix_web::App::new().route(
            "/.well-known/jwks.json",
            actix_web::web::get().to(move || {
                count.fetch_add(1, Ordering::SeqCst);
                let body = doc.lock().unwrap().clone();
                async move {
                    actix_web::HttpResponse::Ok()
                        .content_type("application/json")
                        .body(body)
                }
            }),
        )
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    actix_web::rt::spawn(server);
    JwksServer {
        url,
        document,
        fetches,
    }
}

#[actix_web::test]
async fn a_jwks_url_is_read_at_start_and_again_for_a_new_key_id() {
    let idp = serve_jwks(jwks(vec![jwk(Algorithm::RS256, "2026-11", RSA_PEM)]));
    let s = start(AuthConfig::Jwt(jwt_config(JwtKeys::JwksUrl(
        idp.url.clone(),
    ))))
    .await;
    assert_eq!(
        idp.fetches.load(Ordering::SeqCst),
        1,
        "fetched once at start"
    );
    let good = claims("rotating", "editor");
    let old = signed(Algorithm::RS256, Some("2026-11"), RSA_PEM, &good);
    assert_eq!(session_with_bearer(&s, &old).await.status, 200);
    assert_eq!(
        idp.fetches.load(Ordering::SeqCst),
        1,
        "a known key needs no fetch"
    );

    // The provider rotates: a token under the new kid makes the server fetch again.
    *idp.document.lock().unwrap() = jwks(vec![
        jwk(Algorithm::RS256, "2026-11", RSA_PEM),
        jwk(Algorithm::RS256, "2026-12", RSA_OTHER_PEM),
    ]);
    let new = signed(Algorithm::RS256, Some("2026-12"), RSA_OTHER_PEM, &good);
    let a = session_with_bearer(&s, &new).await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(idp.fetches.load(Ordering::SeqCst), 2);
    // A flood of made-up kids does not become a flood of fetches.
    for kid in ["x1", "x2", "x3"] {
        refused(
            &s,
            &signed(Algorithm::RS256, Some(kid), RSA_PEM, &good),
            "TOKEN_INVALID",
        )
        .await;
    }
    assert!(
        idp.fetches.load(Ordering::SeqCst) <= 3,
        "refetches are rate limited"
    );
    assert_eq!(session_with_bearer(&s, &new).await.status, 200);
}

#[actix_web::test]
async fn a_key_the_provider_withdraws_stops_verifying_at_the_next_refresh() {
    let idp = serve_jwks(jwks(vec![jwk(Algorithm::RS256, "old", RSA_PEM)]));
    let config = JwtConfig {
        jwks_refresh: std::time::Duration::from_millis(100),
        ..jwt_config(JwtKeys::JwksUrl(idp.url.clone()))
    };
    let s = start(AuthConfig::Jwt(config)).await;
    let good = claims("u-3", "editor");
    let old = signed(Algorithm::RS256, Some("old"), RSA_PEM, &good);
    assert_eq!(session_with_bearer(&s, &old).await.status, 200);
    // The provider withdraws the key (say it leaked) and publishes a new one.
    *idp.document.lock().unwrap() = jwks(vec![jwk(Algorithm::RS256, "new", RSA_OTHER_PEM)]);
    let fetched = idp.fetches.load(Ordering::SeqCst);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while idp.fetches.load(Ordering::SeqCst) < fetched + 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the keys were not read again"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Two reads since the change: the second began after it, so the old key is gone now.
    refused(&s, &old, "TOKEN_INVALID").await;
    let new = signed(Algorithm::RS256, Some("new"), RSA_OTHER_PEM, &good);
    assert_eq!(session_with_bearer(&s, &new).await.status, 200);
}

#[actix_web::test]
async fn keys_that_cannot_be_read_fail_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"keys\": 5}").unwrap();
    let only_secrets = dir.path().join("oct.json");
    std::fs::write(&only_secrets, r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#).unwrap();
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/jwks.json", l.local_addr().unwrap())
    };
    let not_found = serve_jwks(String::new());
    let not_found_url = not_found.url.replace("jwks.json", "nope.json");
    for (keys, expected) in [
        (
            JwtKeys::JwksFile(dir.path().join("missing.json")),
            "missing.json",
        ),
        (JwtKeys::JwksFile(garbage), "no \"keys\" array"),
        (JwtKeys::JwksFile(only_secrets), "no RSA or EC"),
        (JwtKeys::JwksUrl(closed), "could not be fetched"),
        (JwtKeys::JwksUrl(not_found_url), "404"),
    ] {
        let err = app(AuthConfig::Jwt(JwtConfig::with_keys(keys)))
            .build()
            .await
            .expect_err("the start fails");
        assert!(err.to_string().contains(expected), "{err}");
        assert!(err.to_string().starts_with("--jwt-jwks "), "{err}");
    }
}

#[actix_web::test]
async fn a_step_through_agent_chat_runs_as_the_jwt_actor() {
    let s = start(AuthConfig::Jwt(jwt_config(JwtKeys::Secret(
        HS_SECRET.into(),
    ))))
    .await;
    let step = |conversation: &str| {
        json!({
            "protocolVersion": 2,
            "conversationId": conversation,
            "turnId": "trn_1",
            "stepIndex": 0,
            "pathname": "/receivables/pending",
            "messages": [{"role": "user", "content": "What can I do?"}],
            "catalog": {"mode": "direct", "frontendTools": []}
        })
    };
    // The demo's role semantics hold for a JWT actor: a controller is offered writes, an
    // analyst, or a role the demo does not know, only reads.
    for (sub, role, expected) in [
        ("c-1", "controller", "writes are offered"),
        ("a-1", "analyst", "reads only"),
        ("e-1", "editor", "reads only"),
    ] {
        let auth = bearer(&hs256(&claims(sub, role), HS_SECRET));
        let conversation = format!("conv-{sub}");
        let a = as_holder(&s, "POST", "/agent/chat", &auth, Some(step(&conversation))).await;
        assert_eq!(a.status, 200, "{}", a.text());
        assert!(a.text().contains(expected), "{role}: {}", a.text());
        // The thread belongs to that actor alone.
        let mine = as_holder(&s, "GET", "/api/threads", &auth, None).await;
        let ids: Vec<&str> = mine
            .body
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["id"].as_str())
            .collect();
        assert_eq!(ids, [conversation.as_str()], "{}", mine.text());
    }
    // Refused before the body is read: an expired token with a body that is not even JSON.
    let expired = bearer(&hs256(
        &with(claims("c-1", "controller"), "exp", json!(now() - 120)),
        HS_SECRET,
    ));
    let a = s
        .http
        .post(s.url("/agent/chat"))
        .header(AUTHORIZATION, &expired)
        .header(CONTENT_TYPE, "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(a.status(), 401);
    assert_eq!(
        a.json::<Value>().await.unwrap()["error"]["code"],
        "TOKEN_EXPIRED"
    );
    // The other doors into the step engine take the same identity.
    for door in ["/agent/ai-sdk", "/agent/ag-ui"] {
        let a = as_holder(&s, "POST", door, &expired, Some(json!({}))).await;
        assert_eq!(a.refusal(), (401, Some("TOKEN_EXPIRED")), "{door}");
    }
    let controller = bearer(&hs256(&claims("c-1", "controller"), HS_SECRET));
    let a = as_holder(&s, "GET", "/agent/manifest", &controller, None).await;
    assert_eq!(a.body["actor"]["id"], "c-1", "{}", a.text());
}

/// `tools/list` over `/mcp` with `authorization`.
async fn mcp_list(s: &TestServer, authorization: &str) -> Reply {
    let headers = [
        (AUTHORIZATION.as_str(), authorization),
        ("accept", "application/json, text/event-stream"),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    call(s, "POST", "/mcp", &headers, Some(body)).await
}

fn tools(a: &Reply) -> Vec<String> {
    a.body["result"]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[actix_web::test]
async fn mcp_takes_the_apps_bearer_jwt() {
    let s = start(AuthConfig::Jwt(jwt_config(JwtKeys::Secret(
        HS_SECRET.into(),
    ))))
    .await;
    let controller = bearer(&hs256(&claims("c-1", "controller"), HS_SECRET));
    let analyst = bearer(&hs256(&claims("a-1", "analyst"), HS_SECRET));
    let (c, a) = (
        mcp_list(&s, &controller).await,
        mcp_list(&s, &analyst).await,
    );
    assert_eq!(c.status, 200, "{}", c.text());
    assert!(
        tools(&c).iter().any(|t| t == "issue-invoice"),
        "{:?}",
        tools(&c)
    );
    assert!(
        !tools(&a).iter().any(|t| t == "issue-invoice"),
        "{:?}",
        tools(&a)
    );
    assert!(
        tools(&a).iter().any(|t| t == "list-clients"),
        "{:?}",
        tools(&a)
    );
    let expired = bearer(&hs256(
        &with(claims("c-1", "controller"), "exp", json!(now() - 120)),
        HS_SECRET,
    ));
    let e = mcp_list(&s, &expired).await;
    assert_eq!(e.refusal(), (401, Some("TOKEN_EXPIRED")), "{}", e.text());
    assert!(e.www_authenticate.is_some_and(|w| w.starts_with("Bearer")));
}

fn proxy(trusted: &[&str], secret: Option<&str>) -> AuthConfig {
    AuthConfig::ProxyHeader(ProxyConfig {
        secret: secret.map(str::to_owned),
        ..ProxyConfig::trusting(trusted.iter().map(|t| t.parse().unwrap()).collect())
    })
}

const IDENTITY: [(&str, &str); 4] = [
    ("x-forwarded-user", "pat"),
    ("x-forwarded-email", "pat@corp.test"),
    ("x-forwarded-name", "Pat Proxy"),
    ("x-forwarded-role", "controller"),
];

#[actix_web::test]
async fn proxy_headers_count_from_the_trusted_proxy_only() {
    // The test's requests come from 127.0.0.1: here that is the proxy.
    let s = start(proxy(&["127.0.0.1/32", "10.0.0.0/8"], None)).await;
    let a = call(&s, "GET", "/api/session", &IDENTITY, None).await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(
        a.body["user"],
        json!({"id": "pat", "email": "pat@corp.test", "name": "Pat Proxy", "role": "controller"})
    );
    let a = call(&s, "POST", "/rpc/whoami", &IDENTITY, Some(json!({}))).await;
    assert_eq!(a.body["data"]["id"], "pat", "{}", a.text());
    // The proxy sent no user: nobody.
    let a = call(&s, "GET", "/api/session", &IDENTITY[1..], None).await;
    assert_eq!(a.refusal(), (401, Some("UNAUTHENTICATED")));

    // The same headers from an address that is not the proxy's count for nothing.
    let s = start(proxy(&["10.0.0.0/8"], None)).await;
    let a = call(&s, "GET", "/api/session", &IDENTITY, None).await;
    assert_eq!(a.refusal(), (401, Some("PROXY_UNTRUSTED")), "{}", a.text());
    let a = call(&s, "POST", "/rpc/whoami", &IDENTITY, Some(json!({}))).await;
    assert_eq!(a.status, 401);
    let a = call(&s, "GET", "/api/session", &[], None).await;
    assert_eq!(a.refusal(), (401, Some("UNAUTHENTICATED")));
}

#[actix_web::test]
async fn the_proxy_secret_lets_the_proxy_in_from_anywhere() {
    let secret = "proxy-and-server-share-this-32+-bytes";
    let s = start(proxy(&[], Some(secret))).await;
    let with_secret: Vec<(&str, &str)> = IDENTITY
        .iter()
        .copied()
        .chain([("x-proxy-secret", secret)])
        .collect();
    let a = call(&s, "GET", "/api/session", &with_secret, None).await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(a.body["user"]["id"], "pat");
    for wrong in ["proxy-and-server-share-this-32+-byteZ", "", "x"] {
        let headers: Vec<(&str, &str)> = IDENTITY
            .iter()
            .copied()
            .chain([("x-proxy-secret", wrong)])
            .collect();
        let a = call(&s, "GET", "/api/session", &headers, None).await;
        assert_eq!(a.refusal(), (401, Some("PROXY_UNTRUSTED")), "{wrong:?}");
    }
    let a = call(&s, "GET", "/api/session", &IDENTITY, None).await;
    assert_eq!(a.refusal(), (401, Some("PROXY_UNTRUSTED")));
}

#[actix_web::test]
async fn the_demo_sign_in_is_refused_outside_demo_mode() {
    let body = Some(json!({"role": "controller"}));
    for auth in [
        AuthConfig::Jwt(JwtConfig::hs256(HS_SECRET)),
        proxy(&["127.0.0.1/32"], None),
        AuthConfig::Session,
    ] {
        let s = start(auth).await;
        let a = call(&s, "POST", "/api/session", &[], body.clone()).await;
        assert_eq!(a.status, 404, "{}", a.text());
    }
    // Under --demo with JWTs the role picker is off too: its cookie would name nobody.
    let s =
        start_app(app(AuthConfig::Jwt(JwtConfig::hs256(HS_SECRET))).with_config(|c| c.demo = true))
            .await;
    let a = call(&s, "POST", "/api/session", &[], body).await;
    assert_eq!(a.status, 404, "{}", a.text());
}
