//! Meta mode (agent-surface §3.11, reference-behaviour I): three constant tools whose bytes
//! never change with what is mounted, executed against this registry.
//!
//! - `surface_discover({scope?})`: the snapshot, narrowed by the route floor (narrowing only;
//!   a disjoint request yields an empty surface and `scopeRejected`).
//! - `surface_read({capabilityId, instanceId?})`: runs one observation.
//! - `surface_act({capabilityId, instanceId?, input?, invocationId?, confirmationId?,
//!   surfaceVersion?})`: runs one action or procedure with direct-mode semantics.
//!
//! Each verb checks its own envelope and answers `INVALID_INPUT` naming the verb. Scope is
//! discovery only: read and act reach any mounted capability.

use crate::capability::Effect;
use crate::envelope::{ErrorCode, Retry, SurfaceError};

use super::dispatch::{invoke_confirmed, Dispatched};
use super::platform::TurnUi;
use crate::projection::Projection;
use crate::registry::{InvokeRequest, SnapshotOptions, Surface, SurfaceVersion};
use dpas_protocol::catalog::{meta_descriptors, SURFACE_ACT, SURFACE_DISCOVER, SURFACE_READ};
use dpas_protocol::json::object;
use dpas_protocol::json::{Map, Value};
use dpas_protocol::tool::{WireToolDescriptor, WireToolState};
use dpas_protocol::PendingToolCall;

/// The meta catalog: the three descriptors, always available.
pub fn meta_catalog() -> (Vec<WireToolDescriptor>, Vec<WireToolState>) {
    let descriptors = meta_descriptors();
    let mut state = Vec::with_capacity(descriptors.len());
    for d in &descriptors {
        state.push(WireToolState {
            wire_name: d.wire_name.clone(),
            available: true,
            unavailable_reason: None,
            note: None,
        });
    }
    (descriptors, state)
}

/// What a meta-mode step offers the model: the meta catalog, nothing projected.
pub fn meta_projection(surface: &Surface) -> Projection {
    let (descriptors, state) = meta_catalog();
    Projection {
        surface_version: surface.version(),
        descriptors,
        state,
        bindings: Vec::new(),
        undecodable: Vec::new(),
    }
}

/// Pairwise intersection of a requested scope with the floor: the more specific of two
/// related tokens wins, an unrelated token contributes nothing and is reported as refused.
/// An empty floor is unscoped, so every requested token applies as given.
pub fn narrow_scope(floor: &[String], requested: &[String]) -> (Vec<String>, Vec<String>) {
    if floor.is_empty() {
        return (requested.to_vec(), Vec::new());
    }
    let within = |inner: &str, outer: &str| {
        inner == outer
            || inner
                .strip_prefix(outer)
                .is_some_and(|rest| rest.starts_with('.'))
    };
    let mut kept = Vec::new();
    let mut refused = Vec::new();
    for token in requested {
        let mut related = false;
        for base in floor {
            let narrower = if within(token, base) {
                Some(token)
            } else if within(base, token) {
                Some(base)
            } else {
                None
            };
            if let Some(narrower) = narrower {
                related = true;
                if !kept.contains(narrower) {
                    kept.push(narrower.clone());
                }
            }
        }
        if !related {
            refused.push(token.clone());
        }
    }
    (kept, refused)
}

/// `INVALID_INPUT` for the verb's own arguments; `key` names the argument (`""`: all of them).
/// Texts are joined with `concat`, not `format!`, which builds its arguments at each site.
fn envelope_error(verb: &str, key: &str, message: String) -> Dispatched {
    let path = if key.is_empty() {
        String::new()
    } else {
        ["/", key].concat()
    };
    let error = SurfaceError::new(
        ErrorCode::InvalidInput,
        Retry::WithChanges,
        [
            verb,
            ": ",
            &message,
            " The fault is in this tool's own arguments.",
        ]
        .concat(),
    )
    .with_details(object([(
        "issues",
        Value::Array(vec![object([
            ("path", path.into()),
            ("message", message.into()),
        ])]),
    )]));
    failed(error)
}

