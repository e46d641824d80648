//! The JSON Schema subset the Agent Surface accepts (agent-surface §3.3), its validator,
//! and `reduceInputSchema` (§3.4).
//!
//! Accepted: `type` (one or a list), `enum`, `const`, `properties`, `required`, boolean
//! `additionalProperties`, `items`, `minItems`, `maxItems`, `uniqueItems`, `minLength`,
//! `maxLength`, `pattern`, `format` (date-time, date, uuid, email, uri), numeric bounds,
//! `multipleOf`, `anyOf`, `$defs` with internal `$ref`, and annotations. Anything else,
//! nesting deeper than 8 or a schema over 16 kB is refused as unsupported.

use crate::canonical::{json_text, to_canonical_string};
use crate::pattern::PatternEngine;
use dpas_protocol::json::object;
use dpas_protocol::json::{Map, Value};

/// Deepest schema nesting accepted below the root.
pub const MAX_SCHEMA_DEPTH: usize = 8;
/// Largest serialized schema accepted, in bytes.
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;

/// Sentence appended to an overridable bound key's description.
pub const OVERRIDABLE_NOTE: &str =
    "Defaults to the current UI value at execution time when omitted.";

const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
];
const TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];
const FORMATS: &[&str] = &["date-time", "date", "uuid", "email", "uri"];
const NUMBER_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];
const COUNT_KEYWORDS: &[&str] = &["minItems", "maxItems", "minLength", "maxLength"];

/// The closed empty object schema (observations, and inputs with nothing left to fill).
pub fn empty_object_schema() -> Value {
    object([
        ("type", "object".into()),
        ("properties", Value::Object(Map::new())),
        ("additionalProperties", false.into()),
    ])
}

/// One validation failure: a JSON Pointer into the input and an agent-safe message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub path: String,
    pub message: String,
}

impl Issue {
    pub fn to_value(&self) -> Value {
        object([
            ("path", self.path.as_str().into()),
            ("message", self.message.as_str().into()),
        ])
    }
}

/// Checks that a schema stays inside the supported subset.
pub fn check_schema(schema: &Value, patterns: &dyn PatternEngine) -> Result<(), String> {
    let size = json_text(schema).len();
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "schema is {size} bytes, over the limit of {MAX_SCHEMA_BYTES}"
        ));
    }
    check_node(schema, schema, 0, patterns)
}

fn check_subschemas<'a>(
    children: impl IntoIterator<Item = &'a Value>,
    root: &Value,
    depth: usize,
    patterns: &dyn PatternEngine,
) -> Result<(), String> {
    children
        .into_iter()
        .try_for_each(|child| check_node(child, root, depth + 1, patterns))
}

fn check_node(
    schema: &Value,
    root: &Value,
    depth: usize,
    patterns: &dyn PatternEngine,
) -> Result<(), String> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
    }
    let map = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(map) => map,
        _ => return Err("a schema must be an object or a boolean".into()),
    };
    for (key, value) in map {
        let key = key.as_str();
        let ok = match key {
            _ if ANNOTATIONS.contains(&key) => true,
            "type" => match value {
                Value::String(t) => TYPES.contains(&t.as_str()),
                Value::Array(ts) => ts
                    .iter()
                    .all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t))),
                _ => false,
            },
            "enum" => value.is_array(),
            "const" => true,
            "required" => value
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string)),
            "additionalProperties" | "uniqueItems" => value.is_boolean(),
            "pattern" => match value.as_str() {
                Some(source) => patterns.check(source).map(|_| true)?,
                None => false,
            },
            "format" => value.as_str().is_some_and(|f| FORMATS.contains(&f)),
            _ if NUMBER_KEYWORDS.contains(&key) => value.is_number(),
            _ if COUNT_KEYWORDS.contains(&key) => value.is_u64(),
            "properties" | "$defs" => match value.as_object() {
                Some(children) => {
                    check_subschemas(children.values(), root, depth, patterns).map(|_| true)?
                }
                None => false,
            },
            "items" => check_node(value, root, depth + 1, patterns).map(|_| true)?,
            "anyOf" => match value.as_array() {
                Some(branches) if !branches.is_empty() => {
                    check_subschemas(branches, root, depth, patterns).map(|_| true)?
                }
                _ => false,
            },
            "$ref" => value.as_str().and_then(|r| resolve_ref(root, r)).is_some(),
            _ => {
                return Err(format!(
                    "keyword `{key}` is outside the supported schema subset"
                ))
            }
        };
        if !ok {
            return Err(format!("keyword `{key}` has an unsupported value"));
        }
    }
    Ok(())
}

fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let name = reference.strip_prefix("#/$defs/")?;
    root.get("$defs")?.get(name)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(number: &dpas_protocol::json::Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match (expected, value) {
        ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => is_integer(n),
        _ => expected == type_name(value),
    }
}

fn pointer(path: &str, segment: &str) -> String {
    // By hand: `str::replace` twice and `format!` were a copy of each on the browser's path.
    let mut out = String::with_capacity(path.len() + 1 + segment.len());
    out.push_str(path);
    out.push('/');
    for c in segment.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// JavaScript string length (UTF-16 code units), which the limits are written against.
fn js_length(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

/// `YYYY-MM-DD`, a real calendar day. Matched as bytes against its shape: splitting and
/// collecting the parts and parsing them as numbers was larger code for the same rule.
fn is_date(text: &str) -> bool {
    let &[y1, y2, y3, y4, b'-', m1, m2, b'-', d1, d2] = text.as_bytes() else {
        return false;
    };
    let digits = [y1, y2, y3, y4, m1, m2, d1, d2];
    if !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let number = |digits: &[u8]| {
        digits
            .iter()
            .fold(0u32, |n, d| n * 10 + u32::from(d - b'0'))
    };
    let (year, month, day) = (
        number(&digits[..4]),
        number(&digits[4..6]),
        number(&digits[6..]),
    );
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

fn is_time(text: &str) -> bool {
    // Read as bytes: every separator is ASCII, and a byte range of untrusted text can end
    // inside a character (`+aé…`), where slicing the `str` would panic. The first `Z`, `z`,
    // `+` or `-` starts the offset; a byte search, not `str::find` with a set of `char`s
    // (a searcher of its own in the wasm).
    let bytes = text.as_bytes();
    let Some((clock, offset)) = bytes
        .iter()
        .position(|b| matches!(b, b'Z' | b'z' | b'+' | b'-'))
        .and_then(|at| bytes.split_at_checked(at))
    else {
        return false;
    };
    let offset_ok = match offset {
        [b'Z' | b'z'] => true,
        [_, h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()),
        _ => false,
    };
    let (hms, fraction): (&[u8], &[u8]) = match clock.iter().position(|&b| b == b'.') {
        Some(at) => (&clock[..at], &clock[at + 1..]),
        None => (clock, b"0"),
    };
    let &[h1, h2, b':', m1, m2, b':', s1, s2] = hms else {
        return false;
    };
    offset_ok
        && [h1, h2, m1, m2, s1, s2].iter().all(u8::is_ascii_digit)
        && !fraction.is_empty()
        && fraction.iter().all(u8::is_ascii_digit)
        && [h1, h2] < *b"24"
        && [m1, m2] < *b"60"
        && [s1, s2] <= *b"60"
}

fn format_matches(format: &str, text: &str) -> bool {
    match format {
        "date" => is_date(text),
        "date-time" => text
            .bytes()
            .position(|b| b == b'T' || b == b't')
            .and_then(|at| Some((text.get(..at)?, text.get(at + 1..)?)))
            .is_some_and(|(date, time)| is_date(date) && is_time(time)),
        // Five groups of 8, 4, 4, 4 and 12 hex digits joined by `-`.
        "uuid" => {
            text.len() == 36
                && text.bytes().enumerate().all(|(i, b)| match i {
                    8 | 13 | 18 | 23 => b == b'-',
                    _ => b.is_ascii_hexdigit(),
                })
        }
        "email" => dpas_protocol::text::split_once(text, b'@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && !domain.is_empty()
                && !dpas_protocol::text::contains(domain, b'@')
                && !text.chars().any(char::is_whitespace)
        }),
        "uri" => dpas_protocol::text::split_once(text, b':').is_some_and(|(scheme, rest)| {
            let mut bytes = scheme.bytes();
            bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
                && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                && !rest.chars().any(char::is_whitespace)
        }),
        _ => true,
    }
}

/// Validates `value` against `schema` (already accepted by [`check_schema`]).
pub fn validate(schema: &Value, value: &Value, patterns: &dyn PatternEngine) -> Vec<Issue> {
    let mut issues = Vec::new();
    validate_node(schema, schema, value, "", &mut issues, patterns);
    issues
}

fn issue(issues: &mut Vec<Issue>, path: &str, message: String) {
    issues.push(Issue {
        path: path.to_owned(),
        message,
    });
}

/// An issue whose message is `parts` joined: one `concat` where a `format!` at each site
/// built its own arguments.
fn issue_of(issues: &mut Vec<Issue>, path: &str, parts: &[&str]) {
    issue(issues, path, parts.concat());
}

fn validate_node(
    schema: &Value,
    root: &Value,
    value: &Value,
    path: &str,
    issues: &mut Vec<Issue>,
    patterns: &dyn PatternEngine,
) {
    let map = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return issue(issues, path, "No value is allowed here".into()),
        Value::Object(map) => map,
        _ => return,
    };
    if let Some(target) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        validate_node(target, root, value, path, issues, patterns);
    }
    if let Some(expected) = map.get("type") {
        let mut allowed: Vec<&str> = Vec::new();
        match expected {
            Value::String(t) => allowed.push(t),
            Value::Array(ts) => {
                for t in ts {
                    if let Some(t) = t.as_str() {
                        allowed.push(t);
                    }
                }
            }
            _ => {}
        }
        if !allowed.iter().any(|t| type_matches(t, value)) {
            // By hand: `[&str]::join` would be a second instance of `join` beside the
            // `[String]` one the other messages use (1 KB of the browser build).
            let mut message = String::from("Expected ");
            for (i, t) in allowed.iter().enumerate() {
                if i > 0 {
                    message.push_str(" or ");
                }
                message.push_str(t);
            }
            message.push_str(", received ");
            message.push_str(type_name(value));
            return issue(issues, path, message);
        }
    }
    if let Some(options) = map.get("enum").and_then(Value::as_array) {
        let canonical = to_canonical_string(value);
        if !options.iter().any(|o| to_canonical_string(o) == canonical) {
            let mut listed = Vec::with_capacity(options.len());
            for option in options {
                listed.push(json_text(option));
            }
            issue_of(issues, path, &["Expected one of ", &listed.join(", ")]);
        }
    }
    if let Some(expected) = map.get("const") {
        if to_canonical_string(expected) != to_canonical_string(value) {
            let expected = json_text(expected);
            issue_of(issues, path, &["Expected ", &expected]);
        }
    }
    if let Some(branches) = map.get("anyOf").and_then(Value::as_array) {
        if !branches
            .iter()
            .any(|branch| validate(&with_root(branch, root), value, patterns).is_empty())
        {
            issue(issues, path, "Matches none of the allowed shapes".into());
        }
    }
    match value {
        Value::Object(object) => validate_object(map, root, object, path, issues, patterns),
        Value::Array(items) => validate_array(map, root, items, path, issues, patterns),
        Value::String(text) => validate_string(map, text, path, issues, patterns),
        Value::Number(number) => validate_number(map, number.as_f64().unwrap_or(0.0), path, issues),
        _ => {}
    }
}

