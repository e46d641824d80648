//! Structural checks of a component definition at registration, and bound-key capture.

use crate::capability::{ActionDef, ComponentDef, ObservationDef, ProcedureDef};
use crate::ids;
use crate::pattern::PatternEngine;
use crate::schema::{check_schema, BoundField};
use dpas_protocol::json::Value;

/// Longest component description.
pub(super) const MAX_COMPONENT_DESCRIPTION: usize = 500;
/// Longest capability description.
pub(super) const MAX_CAPABILITY_DESCRIPTION: usize = 300;

dpas_protocol::wire_enum! {
    /// The structural-defect codes of agent-surface's `AgentSurfaceDefinitionError`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum DefinitionErrorCode {
        InvalidId = "INVALID_ID",
        InvalidDefinition = "INVALID_DEFINITION",
        UnsupportedSchema = "UNSUPPORTED_SCHEMA",
        PlaneViolation = "PLANE_VIOLATION",
        DuplicateCapability = "DUPLICATE_CAPABILITY",
        LimitExceeded = "LIMIT_EXCEEDED",
    }
}

/// A definition the registry refuses; for the developer, never for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionError {
    pub code: DefinitionErrorCode,
    pub message: String,
}

impl std::fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for DefinitionError {}

fn fail(code: DefinitionErrorCode, message: String) -> Result<(), DefinitionError> {
    Err(DefinitionError { code, message })
}

/// [`fail`] with its message joined from `parts` by one `concat`, where a `format!` at each
/// site would build its own arguments.
fn fail_with(code: DefinitionErrorCode, parts: &[&str]) -> Result<(), DefinitionError> {
    fail(code, parts.concat())
}

fn check_description(owner: &str, text: &str, max: usize) -> Result<(), DefinitionError> {
    let length = crate::text::char_count(text);
    if length == 0 {
        return fail_with(
            DefinitionErrorCode::InvalidDefinition,
            &[owner, " needs a description"],
        );
    }
    if length > max {
        return fail(
            DefinitionErrorCode::LimitExceeded,
            format!("{owner} has a {length}-character description, over the limit of {max}"),
        );
    }
    Ok(())
}

fn check_schema_of(
    owner: &str,
    which: &str,
    schema: &Value,
    input: bool,
    patterns: &dyn PatternEngine,
) -> Result<(), DefinitionError> {
    if let Err(reason) = check_schema(schema, patterns) {
        return fail_with(
            DefinitionErrorCode::UnsupportedSchema,
            &[owner, " ", which, " schema: ", &reason],
        );
    }
    if input && schema.get("type").and_then(Value::as_str) != Some("object") {
        return fail_with(
            DefinitionErrorCode::UnsupportedSchema,
            &[owner, " ", which, " schema must be an object schema"],
        );
    }
    Ok(())
}

/// Checks ids, descriptions, effects and schemas of a definition.
pub(super) fn validate(
    def: &ComponentDef,
    patterns: &dyn PatternEngine,
) -> Result<(), DefinitionError> {
    let component_type = &def.component_type;
    if !ids::is_component_type(component_type) {
        return fail_with(
            DefinitionErrorCode::InvalidId,
            &["component type \"", component_type, "\" is not valid"],
        );
    }
    if let Some(instance) = def
        .instance_id
        .as_deref()
        .filter(|i| !ids::is_instance_id(i))
    {
        return fail_with(
            DefinitionErrorCode::InvalidId,
            &["instance id \"", instance, "\" is not valid"],
        );
    }
    check_description(component_type, &def.description, MAX_COMPONENT_DESCRIPTION)?;
    let mut names: Vec<&str> = Vec::new();
    let view = def
        .observations
        .iter()
        .map(|o| (&o.name, &o.description))
        .chain(def.actions.iter().map(|a| (&a.name, &a.description)));
    for (name, description) in view {
        let id = ids::view_capability_id(component_type, name);
        if !ids::is_capability_name(name) || ids::parse_capability_id(&id).is_none() {
            return fail_with(
                DefinitionErrorCode::InvalidId,
                &["capability id \"", &id, "\" is not valid"],
            );
        }
        if names.contains(&name.as_str()) {
            return fail_with(
                DefinitionErrorCode::DuplicateCapability,
                &[&id, " is declared twice"],
            );
        }
        names.push(name);
        check_description(&id, description, MAX_CAPABILITY_DESCRIPTION)?;
    }
    for observation in &def.observations {
        let id = ids::view_capability_id(component_type, &observation.name);
        check_schema_of(&id, "output", &observation.output_schema, false, patterns)?;
    }
    for action in &def.actions {
        let id = ids::view_capability_id(component_type, &action.name);
        if !action.effect.is_view_action_effect() {
            return fail_with(
                DefinitionErrorCode::PlaneViolation,
                &[
                    &id,
                    " declares effect ",
                    action.effect.as_str(),
                    "; a view action is local-state or navigation",
                ],
            );
        }
        check_schema_of(&id, "input", &action.input_schema, true, patterns)?;
        if let Some(output) = &action.output_schema {
            check_schema_of(&id, "output", output, false, patterns)?;
        }
    }
    let mut paths: Vec<&str> = Vec::new();
    for procedure in &def.procedures {
        validate_procedure(procedure, patterns)?;
        if paths.contains(&procedure.path.as_str()) {
            return fail_with(
                DefinitionErrorCode::DuplicateCapability,
                &[
                    "domain:",
                    &procedure.path,
                    " is referenced twice by one component",
                ],
            );
        }
        paths.push(&procedure.path);
    }
    Ok(())
}

