#![warn(unreachable_pub)]

//! The demo receivables domain, an embedder of `host-server` built on its public API only
//! (as `examples/todo-server` is): its ledger in the server's database, its capabilities and
//! policies, its two users and their sign-in, its routes and its prompt.
//!
//! # API
//! - [`Demo`]: installs the demo's domain on an [`AppBuilder`] (its ledger on the server's
//!   database, seeded under `--demo`) and mounts its sign-in and reset ([`Demo::routes`]).
//! - [`chat_config`] / [`configured`]: the demo's route floors and prompt for the step
//!   engine; [`route_floors`], [`APP_PROMPT`].
//! - [`register`], the policies and [`CONTROLLER`] / [`ANALYST`], for tests.
//!
//! # Invariants
//! - Nothing in `host-server` knows this crate: it is one embedder among others, and a
//!   server without it has no receivables domain.

pub mod capabilities;
pub mod http;
pub mod ledger;
mod users;

use std::sync::{Arc, OnceLock};

use dpas_engine::{ChatConfig, ModelSetupError};
use dpas_protocol::RouteFloors;
use dpas_store::Db;
use host_server::appfiles::AppFiles;
use host_server::{doors, AppBuilder, ServerConfig};
pub use ledger::Ledger;
pub use users::{DemoUser, ANALYST, CONTROLLER, ROLE_ANALYST, ROLE_CONTROLLER};

use dpas_governance::{policy_fn, CallSurface, Decision, Policy, PolicyPhase, RuntimeBuilder};

/// Capabilities a model surface may only run after the user approves.
pub const GATED_CAPABILITIES: [&str; 2] = ["issue-invoice", "delete-invoice"];

/// The demo app's route → scope floor table, in the format of `--routes` files (route →
/// tokens; `app` is prepended to every non-empty floor). The app in `www/` imports the same
/// file as its `routeScopes`, so the browser and the server resolve one table.
pub const ROUTES_JSON: &str = include_str!("routes.json");

/// The demo app's route floors ([`ROUTES_JSON`]).
pub fn route_floors() -> RouteFloors {
    host_server::appfiles::parse_routes(std::path::Path::new("demo/routes.json"), ROUTES_JSON)
        .expect("the demo's routes.json is a valid routes file (checked by its unit test)")
}

/// The demo application's preamble.
pub const APP_PROMPT: &str = "\
You are the receivables assistant of a small finance team. Money amounts are integers in \
minor units (cents): 1840000 is €18,400. Invoices are drafts, sent (outstanding) or paid; an \
outstanding invoice past its due date is overdue.";

/// The demo's domain on one server: install it on an [`AppBuilder`], then mount its routes
/// ([`Demo::routes`]) beside the server's. Cheap to clone; the clones share one ledger.
#[derive(Clone, Default)]
pub struct Demo {
    today: Option<ledger::Today>,
    ledger: Arc<OnceLock<Ledger>>,
}

impl Demo {
    /// The demo on the clock's today.
    pub fn new() -> Self {
        Self::default()
    }

    /// The demo with its ledger's notion of today pinned (tests).
    pub fn with_today(today: ledger::Today) -> Self {
        Self {
            today: Some(today),
            ledger: Arc::default(),
        }
    }

    fn ledger_on(&self, db: Db) -> Ledger {
        match &self.today {
            Some(t) => Ledger::with_today(db, Arc::clone(t)),
            None => Ledger::new(db),
        }
    }

    /// Registers the demo's capabilities and policies on `builder`, with its ledger on the
    /// server's database; under `--demo` (`config.demo`) an empty ledger is seeded first.
    pub fn install(&self, builder: AppBuilder) -> AppBuilder {
        let builder = if builder.config().demo {
            let demo = self.clone();
            builder.prepare(move |db| {
                Box::pin(async move {
                    let ledger = demo.ledger_on(db);
                    ledger.seed_if_empty(ledger.today()).await.map(|_| ())
                })
            })
        } else {
            builder
        };
        let demo = self.clone();
        builder.register(move |runtime, db| {
            let ledger = demo.ledger.get_or_init(|| demo.ledger_on(db.clone()));
            register(runtime, ledger)
        })
    }

    /// The ledger, once a server with the demo installed is built.
    pub fn ledger(&self) -> Option<&Ledger> {
        self.ledger.get()
    }

    /// `extra` (an embedder's routes, as `http::serve_with` takes them) with the demo's
    /// sign-in and reset mounted ahead of them ([`http::with_demo`]). Call it once the server
    /// is built.
    pub fn routes<F>(
        &self,
        extra: F,
    ) -> impl Fn(&mut actix_web::web::ServiceConfig) + Clone + Send + 'static
    where
        F: Fn(&mut actix_web::web::ServiceConfig) + Clone + Send + 'static,
    {
        let ledger = self
            .ledger()
            .cloned()
            .expect("the demo's routes are mounted on a server it was installed on");
        http::with_demo(ledger, extra)
    }
}