/// A branch schema that can still resolve `$ref`s against the root's `$defs`.
fn with_root(branch: &Value, root: &Value) -> Value {
    match (branch, root.get("$defs")) {
        (Value::Object(map), Some(defs)) if !map.contains_key("$defs") => {
            let mut map = map.clone();
            map.insert("$defs".into(), defs.clone());
            Value::Object(map)
        }
        _ => branch.clone(),
    }
}

fn validate_object(
    map: &Map<String, Value>,
    root: &Value,
    object: &Map<String, Value>,
    path: &str,
    issues: &mut Vec<Issue>,
    patterns: &dyn PatternEngine,
) {
    let properties = map.get("properties").and_then(Value::as_object);
    for required in map
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(key) = required.as_str().filter(|key| !object.contains_key(*key)) {
            issue(issues, &pointer(path, key), "Required".into());
        }
    }
    for (key, item) in object {
        match properties.and_then(|p| p.get(key)) {
            Some(property) => {
                validate_node(property, root, item, &pointer(path, key), issues, patterns)
            }
            None if map.get("additionalProperties") == Some(&Value::Bool(false)) => {
                issue_of(
                    issues,
                    &pointer(path, key),
                    &["Unrecognized key \"", key, "\""],
                );
            }
            None => {}
        }
    }
}

