//! The published JSON Schema of the capabilities file (`host-server/schema/capabilities.schema.json`),
//! compiled here from the file on disk, as an editor reads it, against the loader: every
//! capabilities file and documented example in the repository passes both, and each kind of
//! invalid file fails both, at the same place.

use std::path::{Path, PathBuf};

use host_server::appfiles::capabilities::{CapabilityFile, Format};
use serde_json::{json, Value};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn published_schema() -> jsonschema::Validator {
    let text =
        std::fs::read_to_string(repository().join("host-server/schema/capabilities.schema.json"))
            .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the published schema compiles")
}

/// The JSON Pointers (`/` for the root) the schema refuses in `file`.
fn schema_refuses(schema: &jsonschema::Validator, file: &Value) -> Vec<String> {
    schema
        .iter_errors(file)
        .map(|e| match e.instance_path().to_string() {
            at if at.is_empty() => "/".to_owned(),
            at => at,
        })
        .collect()
}

/// Every `capabilities*.json` / `capabilities*.toml` under the repository, outside build output.
fn capability_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![repository()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                let skip = [
                    "target",
                    "node_modules",
                    "dist",
                    "pkg",
                    ".git",
                    ".data",
                    ".next",
                ];
                if !skip.contains(&name.as_str()) {
                    dirs.push(path);
                }
            } else if name.starts_with("capabilities")
                && (name.ends_with(".json") || name.ends_with(".toml"))
                && !name.ends_with(".schema.json")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_capabilities_file_in_the_repository_passes_the_schema_and_the_loader() {
    let schema = published_schema();
    let files = capability_files();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(repository()).unwrap().display().to_string())
        .collect();
    for expected in [
        "host-server/examples/app/capabilities.json",
        "host-server/examples/app/capabilities.toml",
        "examples/todo-backend/capabilities.json",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let value: Value = match Format::of(path) {
            Format::Toml => toml::from_str(&text).unwrap(),
            Format::Json => serde_json::from_str(&text).unwrap(),
        };
        assert_eq!(
            schema_refuses(&schema, &value),
            Vec::<String>::new(),
            "{}",
            path.display()
        );
        assert!(
            value["$schema"]
                .as_str()
                .is_some_and(|s| s.ends_with("schema/capabilities.schema.json")),
            "{} names the schema in \"$schema\"",
            path.display()
        );
        CapabilityFile::load(path).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The `json` blocks of the guides that are capabilities files pass the schema too.
#[test]
fn the_documented_examples_pass_the_schema() {
    let schema = published_schema();
    let mut checked = 0;
    for doc in [
        "docs/concepts.md",
        "host-server/README.md",
        "host-server/REFERENCE.md",
    ] {
        let text = std::fs::read_to_string(repository().join(doc)).unwrap();
        for block in text.split("```json\n").skip(1) {
            let block = &block[..block.find("```").unwrap()];
            let value: Value = serde_json::from_str(block).unwrap_or_else(|e| panic!("{doc}: {e}"));
            if value.get("capabilities").is_none() {
                continue;
            }
            assert_eq!(
                schema_refuses(&schema, &value),
                Vec::<String>::new(),
                "{doc}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "{checked} examples");
    // The kanban example of docs/concepts.md is a whole file: it loads as well.
    let concepts = std::fs::read_to_string(repository().join("docs/concepts.md")).unwrap();
    let block = concepts.split("```json\n").nth(1).unwrap();
    let block = &block[..block.find("```").unwrap()];
    CapabilityFile::parse(Path::new("concepts.json"), block, Format::Json)
        .unwrap_or_else(|e| panic!("{e}"));
}

fn capability() -> Value {
    json!({
        "id": "archive-done-cards",
        "description": "Archives the Done cards.",
        "sideEffect": "destructive",
        "risk": "medium",
        "tags": ["board"],
        "expose": ["aiSdk", "direct"],
        "inputSchema": {"type": "object", "properties": {"board": {"type": "string"}}, "required": ["board"]},
        "http": {"url": "http://127.0.0.1:3000/boards/{board}/archive", "timeoutMs": 5000}
    })
}

fn file_with(edit: impl FnOnce(&mut Value)) -> Value {
    let mut file = json!({
        "$schema": "../host-server/schema/capabilities.schema.json",
        "capabilities": [capability()],
        "policies": [{"name": "ask", "requireApproval": {"ids": ["archive-done-cards"]}}]
    });
    edit(&mut file);
    file
}

#[test]
fn an_invalid_file_fails_the_schema_where_the_loader_fails_it() {
    let schema = published_schema();
    let load = |file: &Value| {
        CapabilityFile::parse(
            Path::new("caps.json"),
            &serde_json::to_string_pretty(file).unwrap(),
            Format::Json,
        )
    };
    let valid = file_with(|_| {});
    assert_eq!(schema_refuses(&schema, &valid), Vec::<String>::new());
    assert!(!load(&valid).unwrap_or_else(|e| panic!("{e}")).capabilities[0].untrusted);
    // U1: an operation that returns untrusted content says so.
    let marked = file_with(|f| f["capabilities"][0]["untrusted"] = json!(true));
    assert_eq!(schema_refuses(&schema, &marked), Vec::<String>::new());
    assert!(load(&marked).unwrap_or_else(|e| panic!("{e}")).capabilities[0].untrusted);

    // (what is wrong, the edit that makes it, where the schema says it is, what the loader says)
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &str, &str)> = vec![
        (
            "an unknown top-level field",
            Box::new(|f| f["extends"] = json!("base.json")),
            "/",
            "unknown field `extends`",
        ),
        (
            "an unknown capability field",
            Box::new(|f| f["capabilities"][0]["retries"] = json!(3)),
            "/capabilities/0",
            "unknown field `retries`",
        ),
        (
            "a missing http target",
            Box::new(|f| {
                f["capabilities"][0].as_object_mut().unwrap().remove("http");
            }),
            "/capabilities/0",
            "missing field `http`",
        ),
        (
            "an untrusted mark that is not a boolean",
            Box::new(|f| f["capabilities"][0]["untrusted"] = json!("yes")),
            "/capabilities/0/untrusted",
            "invalid type: string \"yes\", expected a boolean",
        ),
        (
            "an unknown side effect",
            Box::new(|f| f["capabilities"][0]["sideEffect"] = json!("writes")),
            "/capabilities/0/sideEffect",
            "unknown variant `writes`",
        ),
        (
            "an unknown risk",
            Box::new(|f| f["capabilities"][0]["risk"] = json!("severe")),
            "/capabilities/0/risk",
            "unknown variant `severe`",
        ),
        (
            "an unknown surface",
            Box::new(|f| f["capabilities"][0]["expose"] = json!(["web"])),
            "/capabilities/0/expose/0",
            "unknown variant `web`",
        ),
        (
            "an id a model provider would refuse",
            Box::new(|f| f["capabilities"][0]["id"] = json!("archive done")),
            "/capabilities/0/id",
            "at /capabilities/0/id:",
        ),
        (
            "an empty description",
            Box::new(|f| f["capabilities"][0]["description"] = json!("")),
            "/capabilities/0/description",
            "at /capabilities/0/description:",
        ),
        (
            "a tag given twice",
            Box::new(|f| f["capabilities"][0]["tags"] = json!(["board", "board"])),
            "/capabilities/0/tags",
            "at /capabilities/0/tags:",
        ),
        (
            "an input that is not an object",
            Box::new(|f| f["capabilities"][0]["inputSchema"] = json!({"type": "array"})),
            "/capabilities/0/inputSchema/type",
            "at /capabilities/0/inputSchema/type:",
        ),
        (
            "a URL that is not http(s)",
            Box::new(|f| f["capabilities"][0]["http"]["url"] = json!("ftp://127.0.0.1/archive")),
            "/capabilities/0/http/url",
            "at /capabilities/0/http/url:",
        ),
        (
            "a deadline past five minutes",
            Box::new(|f| f["capabilities"][0]["http"]["timeoutMs"] = json!(300_001)),
            "/capabilities/0/http/timeoutMs",
            "at /capabilities/0/http/timeoutMs:",
        ),
        (
            "more capabilities than one step may offer",
            Box::new(|f| {
                let many: Vec<Value> = (0..129)
                    .map(|i| {
                        let mut c = capability();
                        c["id"] = json!(format!("c{i}"));
                        c
                    })
                    .collect();
                f["capabilities"] = json!(many);
                f["policies"] = json!([]);
            }),
            "/capabilities",
            "at /capabilities:",
        ),
        (
            "a policy with two rules",
            Box::new(|f| f["policies"][0]["hideUnlessRole"] = json!({"roles": ["editor"]})),
            "/policies/0",
            "at /policies/0:",
        ),
        (
            "a policy with no rule",
            Box::new(|f| f["policies"][0] = json!({"name": "nothing"})),
            "/policies/0",
            "at /policies/0:",
        ),
        (
            "a role list that is empty",
            Box::new(|f| f["policies"][0] = json!({"name": "p", "hideUnlessRole": {"roles": []}})),
            "/policies/0/hideUnlessRole/roles",
            "at /policies/0/hideUnlessRole/roles:",
        ),
    ];
    for (what, edit, at, says) in cases {
        let file = file_with(edit);
        let refused = schema_refuses(&schema, &file);
        assert!(
            refused.iter().any(|p| p == at),
            "{what}: the schema refuses {refused:?}, not {at}"
        );
        let err = load(&file).expect_err(what).to_string();
        assert!(err.contains(says), "{what}: {err}");
    }

    // What no schema can say: the schema passes these, the loader refuses them by name.
    let beyond: Vec<(&str, Edit, &str)> = vec![
        (
            "an id used twice",
            Box::new(|f| f["capabilities"] = json!([capability(), capability()])),
            "capability \"archive-done-cards\": the id is used twice",
        ),
        (
            "a placeholder that is not a required property",
            Box::new(|f| {
                f["capabilities"][0]["http"]["url"] = json!("http://127.0.0.1:3000/{team}/archive")
            }),
            "capability \"archive-done-cards\": http.url placeholder {team}",
        ),
        (
            "an input schema no validator can compile",
            Box::new(|f| {
                f["capabilities"][0]["inputSchema"]["properties"]["board"] = json!({"type": "text"})
            }),
            "inputSchema is not a usable JSON Schema",
        ),
        (
            "a policy naming an id the file lacks",
            Box::new(|f| f["policies"][0]["requireApproval"]["ids"] = json!(["archive-all"])),
            "policy \"ask\": names \"archive-all\", which is not a capability of this file",
        ),
    ];
    for (what, edit, says) in beyond {
        let file = file_with(edit);
        assert_eq!(
            schema_refuses(&schema, &file),
            Vec::<String>::new(),
            "{what}"
        );
        let err = load(&file).expect_err(what).to_string();
        assert!(err.contains(says), "{what}: {err}");
    }
}