/// The demo application's chat configuration: its routes and its prompt.
pub fn chat_config(config: &ServerConfig) -> Result<ChatConfig, ModelSetupError> {
    doors::for_app(config, route_floors(), APP_PROMPT)
}

/// The binary's chat configuration under `--demo`: the app's prompt and routes files when
/// given, the demo's otherwise.
pub fn configured(config: &ServerConfig, files: &AppFiles) -> Result<ChatConfig, ModelSetupError> {
    let floors = files.routes.clone().unwrap_or_else(route_floors);
    let prompt = files.prompt.as_deref().unwrap_or(APP_PROMPT);
    doors::for_app(config, floors, prompt)
}

/// `gate-model-writes`: issue and delete from a model surface need the user's approval.
pub fn gate_model_writes() -> Arc<dyn Policy> {
    policy_fn("gate-model-writes", &[PolicyPhase::Invocation], |req| {
        let gated = matches!(req.surface, CallSurface::Model | CallSurface::Mcp)
            && GATED_CAPABILITIES.contains(&req.capability.id.as_str());
        Ok(if gated {
            Decision::RequireApproval {
                reason: format!("{} was initiated from a model loop", req.capability.id),
                approval_type: "human-confirmation".to_owned(),
                expires_in: None,
            }
        } else {
            Decision::Allow
        })
    })
}

/// `analyst-hides-writes`: anyone but a controller sees and reaches reads only.
pub fn analyst_hides_writes() -> Arc<dyn Policy> {
    policy_fn(
        "analyst-hides-writes",
        &[PolicyPhase::Discovery, PolicyPhase::Invocation],
        |req| {
            Ok(
                if req.capability.side_effect.is_read_only() || req.actor.role == ROLE_CONTROLLER {
                    Decision::Allow
                } else {
                    Decision::Hide
                },
            )
        },
    )
}

/// Registers the demo's capabilities and policies on a runtime builder.
pub fn register(builder: RuntimeBuilder, ledger: &Ledger) -> RuntimeBuilder {
    let builder = capabilities::capabilities(ledger)
        .into_iter()
        .fold(builder, RuntimeBuilder::capability);
    builder
        .policy(gate_model_writes())
        .policy(analyst_hides_writes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use host_server::appfiles::SHELL_SCOPE;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    /// The demo serves the reference behaviour's D2 table, the one its traces were recorded
    /// against.
    #[test]
    fn the_demo_routes_are_the_reference_table() {
        let floors = route_floors();
        assert_eq!(floors.shell_token, "app");
        let reference = dpas_protocol::test_support::reference_route_floors();
        let mut ours = floors.routes.clone();
        let mut theirs = reference.routes.clone();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs);
        assert_eq!(
            floors.floor("/receivables/clients/42"),
            s(&["app", "clients", "invoices"])
        );
        assert_eq!(floors.floor("/architecture"), s(&["app"]));
        assert!(floors.floor("/").is_empty());
    }

    #[test]
    fn the_apps_prompt_and_routes_replace_the_demos_which_need_demo() {
        let mut config = ServerConfig::for_tests("0123456789abcdef0123456789abcdef");
        let none = AppFiles::default();
        let demo = crate::configured(&config, &none).unwrap();
        assert_eq!(&*demo.app_prompt, APP_PROMPT);
        assert_eq!(*demo.floors, route_floors());

        config.demo = false;
        let bare = doors::configured(&config, &none).unwrap();
        assert_eq!(&*bare.app_prompt, "");
        assert!(bare.floors.routes.is_empty());
        assert!(dpas_engine::prompt::system_prompt(
            &bare.app_prompt,
            dpas_protocol::CatalogMode::Direct
        )
        .starts_with("You work inside a web application"));

        let files = AppFiles {
            capabilities: None,
            prompt: Some("You help with todos.".to_owned()),
            routes: Some(RouteFloors::new(SHELL_SCOPE, [("/todos", vec!["todos"])])),
        };
        for demo in [false, true] {
            config.demo = demo;
            let app = if demo {
                crate::configured(&config, &files)
            } else {
                doors::configured(&config, &files)
            }
            .unwrap();
            assert_eq!(&*app.app_prompt, "You help with todos.");
            assert_eq!(app.floors.floor("/todos"), ["app", "todos"]);
            assert!(app.floors.floor("/receivables/pending").is_empty());
        }
    }
}