/// `minItems`/`maxItems` or `minLength`/`maxLength` against a count.
fn check_count(
    map: &Map<String, Value>,
    [min_key, max_key]: [&str; 2],
    count: u64,
    what: &str,
    unit: &str,
    path: &str,
    issues: &mut Vec<Issue>,
) {
    if let Some(min) = map
        .get(min_key)
        .and_then(Value::as_u64)
        .filter(|&min| count < min)
    {
        issue(
            issues,
            path,
            format!("{what} must contain at least {min} {unit}"),
        );
    }
    if let Some(max) = map
        .get(max_key)
        .and_then(Value::as_u64)
        .filter(|&max| count > max)
    {
        issue(
            issues,
            path,
            format!("{what} must contain at most {max} {unit}"),
        );
    }
}

fn validate_array(
    map: &Map<String, Value>,
    root: &Value,
    items: &[Value],
    path: &str,
    issues: &mut Vec<Issue>,
    patterns: &dyn PatternEngine,
) {
    let count = items.len() as u64;
    check_count(
        map,
        ["minItems", "maxItems"],
        count,
        "Array",
        "item(s)",
        path,
        issues,
    );
    if map.get("uniqueItems") == Some(&Value::Bool(true)) {
        let mut seen = Vec::with_capacity(items.len());
        for item in items {
            seen.push(to_canonical_string(item));
        }
        dpas_protocol::sort::sort_stable(&mut seen, |a, b| a < b);
        if seen.windows(2).any(|pair| pair[0] == pair[1]) {
            issue(issues, path, "Array items must be unique".into());
        }
    }
    if let Some(item_schema) = map.get("items") {
        for (index, item) in items.iter().enumerate() {
            validate_node(
                item_schema,
                root,
                item,
                &pointer(path, &index.to_string()),
                issues,
                patterns,
            );
        }
    }
}

fn validate_string(
    map: &Map<String, Value>,
    text: &str,
    path: &str,
    issues: &mut Vec<Issue>,
    patterns: &dyn PatternEngine,
) {
    let length = js_length(text);
    check_count(
        map,
        ["minLength", "maxLength"],
        length,
        "String",
        "character(s)",
        path,
        issues,
    );
    if let Some(source) = map.get("pattern").and_then(Value::as_str) {
        if !patterns.is_match(source, text) {
            issue_of(issues, path, &["String must match the pattern ", source]);
        }
    }
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        if !format_matches(format, text) {
            issue_of(issues, path, &["Invalid ", format]);
        }
    }
}

/// A numeric bound keyword, its wording, and whether a value satisfies it.
type BoundCheck = (&'static str, &'static str, fn(f64, f64) -> bool);

