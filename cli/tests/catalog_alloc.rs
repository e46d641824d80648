//! A step that finds its domain catalog already composed allocates nothing to find it: the
//! cache is searched by a key borrowed from the request (`dpas_engine::compose::DomainCatalogs`).
//! Its own test binary, because it counts the whole process's allocations.

use std::sync::Arc;

use dpas_demo::{ANALYST, CONTROLLER};
use dpas_governance::Credential;
use host_server::config::ServerConfig;
use host_server::CallSurface;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

#[actix_web::test]
async fn a_cache_hit_allocates_nothing_and_a_miss_does() {
    let state =
        dpas_tests::testing::demo_builder(ServerConfig::for_tests("catalog-alloc-test-secret"))
            .build()
            .await
            .expect("state");
    let (runtime, catalogs) = (&state.runtime, &state.engine.catalogs);
    let tags: Vec<String> = ["app", "invoices", "collections"]
        .map(str::to_owned)
        .to_vec();
    let mut carla = CONTROLLER.actor();
    carla.email = Some("carla@example.com".to_owned());
    carla.authorization = Some(Credential::new("Bearer t"));
    let composed = catalogs.get(runtime, &carla, CallSurface::Model, Some(&tags));

    // Nothing else runs in between: the runtime has one thread and this code does not await.
    let region = Region::new(GLOBAL);
    let hit = catalogs.cached(&carla, CallSurface::Model, Some(&tags));
    let counted = region.change();
    assert!(hit.is_some_and(|h| Arc::ptr_eq(&h, &composed)));
    assert_eq!(
        (counted.allocations, counted.reallocations),
        (0, 0),
        "a hit allocates nothing"
    );

    // The count is real: a miss stores an owned key.
    let ada = ANALYST.actor();
    assert!(catalogs
        .cached(&ada, CallSurface::Model, Some(&tags))
        .is_none());
    let region = Region::new(GLOBAL);
    catalogs.get(runtime, &ada, CallSurface::Model, Some(&tags));
    assert!(region.change().allocations > 0);
}
