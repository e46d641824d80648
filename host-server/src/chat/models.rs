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

    /// The provider a request runs on: the one its `modelId` names, silently the default
    /// when it names another or none; `None` when no model is configured.
    pub fn choose(&self, model_id: Option<&str>) -> Option<Arc<dyn ModelProvider>> {
        let named = model_id.and_then(|id| self.providers.iter().find(|p| p.id() == id));
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
    }
}
