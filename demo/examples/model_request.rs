//! Serves the demo like `host-server --demo` and, standing in for the model loop (the chat
//! endpoint is a separate issue), asks on the `aiSdk` surface as the controller to issue draft
//! invoice 5. The printed approval can then be listed and decided over HTTP.
//!
//! `cargo run -p dpas-demo --example model_request -- 127.0.0.1:8080`

use std::net::TcpListener;

use dpas_demo::{Demo, CONTROLLER};
use host_server::config::ServerConfig;
use host_server::{AppBuilder, CallSurface, Correlation};
use serde_json::json;

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    actix_web::rt::System::new().block_on(async move {
        let mut config = ServerConfig::for_tests("model-request-example-secret");
        config.session_ttl = std::time::Duration::from_secs(3600);
        let demo = Demo::new();
        let state = demo.install(AppBuilder::new(config)).build().await.map_err(std::io::Error::other)?;
        let listener = TcpListener::bind(&addr)?;
        println!("listening on http://{} database=sqlite::memory: model=scripted demo=on", listener.local_addr()?);
        // The demo's sign-in, as the binary mounts it under `--demo`.
        let routes = demo.routes(|_| {});
        let server = host_server::serve_with(state.clone(), listener, 1, routes)?;
        let correlation = Correlation { step_id: Some("stp_example".into()), invocation_id: Some("stc_1".into()), ..Correlation::default() };
        let envelope = state.runtime.invoke(&CONTROLLER.actor(), CallSurface::Model, "issue-invoice", json!({"id": 5}), correlation).await;
        println!("model tool call domain_issue-invoice {{\"id\":5}} as carla@example.com on aiSdk -> {envelope}");
        server.await
    })
}