fn failed(error: SurfaceError) -> Dispatched {
    Dispatched {
        ok: false,
        value: object([("error", error.to_value())]),
    }
}

/// A verb's arguments: `null` reads as `{}`; anything but an object is refused.
fn arguments(verb: &str, input: &Value) -> Result<Map<String, Value>, Dispatched> {
    match input {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map.clone()),
        _ => Err(envelope_error(
            verb,
            "",
            "the arguments must be an object.".into(),
        )),
    }
}

/// Checks keys and string types; unknown keys on `surface_act` are pointed back at `input`.
fn check_envelope(
    verb: &str,
    args: &Map<String, Value>,
    allowed: &[&str],
    required: &[&str],
) -> Result<(), Dispatched> {
    if let Some(unknown) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
        let hint = if verb == SURFACE_ACT {
            "`; the capability's own arguments go inside `input`."
        } else {
            "`."
        };
        return Err(envelope_error(
            verb,
            unknown,
            ["unknown key `", unknown, hint].concat(),
        ));
    }
    if let Some(missing) = required.iter().find(|k| !args.contains_key(**k)) {
        return Err(envelope_error(
            verb,
            missing,
            ["`", missing, "` is required."].concat(),
        ));
    }
    for (key, value) in args {
        let ok = match key.as_str() {
            "scope" => value
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string)),
            "input" => true,
            _ => value.as_str().is_some_and(|s| !s.is_empty()),
        };
        if !ok {
            let expected = if key == "scope" {
                "an array of strings"
            } else {
                "a non-empty string"
            };
            return Err(envelope_error(
                verb,
                key,
                ["`", key, "` must be ", expected, "."].concat(),
            ));
        }
    }
    Ok(())
}

/// What a meta call did, for the loop's settle and route rules.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaDispatched {
    pub dispatched: Dispatched,
    /// The effect of the capability `surface_act` reached, when it reached one.
    pub acted: Option<Effect>,
}

fn done(dispatched: Dispatched) -> MetaDispatched {
    MetaDispatched {
        dispatched,
        acted: None,
    }
}

/// Runs one meta call against the live surface; `floor` is the step's route floor.
pub async fn dispatch_meta(
    surface: &Surface,
    floor: &[String],
    call: &PendingToolCall,
    ui: &dyn TurnUi,
) -> MetaDispatched {
    match prepare_meta(surface, floor, call, ui) {
        Ok(MetaInvoke { request, acted }) => MetaDispatched {
            dispatched: invoke_confirmed!(surface, request, call, ui),
            acted,
        },
        Err(answered) => done(answered),
    }
}

/// A `surface_read`/`surface_act` call resolved to its invocation, and the effect it acts
/// with (`surface_act` only).
pub(crate) struct MetaInvoke {
    pub(crate) request: InvokeRequest,
    pub(crate) acted: Option<Effect>,
}

/// Everything of a meta call before its invocation runs, synchronous: the invocation, or the
/// call's answer when it needs none (`surface_discover`, a refused envelope, an unknown verb).
/// The step loop awaits the one invocation future whatever the verb, in its own body.
pub(crate) fn prepare_meta(
    surface: &Surface,
    floor: &[String],
    call: &PendingToolCall,
    ui: &dyn TurnUi,
) -> Result<MetaInvoke, Dispatched> {
    let verb = call.wire_name.as_str();
    let args = arguments(verb, &call.input)?;
    match verb {
        SURFACE_DISCOVER => Err(discover(surface, floor, &args)),
        SURFACE_READ | SURFACE_ACT => target(surface, call, &args, ui),
        _ => Err(Dispatched {
            ok: false,
            value: dpas_protocol::error::tool_results::capability_not_found(verb),
        }),
    }
}

