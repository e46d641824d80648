//! The settings these tests start the shared harness (`dpas_tests::testing`) with: the
//! demo on, a pinned day, an in-memory SQLite database.

use dpas_demo::{ANALYST, CONTROLLER};
use host_server::config::ServerConfig;
use host_server::{Actor, AppBuilder};
use time::macros::date;
use time::Date;

/// Starts the server with extra routes mounted the way the chat endpoint will be.
pub use dpas_tests::testing::serve as start_with_routes;
pub use dpas_tests::testing::{Reply, TestServer};

pub const SECRET: &str = "integration-test-secret";
/// The ledger is seeded and read on this day, so figures never drift across midnight.
pub const TODAY: Date = date!(2026 - 11 - 29);

pub fn carla() -> Actor {
    CONTROLLER.actor()
}

pub fn ada() -> Actor {
    ANALYST.actor()
}

/// The default test builder: demo on, pinned day, in-memory database.
pub fn builder() -> AppBuilder {
    dpas_tests::testing::demo_builder(ServerConfig::for_tests(SECRET))
}

/// The same server without the demo's domain (an embedder's own, or none).
pub fn plain_builder() -> AppBuilder {
    AppBuilder::new(ServerConfig::for_tests(SECRET))
}

pub async fn start() -> TestServer {
    start_with(builder()).await
}

/// The default server on the database at `url` (one of `pg::backends()`).
pub async fn start_on(url: &str) -> TestServer {
    start_with(builder().with_config(|c| c.database_url = url.to_owned())).await
}

pub async fn start_with(builder: AppBuilder) -> TestServer {
    start_with_routes(builder, |_| {}).await
}