fn validate_procedure(
    procedure: &ProcedureDef,
    patterns: &dyn PatternEngine,
) -> Result<(), DefinitionError> {
    let id = ids::domain_capability_id(&procedure.path);
    if ids::parse_capability_id(&id).is_none() {
        return fail_with(
            DefinitionErrorCode::InvalidId,
            &["capability id \"", &id, "\" is not valid"],
        );
    }
    if !procedure.effect.is_domain_effect() {
        return fail_with(
            DefinitionErrorCode::PlaneViolation,
            &[
                &id,
                " declares effect ",
                procedure.effect.as_str(),
                "; a domain reference has a server effect",
            ],
        );
    }
    check_description(&id, &procedure.description, MAX_CAPABILITY_DESCRIPTION)?;
    check_schema_of(&id, "input", &procedure.input_schema, true, patterns)?;
    if let Some(output) = &procedure.output_schema {
        check_schema_of(&id, "output", output, false, patterns)?;
    }
    Ok(())
}

/// Whether two definitions have the same structural half: everything but handlers, `when`,
/// reasons, `bind` and `describe`. The same structure describes the same catalog. (Compared
/// field by field: schemas as JSON values, which ignore key order.)
pub(super) fn same_structure(a: &ComponentDef, b: &ComponentDef) -> bool {
    let observations = |x: &ObservationDef, y: &ObservationDef| {
        x.name == y.name && x.description == y.description && x.output_schema == y.output_schema
    };
    let actions = |x: &ActionDef, y: &ActionDef| {
        x.name == y.name
            && x.description == y.description
            && x.input_schema == y.input_schema
            && x.output_schema == y.output_schema
            && x.effect == y.effect
            && x.confirmation == y.confirmation
            && x.idempotent == y.idempotent
    };
    let procedures = |x: &ProcedureDef, y: &ProcedureDef| {
        x.path == y.path
            && x.description == y.description
            && x.input_schema == y.input_schema
            && x.output_schema == y.output_schema
            && x.effect == y.effect
            && x.confirmation == y.confirmation
            && x.overridable_fields == y.overridable_fields
    };
    fn all<T>(x: &[T], y: &[T], same: impl Fn(&T, &T) -> bool) -> bool {
        x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
    }
    a.component_type == b.component_type
        && a.instance_id == b.instance_id
        && a.description == b.description
        && a.priority == b.priority
        && a.enabled == b.enabled
        && all(&a.observations, &b.observations, observations)
        && all(&a.actions, &b.actions, actions)
        && all(&a.procedures, &b.procedures, procedures)
}

/// Bound keys are captured once, by calling `bind()` at registration; a binding that
/// throws then degrades to no bound keys.
pub(super) fn capture_bound_keys(def: &ComponentDef) -> Vec<Vec<BoundField>> {
    let mut all = Vec::with_capacity(def.procedures.len());
    for procedure in &def.procedures {
        let mut fields = Vec::new();
        if let Some(Ok(values)) = procedure.bind.as_ref().map(|bind| bind()) {
            for path in values.keys() {
                fields.push(BoundField {
                    locked: !procedure.overridable_fields.contains(path),
                    path: path.clone(),
                });
            }
        }
        all.push(fields);
    }
    all
}