fn discover(surface: &Surface, floor: &[String], args: &Map<String, Value>) -> Dispatched {
    if let Err(refused) = check_envelope(SURFACE_DISCOVER, args, &["scope"], &[]) {
        return refused;
    }
    let mut requested: Vec<String> = Vec::new();
    for token in args
        .get("scope")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(token) = token.as_str() {
            requested.push(token.to_owned());
        }
    }
    let (scope, refused) = if requested.is_empty() {
        (floor.to_vec(), Vec::new())
    } else {
        narrow_scope(floor, &requested)
    };
    let mut value = if !requested.is_empty() && scope.is_empty() {
        // A disjoint request never falls back to the floor: the surface it sees is empty.
        object([
            ("surfaceVersion", surface.version().into()),
            ("components", Value::Array(Vec::new())),
            ("procedures", Value::Array(Vec::new())),
        ])
    } else {
        surface
            .snapshot(&SnapshotOptions {
                scope,
                include_unavailable: true,
            })
            .to_value()
    };
    if let (false, Some(map)) = (refused.is_empty(), value.as_object_mut()) {
        map.insert(
            "scopeRejected".into(),
            object([("prefixes", refused.into())]),
        );
    }
    Dispatched { ok: true, value }
}

/// The one live registration owning a capability (with the instance filter), if unique.
fn unique_registration(
    surface: &Surface,
    capability_id: &str,
    instance_id: Option<&str>,
) -> (Option<String>, Option<(Effect, Value)>) {
    let snapshot = surface.snapshot(&SnapshotOptions::default());
    let mut found: Vec<(String, Effect, Value)> = Vec::new();
    for component in &snapshot.components {
        if instance_id.is_some_and(|i| i != component.instance_id) {
            continue;
        }
        if component
            .observations
            .iter()
            .any(|o| o.capability_id == capability_id)
        {
            found.push((
                component.registration_id.clone(),
                Effect::Read,
                object([("type", "object".into())]),
            ));
        }
        if let Some(a) = component
            .actions
            .iter()
            .find(|a| a.capability_id == capability_id)
        {
            found.push((
                component.registration_id.clone(),
                a.effect,
                a.input_schema.clone(),
            ));
        }
    }
    for p in snapshot
        .procedures
        .iter()
        .filter(|p| p.procedure_id == capability_id)
    {
        if instance_id.is_none_or(|i| i == p.context.instance_id) {
            found.push((p.registration_id.clone(), p.effect, p.input_schema.clone()));
        }
    }
    let target = found
        .first()
        .map(|(_, effect, schema)| (*effect, schema.clone()));
    let registration = (found.len() == 1).then(|| found.remove(0).0);
    (registration, target)
}

