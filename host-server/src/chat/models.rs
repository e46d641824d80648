//! The configured models: which providers `/agent/chat` may run, and how a request's
//! `modelId` picks among them (reference-behaviour K6).

use std::sync::Arc;

use dpas_model::ModelProvider;

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

#[cfg(test)]
mod tests {
    use super::*;
    use dpas_model::scripted::ScriptedProvider;

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
}
