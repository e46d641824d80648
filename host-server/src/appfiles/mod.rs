//! The app's own configuration files: capabilities executed over HTTP by the app's backend
//! with their policies (`--capabilities`), the system prompt's preamble (`--prompt-file`) and
//! the route → scope-floor table (`--routes`). A file that cannot be used fails the start
//! with its name, the line where it can, and the reason.

pub mod capabilities;
pub mod executor;
mod locate;
pub mod policies;
mod spec;
mod text;

use std::path::Path;

use dpas_protocol::RouteFloors;

pub use executor::{ActorSigner, HttpExecutor};
pub use spec::CapabilityFile;
use text::{json_error, read_text};
pub use text::{FileError, MAX_TEXT_FILE_BYTES};

use crate::config::ServerConfig;

/// The shell scope token, as the browser package prepends it (`routeScopes`).
pub const SHELL_SCOPE: &str = "app";

/// The app's preamble of the system prompt: the file's text, trimmed; never empty.
pub fn load_prompt(path: &Path) -> Result<String, FileError> {
    let text = read_text(path)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(FileError::new(path, "the prompt file is empty"));
    }
    Ok(text.to_owned())
}

/// The routes file: the JSON object the browser package takes as `routeScopes`, route →
/// scope floor (`{"/todos": ["todos"], "/settings": ["account"]}`); `app` is prepended to
/// every non-empty floor, as the package does.
pub fn load_routes(path: &Path) -> Result<RouteFloors, FileError> {
    let text = read_text(path)?;
    parse_routes(path, &text)
}

/// A routes file's text (`path` names it in errors), as [`load_routes`] reads it.
pub fn parse_routes(path: &Path, text: &str) -> Result<RouteFloors, FileError> {
    let table: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| json_error(path, &e))?;
    let mut routes = Vec::with_capacity(table.len());
    for (route, tokens) in table {
        let refuse = |why: &str| FileError::new(path, format!("route {route:?}: {why}"));
        if !route.starts_with('/') {
            return Err(refuse("a route is a pathname starting with '/'"));
        }
        let tokens: Vec<String> = serde_json::from_value(tokens)
            .map_err(|_| refuse("the scope floor must be an array of strings"))?;
        if tokens.iter().any(|t| t.trim().is_empty()) {
            return Err(refuse("a scope token cannot be empty"));
        }
        routes.push((route, tokens));
    }
    Ok(RouteFloors::new(SHELL_SCOPE, routes))
}

/// Everything `--capabilities`, `--prompt-file` and `--routes` name, loaded and checked.
#[derive(Debug, Default)]
pub struct AppFiles {
    pub capabilities: Option<CapabilityFile>,
    pub prompt: Option<String>,
    pub routes: Option<RouteFloors>,
}

impl AppFiles {
    /// Loads the files the configuration names (none named: nothing loaded).
    pub fn load(config: &ServerConfig) -> Result<Self, FileError> {
        Ok(Self {
            capabilities: config
                .capabilities_file
                .as_deref()
                .map(CapabilityFile::load)
                .transpose()?,
            prompt: config.prompt_file.as_deref().map(load_prompt).transpose()?,
            routes: config.routes_file.as_deref().map(load_routes).transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::text::line_column;
    use super::*;

    #[test]
    fn positions_are_one_based() {
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("ab\ncd", 99), (2, 3));
    }

    #[test]
    fn routes_are_the_packages_route_scopes() {
        let p = Path::new("routes.json");
        let floors = parse_routes(p, r#"{"/todos": ["todos"], "/about": []}"#).unwrap();
        assert_eq!(floors.floor("/todos"), ["app", "todos"]);
        assert_eq!(floors.floor("/todos/42"), ["app", "todos"]);
        assert_eq!(floors.floor("/about"), ["app"]);
        assert!(floors.floor("/elsewhere").is_empty());
        let err = parse_routes(p, "{\n  \"/todos\": [\"todos\",]\n}").unwrap_err();
        assert!(err.to_string().starts_with("routes.json: line 2,"), "{err}");
        let err = parse_routes(p, r#"{"todos": ["todos"]}"#).unwrap_err();
        assert!(err.message.contains("starting with '/'"), "{err}");
        let err = parse_routes(p, r#"{"/todos": "todos"}"#).unwrap_err();
        assert!(err.message.contains("array of strings"), "{err}");
        let err = parse_routes(p, r#"{"/todos": [""]}"#).unwrap_err();
        assert!(err.message.contains("cannot be empty"), "{err}");
    }
}