fn target(
    surface: &Surface,
    call: &PendingToolCall,
    args: &Map<String, Value>,
    ui: &dyn TurnUi,
) -> Result<MetaInvoke, Dispatched> {
    let verb = call.wire_name.as_str();
    let (allowed, reading): (&[&str], bool) = if verb == SURFACE_READ {
        (&["capabilityId", "instanceId"], true)
    } else {
        (
            &[
                "capabilityId",
                "instanceId",
                "input",
                "invocationId",
                "confirmationId",
                "surfaceVersion",
            ],
            false,
        )
    };
    check_envelope(verb, args, allowed, &["capabilityId"])?;
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let capability_id = text("capabilityId").unwrap_or_default();
    let instance_id = text("instanceId");
    let (registration_id, target) =
        unique_registration(surface, &capability_id, instance_id.as_deref());
    let is_observation = target
        .as_ref()
        .is_some_and(|(effect, _)| *effect == Effect::Read);
    if target.is_some() && reading != is_observation {
        let other = if reading { SURFACE_ACT } else { SURFACE_READ };
        return Err(envelope_error(
            verb,
            "capabilityId",
            [
                &capability_id,
                " is not handled by ",
                verb,
                "; call ",
                other,
                ".",
            ]
            .concat(),
        ));
    }
    let mut input = match args.get("input") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(input) => input.clone(),
    };
    // A JSON-encoded string is decoded only when the target takes an object (AS-META-008).
    let takes_object = target
        .as_ref()
        .is_some_and(|(_, schema)| schema["type"] == "object");
    if let (Value::String(encoded), true) = (&input, takes_object) {
        match dpas_protocol::json::parse(encoded.as_bytes()) {
            Ok(decoded @ Value::Object(_)) => input = decoded,
            _ => {
                return Err(envelope_error(
                    verb,
                    "input",
                    "`input` must be an object.".into(),
                ))
            }
        }
    }
    let request = InvokeRequest {
        invocation_id: Some(text("invocationId").unwrap_or_else(|| call.tool_call_id.clone())),
        capability_id,
        instance_id,
        registration_id,
        surface_version: Some(
            text("surfaceVersion")
                .map_or_else(|| surface.version(), |v| SurfaceVersion::claimed(&v)),
        ),
        input: Some(input),
        confirmed: false,
        untrusted_content: false,
        cancel: ui.cancel_token(),
    };
    let acted = target.filter(|_| !reading).map(|(effect, _)| effect);
    Ok(MetaInvoke { request, acted })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::ComponentDef;
    use crate::testing::demo_surface;
    use crate::turn::ConfirmRequest;
    use dpas_protocol::test_json as json;
    use futures_executor::block_on;
    use futures_util::future::LocalBoxFuture;
    use futures_util::FutureExt;

    struct Ui;

    impl TurnUi for Ui {
        fn current_pathname(&self) -> String {
            String::new()
        }
        fn has_until(&self) -> bool {
            false
        }
        fn until(&self) -> bool {
            true
        }
        fn confirm(&self, _: &ConfirmRequest) -> LocalBoxFuture<'static, bool> {
            async { true }.boxed_local()
        }
    }

    fn strings(tokens: &[&str]) -> Vec<String> {
        tokens.iter().map(|t| t.to_string()).collect()
    }

    fn run(surface: &Surface, verb: &str, input: Value) -> MetaDispatched {
        let floor =
            dpas_protocol::test_support::reference_route_floors().floor("/receivables/pending");
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let call = PendingToolCall {
            tool_call_id: format!("tc_{id}"),
            wire_name: verb.into(),
            canonical_id: format!("meta:{verb}"),
            input,
        };
        block_on(dispatch_meta(surface, &floor, &call, &Ui))
    }

    fn error_code(result: &MetaDispatched) -> &str {
        result.dispatched.value["error"]["code"]
            .as_str()
            .unwrap_or("")
    }

    #[test]
    fn the_meta_catalog_is_three_constant_always_available_tools() {
        let (descriptors, state) = meta_catalog();
        let names: Vec<&str> = descriptors.iter().map(|d| d.wire_name.as_str()).collect();
        assert_eq!(names, [SURFACE_DISCOVER, SURFACE_READ, SURFACE_ACT]);
        assert!(state
            .iter()
            .all(|s| s.available && s.unavailable_reason.is_none()));
        assert_eq!(meta_catalog(), (descriptors, state));
    }

    #[test]
    fn scope_requests_narrow_and_never_widen() {
        let floor = strings(&["app", "invoices"]);
        assert_eq!(
            narrow_scope(&floor, &strings(&["invoices.pending"])),
            (strings(&["invoices.pending"]), vec![])
        );
        let narrow_floor = strings(&["invoices.pending"]);
        assert_eq!(
            narrow_scope(&narrow_floor, &strings(&["invoices"])),
            (strings(&["invoices.pending"]), vec![])
        );
        assert_eq!(
            narrow_scope(&floor, &strings(&["clients", "app"])),
            (strings(&["app"]), strings(&["clients"]))
        );
        assert_eq!(
            narrow_scope(&[], &strings(&["clients"])),
            (strings(&["clients"]), vec![])
        );
    }

    #[test]
    fn discover_returns_the_floor_scoped_snapshot() {
        let (surface, _, _) = demo_surface();
        let result = run(&surface, SURFACE_DISCOVER, Value::Null);
        assert!(result.dispatched.ok);
        let value = &result.dispatched.value;
        assert_eq!(value["surfaceVersion"], Value::from(surface.version()));
        assert_eq!(value["components"].as_array().unwrap().len(), 3);
        assert_eq!(
            value["procedures"][0]["procedureId"],
            "domain:update-collection-status"
        );
        assert!(value.get("scopeRejected").is_none());
    }

    #[test]
    fn a_disjoint_scope_is_an_empty_surface_with_the_refused_prefixes() {
        let (surface, _, _) = demo_surface();
        let value = run(&surface, SURFACE_DISCOVER, json!({ "scope": ["clients"] }))
            .dispatched
            .value;
        assert_eq!(value["components"], json!([]));
        assert_eq!(value["procedures"], json!([]));
        assert_eq!(value["scopeRejected"], json!({ "prefixes": ["clients"] }));
        let value = run(
            &surface,
            SURFACE_DISCOVER,
            json!({ "scope": ["app", "clients"] }),
        )
        .dispatched
        .value;
        let types: Vec<&str> = value["components"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["app.navigation", "app.session"]);
        assert_eq!(value["scopeRejected"], json!({ "prefixes": ["clients"] }));
    }

    #[test]
    fn read_runs_an_observation_and_act_runs_an_action() {
        let (surface, screen, _) = demo_surface();
        let read = run(
            &surface,
            SURFACE_READ,
            json!({ "capabilityId": "view:invoices.pending.readState" }),
        );
        assert_eq!(
            read.dispatched,
            Dispatched {
                ok: true,
                value: json!({ "rowCount": 13, "totalRows": 13 })
            }
        );
        assert_eq!(read.acted, None);
        let act = run(
            &surface,
            SURFACE_ACT,
            json!({ "capabilityId": "view:invoices.pending.setFilters", "input": { "due": "overdue" } }),
        );
        assert_eq!(
            act.dispatched,
            Dispatched {
                ok: true,
                value: json!({ "done": true })
            }
        );
        assert_eq!(act.acted, Some(Effect::LocalState));
        assert_eq!(
            screen.calls.borrow().last().unwrap().1,
            json!({ "due": "overdue" })
        );
        let go = run(
            &surface,
            SURFACE_ACT,
            json!({ "capabilityId": "view:app.navigation.goTo", "input": { "path": "/receivables/all" } }),
        );
        assert_eq!(go.acted, Some(Effect::Navigation));
    }

    #[test]
    fn each_verb_checks_its_own_envelope() {
        let (surface, screen, _) = demo_surface();
        let hoisted = run(
            &surface,
            SURFACE_ACT,
            json!({ "capabilityId": "view:invoices.pending.setFilters", "due": "overdue" }),
        );
        assert_eq!(error_code(&hoisted), "INVALID_INPUT");
        let message = hoisted.dispatched.value["error"]["message"]
            .as_str()
            .unwrap();
        assert!(
            message.starts_with(
                "surface_act: unknown key `due`; the capability's own arguments go inside `input`."
            ),
            "{message}"
        );
        assert_eq!(
            hoisted.dispatched.value["error"]["details"]["issues"][0]["path"],
            "/due"
        );
        assert_eq!(
            error_code(&run(&surface, SURFACE_READ, json!({}))),
            "INVALID_INPUT"
        );
        assert_eq!(
            error_code(&run(&surface, SURFACE_READ, json!({ "capabilityId": 5 }))),
            "INVALID_INPUT"
        );
        assert_eq!(
            error_code(&run(
                &surface,
                SURFACE_DISCOVER,
                json!({ "scope": "invoices" })
            )),
            "INVALID_INPUT"
        );
        assert_eq!(
            error_code(&run(&surface, SURFACE_DISCOVER, json!([1]))),
            "INVALID_INPUT"
        );
        assert!(screen.calls.borrow().is_empty());
    }

    #[test]
    fn envelope_refusals_name_the_argument_and_say_why() {
        let (surface, _, _) = demo_surface();
        let fault = " The fault is in this tool's own arguments.";
        let cases = [
            (
                SURFACE_READ,
                json!([1]),
                "",
                "the arguments must be an object.",
            ),
            (
                SURFACE_READ,
                json!({ "capabilityId": "x", "x": 1 }),
                "/x",
                "unknown key `x`.",
            ),
            (
                SURFACE_READ,
                json!({}),
                "/capabilityId",
                "`capabilityId` is required.",
            ),
            (
                SURFACE_READ,
                json!({ "capabilityId": "" }),
                "/capabilityId",
                "`capabilityId` must be a non-empty string.",
            ),
            (
                SURFACE_DISCOVER,
                json!({ "scope": [1] }),
                "/scope",
                "`scope` must be an array of strings.",
            ),
            (
                SURFACE_ACT,
                json!({ "capabilityId": "view:invoices.pending.readState" }),
                "/capabilityId",
                "view:invoices.pending.readState is not handled by surface_act; call surface_read.",
            ),
            (
                SURFACE_ACT,
                json!({ "capabilityId": "view:invoices.pending.setFilters", "input": "[1]" }),
                "/input",
                "`input` must be an object.",
            ),
        ];
        for (verb, input, path, message) in cases {
            let refused = run(&surface, verb, input).dispatched.value;
            let error = &refused["error"];
            assert_eq!(error["code"], "INVALID_INPUT", "{message}");
            assert_eq!(error["message"], [verb, ": ", message, fault].concat());
            assert_eq!(error["details"]["issues"][0]["path"], path, "{message}");
            assert_eq!(error["details"]["issues"][0]["message"], message);
        }
    }

    #[test]
    fn read_and_act_point_at_each_other() {
        let (surface, _, _) = demo_surface();
        let wrong = run(
            &surface,
            SURFACE_READ,
            json!({ "capabilityId": "view:invoices.pending.setFilters" }),
        );
        assert!(wrong.dispatched.value["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call surface_act"));
        let wrong = run(
            &surface,
            SURFACE_ACT,
            json!({ "capabilityId": "view:invoices.pending.readState" }),
        );
        assert!(wrong.dispatched.value["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call surface_read"));
        let missing = run(
            &surface,
            SURFACE_READ,
            json!({ "capabilityId": "view:invoices.pending.nothing" }),
        );
        assert_eq!(error_code(&missing), "CAPABILITY_NOT_FOUND");
    }

    #[test]
    fn a_json_string_input_is_decoded_for_object_schemas() {
        let (surface, screen, _) = demo_surface();
        let act = run(
            &surface,
            SURFACE_ACT,
            json!({ "capabilityId": "view:invoices.pending.setFilters", "input": "{\"q\":\"DUN\"}" }),
        );
        assert!(act.dispatched.ok);
        assert_eq!(
            screen.calls.borrow().last().unwrap().1,
            json!({ "q": "DUN" })
        );
        let bad = run(
            &surface,
            SURFACE_ACT,
            json!({ "capabilityId": "view:invoices.pending.setFilters", "input": "q=DUN" }),
        );
        assert_eq!(error_code(&bad), "INVALID_INPUT");
    }

    #[test]
    fn several_instances_are_left_to_the_registry_to_call_ambiguous() {
        let (surface, _, _) = demo_surface();
        for instance in ["a", "b"] {
            let mut def = ComponentDef::new("rows.row", "A row.");
            def.instance_id = Some(instance.into());
            def.observations.push(crate::capability::ObservationDef {
                name: "read".into(),
                description: "Read the row.".into(),
                output_schema: json!({ "type": "object" }),
                read: crate::capability::Handler::sync(|_, _| Ok(Some(json!({})))),
                availability: Default::default(),
                untrusted: false,
            });
            surface.register(def).unwrap();
        }
        let ambiguous = run(
            &surface,
            SURFACE_READ,
            json!({ "capabilityId": "view:rows.row.read" }),
        );
        assert_eq!(error_code(&ambiguous), "AMBIGUOUS_INSTANCE");
        let one = run(
            &surface,
            SURFACE_READ,
            json!({ "capabilityId": "view:rows.row.read", "instanceId": "b" }),
        );
        assert!(one.dispatched.ok);
    }
}