fn validate_number(map: &Map<String, Value>, number: f64, path: &str, issues: &mut Vec<Issue>) {
    // Bounds are written back as the schema spelled them (serde_json's number text), which
    // keeps float formatting machinery out of the wasm build.
    let checks: [BoundCheck; 4] = [
        ("minimum", "greater than or equal to", |n, b| n >= b),
        ("maximum", "less than or equal to", |n, b| n <= b),
        ("exclusiveMinimum", "greater than", |n, b| n > b),
        ("exclusiveMaximum", "less than", |n, b| n < b),
    ];
    for (key, words, holds) in checks {
        if let Some(bound) = map
            .get(key)
            .filter(|b| b.as_f64().is_some_and(|b| !holds(number, b)))
        {
            let bound = json_text(bound);
            issue_of(issues, path, &["Number must be ", words, " ", &bound]);
        }
    }
    if let Some(step) = map
        .get("multipleOf")
        .filter(|s| s.as_f64().is_some_and(|s| s > 0.0))
    {
        let quotient = number / step.as_f64().unwrap_or(1.0);
        if (quotient - quotient.round()).abs() > 1e-9 {
            let step = json_text(step);
            issue_of(issues, path, &["Number must be a multiple of ", &step]);
        }
    }
}

/// A key the UI binds into a procedure's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundField {
    pub path: String,
    /// Locked keys may not be supplied by the agent; overridable ones may.
    pub locked: bool,
}

/// `reduceInputSchema`: the agent-facing schema of a procedure with bound keys.
///
/// Locked keys leave `properties`; overridable keys stay with a note on their description;
/// every bound key leaves `required` (dropped when empty); with no properties left the
/// result is the closed empty object schema.
pub fn reduce_input_schema(schema: &Value, bound: &[BoundField]) -> Value {
    let mut reduced = schema.clone();
    let Some(map) = reduced.as_object_mut() else {
        return reduced;
    };
    if let Some(properties) = map.get_mut("properties").and_then(Value::as_object_mut) {
        for field in bound {
            if field.locked {
                properties.shift_remove(&field.path);
            } else if let Some(Value::Object(property)) = properties.get_mut(&field.path) {
                let note = match property.get("description").and_then(Value::as_str) {
                    Some(text) if !text.is_empty() => format!("{text} {OVERRIDABLE_NOTE}"),
                    _ => OVERRIDABLE_NOTE.to_owned(),
                };
                property.insert("description".into(), Value::from(note));
            }
        }
    }
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|key| {
            !bound
                .iter()
                .any(|field| key.as_str() == Some(field.path.as_str()))
        });
        if required.is_empty() {
            map.shift_remove("required");
        }
    }
    let has_properties = map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if !has_properties && !bound.is_empty() {
        return empty_object_schema();
    }
    reduced
}

#[cfg(test)]
mod tests {
    use super::{
        empty_object_schema, reduce_input_schema, BoundField, Issue, MAX_SCHEMA_BYTES,
        OVERRIDABLE_NOTE,
    };
    use crate::pattern::NativePatterns;
    use dpas_protocol::json::Value;
    use dpas_protocol::test_json as json;

    fn check_schema(schema: &Value) -> Result<(), String> {
        super::check_schema(schema, &NativePatterns)
    }

    fn validate(schema: &Value, value: &Value) -> Vec<Issue> {
        super::validate(schema, value, &NativePatterns)
    }

    fn date() -> Value {
        json!({ "type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$" })
    }

