//! The configured models: which providers `/agent/chat` may run, and how a request's
//! `modelId` picks among them (reference-behaviour K6).

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use dpas_model::scripted::{Script, ScriptedProvider};
use dpas_model::{ModelProvider, VendorSpec};

/// The models this server runs. Empty means no model is configured (503).
#[derive(Clone, Default)]
pub struct ModelSet {
    providers: Vec<Arc<dyn ModelProvider>>,
}

impl std::fmt::Debug for ModelSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.ids()).finish()
    }
}

impl ModelSet {
    /// The first provider is the default.
    pub fn new(providers: Vec<Arc<dyn ModelProvider>>) -> Self {
        Self { providers }
    }

    pub fn none() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }

    /// Ids as listed by `GET /api/session`, default first.
    pub fn ids(&self) -> Vec<&str> {
        self.providers.iter().map(|p| p.id()).collect()
    }

    pub fn default_id(&self) -> Option<&str> {
        self.providers.first().map(|p| p.id())
    }

    /// One set of several: the first set's default stays the default.
    pub fn join(sets: impl IntoIterator<Item = ModelSet>) -> Self {
        Self {
            providers: sets.into_iter().flat_map(|set| set.providers).collect(),
        }
    }

    /// Whether `id` names a model of this set. The reference's mock id, `mock/scripted` (its
    /// recorded traffic asks for it), names our scripted model.
    pub fn serves(&self, id: &str) -> bool {
        self.named(id).is_some()
    }

    fn named(&self, id: &str) -> Option<&Arc<dyn ModelProvider>> {
        let id = if id == "mock/scripted" {
            "scripted"
        } else {
            id
        };
        self.providers.iter().find(|p| p.id() == id)
    }

    /// The provider a request runs on: the one its `modelId` names, else the default (the
    /// caller reports a named model that is not served); `None` when no model is configured.
    pub fn choose(&self, model_id: Option<&str>) -> Option<Arc<dyn ModelProvider>> {
        let named = model_id.and_then(|id| self.named(id));
        named.or_else(|| self.providers.first()).cloned()
    }
}

/// The model the chat endpoint should run, as given by `--model`: the one parse of a model
/// spec. A vendor's model is `dpas_model`'s [`VendorSpec`] (its vendor names, its
/// `<vendor>/<model>` id), which builds the provider itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// The golden-scenario scripted model, optionally driven by a script file.
    Scripted { script: Option<PathBuf> },
    /// `openai:<model>` or `anthropic:<model>`.
    Vendor(VendorSpec),
    /// Explicitly no model: the chat endpoint answers 503 `MODEL_NOT_CONFIGURED`.
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid model spec {spec:?}: expected scripted, scripted:<file>, openai:<model>, anthropic:<model> or none")]
pub struct ModelSpecError {
    pub spec: String,
}

impl FromStr for ModelSpec {
    type Err = ModelSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            None if s == "scripted" => Ok(Self::Scripted { script: None }),
            None if s == "none" => Ok(Self::None),
            Some(("scripted", file)) if !file.is_empty() => Ok(Self::Scripted {
                script: Some(PathBuf::from(file)),
            }),
            _ => VendorSpec::parse(s)
                .map(Self::Vendor)
                .map_err(|_| ModelSpecError { spec: s.to_owned() }),
        }
    }
}

impl std::fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scripted { script: None } => f.write_str("scripted"),
            Self::Scripted { script: Some(p) } => write!(f, "scripted:{}", p.display()),
            Self::Vendor(spec) => spec.fmt(f),
            Self::None => f.write_str("none"),
        }
    }
}

impl ModelSpec {
    /// The ids the model is listed under once it serves (`ModelSet::ids`); empty for none.
    pub fn model_ids(&self) -> Vec<String> {
        match self {
            Self::None => Vec::new(),
            Self::Scripted { .. } => vec!["scripted".to_owned()],
            Self::Vendor(spec) => vec![spec.provider_id()],
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k6_falls_back_to_the_default() {
        let set = ModelSet::new(vec![ScriptedProvider::golden().into_arc()]);
        assert_eq!(set.ids(), vec!["scripted"]);
        assert_eq!(set.choose(Some("openai/gpt-x")).unwrap().id(), "scripted");
        assert_eq!(set.choose(None).unwrap().id(), "scripted");
        assert!(ModelSet::none().choose(Some("scripted")).is_none());
        assert!(set.serves("mock/scripted") && set.serves("scripted"));
        assert!(!set.serves("openai/gpt-x"));
    }

    #[test]
    fn k6_a_request_picks_among_several() {
        // Built, never called: no request leaves the test.
        let env =
            |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".to_owned());
        let vendor = |spec: &str| {
            dpas_model::provider_from_spec(spec, &env, dpas_model::HttpSettings::default()).unwrap()
        };
        let set = ModelSet::join([
            ModelSet::new(vec![vendor("openai:gpt-a")]),
            ModelSet::new(vec![vendor("openai:gpt-b")]),
        ]);
        assert_eq!(set.ids(), vec!["openai/gpt-a", "openai/gpt-b"]);
        assert_eq!(set.default_id(), Some("openai/gpt-a"));
        assert_eq!(
            set.choose(Some("openai/gpt-b")).unwrap().id(),
            "openai/gpt-b"
        );
        assert_eq!(set.choose(Some("nope")).unwrap().id(), "openai/gpt-a");
        assert_eq!(set.choose(None).unwrap().id(), "openai/gpt-a");
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
