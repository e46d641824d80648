//! `GET /agent/manifest`: the doors, the catalog modes, every limit, the models and the
//! caller's own capability counts, behind the session like everything else.

use host_server::doors;
use serde_json::json;

use crate::common::{builder, start_with_routes, TestServer};

async fn server() -> TestServer {
    let b = builder();
    let chat = dpas_demo::chat_config(&host_server::ServerConfig::for_tests(crate::common::SECRET))
        .expect("the scripted model builds");
    start_with_routes(b, doors::mount(chat)).await
}

#[actix_web::test]
async fn the_manifest_lists_doors_limits_models_and_the_callers_catalog() {
    let s = server().await;
    assert_eq!(s.get("/agent/manifest", None).await.status, 401);
    assert_eq!(
        s.send("POST", "/agent/manifest", None, None).await.status,
        405
    );

    let carla = s.sign_in("controller").await;
    let m = s.get("/agent/manifest", Some(&carla)).await;
    assert_eq!(m.status, 200, "{}", m.body);
    let b = &m.body;
    assert_eq!(b["protocol"], json!({"current": 2, "versions": [2, 1]}));
    assert_eq!(b["catalogModes"], json!(["direct", "meta"]));
    let doors: Vec<&str> = b["encodings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(
        doors.contains(&"/agent/chat") && doors.contains(&"/mcp"),
        "{doors:?}"
    );
    let limits = &b["limits"];
    assert_eq!(
        (
            &limits["frontendTools"],
            &limits["domainTools"],
            &limits["totalTools"],
            &limits["messages"]
        ),
        (&json!(128), &json!(128), &json!(192), &json!(400))
    );
    assert_eq!(limits["modelStepsPerRequest"], 5);
    assert_eq!(limits["modelTimeoutSeconds"], 45);
    assert_eq!(limits["requestBodyBytes"], 4 * 1024 * 1024);
    assert_eq!(limits["fieldLengths"]["description"], 1000);
    assert_eq!(limits["browser"]["turnDeadlineMs"], 180_000);
    assert_eq!(
        b["models"],
        json!({"ids": ["scripted"], "default": "scripted"})
    );
    assert_eq!(
        b["steps"],
        json!({
            "idempotent": true,
            "resumable": true,
            "retentionSeconds": 600,
            "door": "/agent/chat",
            "replayHeader": "dpas-step-replay",
        })
    );
    // Nine capabilities reach the chat's model surface; the tenth is MCP, direct and test only.
    assert_eq!(b["actor"]["capabilities"], json!({"aiSdk": 9, "mcp": 10}));
    assert_eq!(b["actor"]["role"], "controller");

    let ada = s.sign_in("analyst").await;
    let m = s.get("/agent/manifest", Some(&ada)).await;
    assert_eq!(
        m.body["actor"]["capabilities"],
        json!({"aiSdk": 4, "mcp": 4})
    );
}