    fn chase_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "invoiceId": { "type": "integer", "exclusiveMinimum": 0 },
                "lastReminderDate": { "anyOf": [date(), { "type": "null" }] },
                "remindersSent": { "type": "integer", "minimum": 0, "maximum": 99 },
                "note": { "anyOf": [{ "type": "string", "maxLength": 500 }, { "type": "null" }] }
            },
            "required": ["invoiceId"],
            "additionalProperties": false
        })
    }

    fn paths(issues: &[Issue]) -> Vec<&str> {
        issues.iter().map(|i| i.path.as_str()).collect()
    }

    #[test]
    fn accepts_the_demo_schemas() {
        check_schema(&chase_schema()).unwrap();
        check_schema(&empty_object_schema()).unwrap();
        check_schema(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "key": { "type": ["string", "null"] },
                "direction": { "type": "string", "enum": ["asc", "desc"], "default": "desc" },
                "ids": { "type": "array", "items": { "type": "integer" }, "uniqueItems": true },
                "row": { "$ref": "#/$defs/row" }
            },
            "$defs": { "row": { "type": "object", "properties": { "id": { "type": "integer" } } } },
            "required": ["key"]
        }))
        .unwrap();
    }

    #[test]
    fn refuses_keywords_outside_the_subset() {
        for schema in [
            json!({ "oneOf": [{ "type": "string" }] }),
            json!({ "allOf": [] }),
            json!({ "not": {} }),
            json!({ "if": {}, "then": {} }),
            json!({ "patternProperties": {} }),
            json!({ "additionalProperties": { "type": "string" } }),
            json!({ "$ref": "https://example.invalid/s.json" }),
            json!({ "$ref": "#/$defs/missing" }),
            json!({ "type": "date" }),
            json!({ "format": "ipv4" }),
            json!({ "pattern": "(?=x)" }),
            json!({ "anyOf": [] }),
            json!("string"),
        ] {
            assert!(check_schema(&schema).is_err(), "{schema}");
        }
    }

    #[test]
    fn refuses_deep_and_large_schemas() {
        let mut deep = json!({ "type": "string" });
        for _ in 0..9 {
            deep = json!({ "type": "array", "items": deep });
        }
        assert!(check_schema(&deep).unwrap_err().contains("deeper"));
        let mut shallow = json!({ "type": "string" });
        for _ in 0..8 {
            shallow = json!({ "type": "array", "items": shallow });
        }
        check_schema(&shallow).unwrap();
        let big = json!({ "description": "x".repeat(MAX_SCHEMA_BYTES) });
        assert!(check_schema(&big).unwrap_err().contains("bytes"));
    }

    #[test]
    fn validates_objects_types_and_bounds() {
        let schema = chase_schema();
        assert!(validate(
            &schema,
            &json!({ "invoiceId": 3, "remindersSent": 2, "note": null })
        )
        .is_empty());
        let issues = validate(
            &schema,
            &json!({ "remindersSent": 100, "extra": 1, "note": 5 }),
        );
        assert_eq!(
            paths(&issues),
            ["/invoiceId", "/remindersSent", "/extra", "/note"]
        );
        assert_eq!(issues[0].message, "Required");
        assert_eq!(issues[2].message, "Unrecognized key \"extra\"");
        let issues = validate(
            &schema,
            &json!({ "invoiceId": 0, "lastReminderDate": "29/11/2026" }),
        );
        assert_eq!(paths(&issues), ["/invoiceId", "/lastReminderDate"]);
        assert_eq!(
            validate(&schema, &json!([]))[0].message,
            "Expected object, received array"
        );
        assert!(validate(&schema, &json!({ "invoiceId": 2.0 })).is_empty());
        assert!(!validate(&schema, &json!({ "invoiceId": 2.5 })).is_empty());
    }

    /// Every message written from parts, and pointers escaped as RFC 6901 says (`~` as `~0`,
    /// `/` as `~1`, other characters as they are).
    #[test]
    fn issue_messages_and_pointers_are_exact() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a/b": { "type": "string", "pattern": "^x+$" },
                "c~d": { "type": "string", "format": "email" },
                "é": { "const": [1, "two"] },
                "list": { "type": "array", "items": { "type": "string", "format": "uuid" } }
            },
            "additionalProperties": false
        });
        let issues = validate(
            &schema,
            &json!({ "a/b": "y", "c~d": "no", "é": [1], "list": ["ok", 2], "~/": 1 }),
        );
        let found: Vec<(&str, &str)> = issues
            .iter()
            .map(|i| (i.path.as_str(), i.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("/a~1b", "String must match the pattern ^x+$"),
                ("/c~0d", "Invalid email"),
                ("/é", "Expected [1,\"two\"]"),
                ("/list/0", "Invalid uuid"),
                ("/list/1", "Expected string, received number"),
                ("/~0~1", "Unrecognized key \"~/\""),
            ]
        );
    }

    /// The formats' edges, each read as bytes against its shape.
    #[test]
    fn formats_accept_exactly_their_shapes() {
        let cases = [
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date", "2026-04-31", false),
            ("date", "2026-12-31", true),
            ("date", "2026-13-01", false),
            ("date", "2026-00-10", false),
            ("date", "2026-01-00", false),
            ("date", "2026-1-010", false),
            ("date", "2026-01-0é", false),
            ("date", "02026-01-01", false),
            ("date-time", "2026-11-29T23:59:60Z", true),
            ("date-time", "2026-11-29T24:00:00Z", false),
            ("date-time", "2026-11-29T23:60:00Z", false),
            ("date-time", "2026-11-29T23:59:61Z", false),
            ("date-time", "2026-11-29t09:05:00.123+01:00", true),
            ("date-time", "2026-11-29T09:05:00.+01:00", false),
            ("date-time", "2026-11-29T9:05:00Z", false),
            ("date-time", "2026-11-29T09:05Z", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123E4567-E89B-12D3-A456-426614174000", true),
            ("uuid", "123e4567-e89b-12d3-a456-42661417400g", false),
            ("uuid", "123e4567e-89b-12d3-a456-426614174000", false),
            ("uuid", "123e4567-e89b-12d3-a456-4266141740000", false),
            ("uuid", "123e4567-e89b-12d3-a456_426614174000", false),
            ("uri", "a+b-c.d:x", true),
            ("uri", "1a:x", false),
            ("uri", "éa:x", false),
            ("uri", "aé:x", false),
            ("uri", "ab:x y", false),
            ("uri", "ab:x\u{2003}y", false),
            ("email", "a@b", true),
            ("email", "a@b@c", false),
            ("email", "a b@c", false),
            ("date-time", "2026-11-29T09:05:00-é", false),
            ("date-time", "2026-11-29X09:05:00Z", false),
        ];
        for (format, text, valid) in cases {
            let schema = json!({ "type": "string", "format": format });
            assert_eq!(
                validate(&schema, &json!(text)).is_empty(),
                valid,
                "{format} {text}"
            );
        }
    }

    #[test]
    fn validates_strings_arrays_enums_and_formats() {
        let schema = json!({
            "type": "object",
            "properties": {
                "direction": { "enum": ["asc", "desc"] },
                "ids": { "type": "array", "items": { "type": "integer" }, "minItems": 1, "maxItems": 2, "uniqueItems": true },
                "q": { "type": "string", "minLength": 1, "maxLength": 3 },
                "when": { "type": "string", "format": "date-time" },
                "id": { "type": "string", "format": "uuid" },
                "mail": { "type": "string", "format": "email" },
                "at": { "type": "string", "format": "uri" },
                "day": { "type": "string", "format": "date" },
                "step": { "type": "number", "multipleOf": 0.5, "exclusiveMaximum": 10 },
                "fixed": { "const": { "a": 1 } }
            }
        });
        let good = json!({
            "direction": "asc", "ids": [1, 2], "q": "é€x", "when": "2026-11-29T21:16:30.5Z",
            "id": "123e4567-e89b-12d3-a456-426614174000", "mail": "carla@example.com",
            "at": "https://example.invalid/x", "day": "2024-02-29", "step": 9.5, "fixed": { "a": 1.0 }
        });
        assert_eq!(validate(&schema, &good), vec![]);
        let bad = json!({
            "direction": "up", "ids": [1, 1, "x"], "q": "", "when": "2026-11-29 21:16",
            "id": "123", "mail": "carla", "at": "no scheme", "day": "2023-02-29", "step": 10, "fixed": {}
        });
        let issues = validate(&schema, &bad);
        assert_eq!(
            paths(&issues),
            [
                "/direction",
                "/ids",
                "/ids",
                "/ids/2",
                "/q",
                "/when",
                "/id",
                "/mail",
                "/at",
                "/day",
                "/step",
                "/fixed"
            ]
        );
        // Values named in messages are written as JSON, as the schema spells them.
        let message = |path: &str| {
            let issue = issues.iter().find(|i| i.path == path).unwrap();
            issue.message.clone()
        };
        assert_eq!(message("/direction"), "Expected one of \"asc\", \"desc\"");
        assert_eq!(message("/step"), "Number must be less than 10");
        assert_eq!(
            validate(
                &json!({ "type": "number", "multipleOf": 0.5, "minimum": 1 }),
                &json!(0.3)
            )
            .into_iter()
            .map(|i| i.message)
            .collect::<Vec<_>>(),
            [
                "Number must be greater than or equal to 1",
                "Number must be a multiple of 0.5"
            ]
        );
        assert_eq!(
            validate(&json!({ "type": "string", "maxLength": 1 }), &json!("😀")).len(),
            1
        );
        assert!(validate(
            &json!({ "type": "string", "format": "date-time" }),
            &json!("2026-11-29T21:16:30+01:00")
        )
        .is_empty());
    }

    #[test]
    fn date_time_offsets_with_non_ascii_text_are_format_issues_not_panics() {
        let schema = json!({ "type": "string", "format": "date-time" });
        // Six bytes after the sign, the second and third inside `é`: slicing the offset as a
        // `str` at byte 3 panicked (an aborted wasm instance in the browser).
        for text in [
            "2026-11-29T21:16:30+aé:c",
            "2026-11-29T21:16:30+0é00",
            "2026-11-29T21:16:30-é:00",
        ] {
            let issues = validate(&schema, &json!(text));
            assert_eq!(issues.len(), 1, "{text}");
            assert_eq!(issues[0].path, "");
        }
        for text in ["2026-11-29T21:16:30-05:30", "2026-11-29t21:16:30.5z"] {
            assert!(validate(&schema, &json!(text)).is_empty(), "{text}");
        }
    }

    #[test]
    fn refs_resolve_inside_any_of_branches() {
        let schema = json!({
            "anyOf": [{ "$ref": "#/$defs/id" }, { "type": "null" }],
            "$defs": { "id": { "type": "integer", "minimum": 1 } }
        });
        assert!(validate(&schema, &json!(4)).is_empty());
        assert!(validate(&schema, &Value::Null).is_empty());
        assert_eq!(
            validate(&schema, &json!(0))[0].message,
            "Matches none of the allowed shapes"
        );
    }

    #[test]
    fn reduce_removes_locked_keys_and_bound_requirements() {
        let reduced = reduce_input_schema(
            &chase_schema(),
            &[BoundField {
                path: "invoiceId".into(),
                locked: true,
            }],
        );
        let properties = reduced["properties"].as_object().unwrap();
        assert_eq!(
            properties.keys().collect::<Vec<_>>(),
            ["lastReminderDate", "remindersSent", "note"]
        );
        assert!(reduced.get("required").is_none());
        assert_eq!(reduced["additionalProperties"], false);
    }

    #[test]
    fn reduce_annotates_overridable_keys_and_keeps_other_requirements() {
        let schema = json!({
            "type": "object",
            "properties": {
                "invoiceId": { "type": "integer", "description": "The invoice." },
                "amount": { "type": "integer" },
                "note": { "type": "string" }
            },
            "required": ["invoiceId", "amount"]
        });
        let reduced = reduce_input_schema(
            &schema,
            &[
                BoundField {
                    path: "invoiceId".into(),
                    locked: false,
                },
                BoundField {
                    path: "note".into(),
                    locked: false,
                },
            ],
        );
        assert_eq!(
            reduced["properties"]["invoiceId"]["description"],
            format!("The invoice. {OVERRIDABLE_NOTE}")
        );
        assert_eq!(
            reduced["properties"]["note"]["description"],
            OVERRIDABLE_NOTE
        );
        assert_eq!(reduced["required"], json!(["amount"]));
        assert_eq!(
            schema["properties"]["invoiceId"]["description"],
            "The invoice."
        );
    }

    #[test]
    fn reduce_with_everything_locked_is_the_closed_empty_object() {
        let schema = json!({ "type": "object", "properties": { "id": { "type": "integer" } }, "required": ["id"] });
        let reduced = reduce_input_schema(
            &schema,
            &[BoundField {
                path: "id".into(),
                locked: true,
            }],
        );
        assert_eq!(reduced, empty_object_schema());
        assert_eq!(reduce_input_schema(&schema, &[]), schema);
    }
}
