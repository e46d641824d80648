//! The chat endpoint: catalog composition, the model step loop and its frames.

pub mod ag_ui;
pub mod ai_sdk;
pub mod compose;
pub mod endpoint;
pub mod manifest;
pub mod models;
pub mod prompt;
pub mod run;
pub mod sse;

use std::sync::Arc;

use actix_web::web;
use dpas_model::scripted::{Script, ScriptedProvider};
use dpas_protocol::RouteFloors;

pub use endpoint::{agent_chat, ChatConfig};
pub use models::ModelSet;

use crate::appfiles::{AppFiles, SHELL_SCOPE};
use crate::config::{ModelSpec, ServerConfig};

#[derive(Debug, thiserror::Error)]
pub enum ModelSetupError {
    #[error("scripted model: {0}")]
    Script(#[from] dpas_model::scripted::ScriptError),
    #[error("model provider: {0}")]
    Vendor(#[from] dpas_model::ProviderConfigError),
}

/// The models a spec configures.
pub fn models_for(spec: &ModelSpec) -> Result<ModelSet, ModelSetupError> {
    match spec {
        ModelSpec::None => Ok(ModelSet::none()),
        ModelSpec::Scripted { script: None } => {
            Ok(ModelSet::new(vec![ScriptedProvider::golden().into_arc()]))
        }
        ModelSpec::Scripted { script: Some(path) } => {
            let script = Script::from_file(path)?;
            Ok(ModelSet::new(vec![
                ScriptedProvider::from_script(script).into_arc()
            ]))
        }
        ModelSpec::Vendor(vendor) => Ok(ModelSet::new(vec![vendor.provider_from_env()?])),
    }
}

impl ChatConfig {
    /// The chat configuration of an application of your own: the models of `config` (every
    /// `--model`, the first the default), your route → scope table and the preamble your
    /// system prompt starts with (the host's tool rules follow it). Mount it with [`mount`].
    pub fn for_app(
        config: &ServerConfig,
        floors: RouteFloors,
        app_prompt: &str,
    ) -> Result<Self, ModelSetupError> {
        Ok(Self {
            models: ModelSet::join(
                std::iter::once(&config.model)
                    .chain(&config.more_models)
                    .map(models_for)
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            floors: Arc::new(floors),
            app_prompt: Arc::from(app_prompt),
            model_timeout: config.model_timeout,
        })
    }

    /// The chat configuration of the demo application for a server configuration.
    pub fn demo(config: &ServerConfig) -> Result<Self, ModelSetupError> {
        Self::for_app(config, crate::demo::route_floors(), prompt::DEMO_APP_PROMPT)
    }
}

impl ChatConfig {
    /// The chat configuration of the binary: the app's prompt and routes files when given;
    /// otherwise the demo's under `--demo`, and no preamble and no route floors (every
    /// capability offered everywhere) without it.
    pub fn configured(config: &ServerConfig, files: &AppFiles) -> Result<Self, ModelSetupError> {
        let floors = match (&files.routes, config.demo) {
            (Some(routes), _) => routes.clone(),
            (None, true) => crate::demo::route_floors(),
            (None, false) => RouteFloors::new(SHELL_SCOPE, Vec::<(String, Vec<String>)>::new()),
        };
        let prompt = match (&files.prompt, config.demo) {
            (Some(prompt), _) => prompt.as_str(),
            (None, true) => prompt::DEMO_APP_PROMPT,
            (None, false) => "",
        };
        Self::for_app(config, floors, prompt)
    }
}

/// Mounts the doors into the step engine (`POST /agent/chat`, `/agent/ai-sdk`, `/agent/ag-ui`) and
/// `GET /agent/manifest` with their configuration (for `http::serve_with`/`app_with`).
pub fn mount(chat: ChatConfig) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
    move |cfg: &mut web::ServiceConfig| {
        cfg.app_data(web::Data::new(chat.clone()))
            .service(crate::http::resource("/agent/chat").route(web::post().to(agent_chat)))
            .service(
                crate::http::resource("/agent/ai-sdk").route(web::post().to(ai_sdk::agent_ai_sdk)),
            )
            .service(
                crate::http::resource("/agent/ag-ui").route(web::post().to(ag_ui::agent_ag_ui)),
            )
            .service(
                crate::http::resource("/agent/manifest")
                    .route(web::get().to(manifest::agent_manifest)),
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apps_prompt_and_routes_replace_the_demos_which_need_demo() {
        let mut config = ServerConfig::for_tests("0123456789abcdef0123456789abcdef");
        let none = AppFiles::default();
        let demo = ChatConfig::configured(&config, &none).unwrap();
        assert_eq!(&*demo.app_prompt, prompt::DEMO_APP_PROMPT);
        assert_eq!(*demo.floors, crate::demo::route_floors());

        config.demo = false;
        let bare = ChatConfig::configured(&config, &none).unwrap();
        assert_eq!(&*bare.app_prompt, "");
        assert!(bare.floors.routes.is_empty());
        assert!(
            prompt::system_prompt(&bare.app_prompt, dpas_protocol::CatalogMode::Direct)
                .starts_with("You work inside a web application")
        );

        let files = AppFiles {
            capabilities: None,
            prompt: Some("You help with todos.".to_owned()),
            routes: Some(RouteFloors::new(SHELL_SCOPE, [("/todos", vec!["todos"])])),
        };
        for demo in [false, true] {
            config.demo = demo;
            let app = ChatConfig::configured(&config, &files).unwrap();
            assert_eq!(&*app.app_prompt, "You help with todos.");
            assert_eq!(app.floors.floor("/todos"), ["app", "todos"]);
            assert!(app.floors.floor("/receivables/pending").is_empty());
        }
    }

    #[test]
    fn scripted_specs_build_their_models() {
        assert!(models_for(&ModelSpec::None).unwrap().is_empty());
        assert_eq!(
            models_for(&ModelSpec::Scripted { script: None })
                .unwrap()
                .ids(),
            ["scripted"]
        );

        let dir = std::env::temp_dir().join(format!("dpas-script-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json");
        std::fs::write(&good, r#"{"turns": [{"text": ["hi"]}]}"#).unwrap();
        let set = models_for(&ModelSpec::Scripted { script: Some(good) }).unwrap();
        assert_eq!(set.ids(), ["scripted"]);
        let bad = dir.join("bad.json");
        std::fs::write(&bad, r#"{"turns": [{"nonsense": true}]}"#).unwrap();
        assert!(matches!(
            models_for(&ModelSpec::Scripted { script: Some(bad) }),
            Err(ModelSetupError::Script(_))
        ));
        let missing = dir.join("missing.json");
        assert!(matches!(
            models_for(&ModelSpec::Scripted {
                script: Some(missing)
            }),
            Err(ModelSetupError::Script(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
