//! Catalog composition for one step-request (reference-behaviour E1–E6): the domain half for
//! the session's actor, scoped by route, plus the declared frontend tools, with collisions,
//! undecodable names and limits handled and every reduction reported.
//!
//! The domain half depends only on the actor, the surface and the scope, never on the
//! request's own tools, so it is composed once per (actor, surface, scope) and shared by every
//! step after ([`DomainCatalogs`]); the frontend half comes with each request and is moved,
//! not copied, into what the model is offered.

use std::collections::HashMap as StdHashMap;
use std::sync::{Arc, Mutex};

use dpas_model::ToolSpec;
use dpas_protocol::catalog::{capability_state_message, drop_indices, find_collisions};
use dpas_protocol::frame::{host_inspector, step_correlation};
use dpas_protocol::limits::check_catalog_limits;
use dpas_protocol::request::ProtocolVersion;
use dpas_protocol::wire_name::encode_wire_name;
use dpas_protocol::{
    CatalogMode, ChatStepRequest, DomainToolInfo, Frame, HostError, RawSchema, RouteFloors,
    WireToolDescriptor,
};
use hashbrown::{Equivalent, HashMap};
use serde_json::value::{to_raw_value, RawValue};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use dpas_governance::audit::{AuditDraft, AuditSource, CATALOG_COMPOSED};
use dpas_governance::{Actor, ActorKind, CallSurface, Correlation, Runtime};

/// One governed tool offered to the model.
#[derive(Debug, Clone)]
pub struct DomainTool {
    pub info: DomainToolInfo,
    /// The runtime's capability id (`collections-aging`), without the `domain:` plane.
    pub capability_id: String,
    /// Serialised once, when the half is composed.
    pub input_schema: Arc<RawValue>,
    /// The capability returns untrusted content (U1).
    pub untrusted: bool,
}

/// The domain half of a catalog: what one actor may see on one surface under one scope.
#[derive(Debug, Clone)]
pub struct DomainHalf {
    /// Registry order.
    pub tools: Vec<DomainTool>,
    /// The tools' `info`, in the same order: what `step-start` lists and collisions check.
    pub infos: Vec<DomainToolInfo>,
    /// `infos` as JSON, serialised once: `step-start` splices these bytes in on every step.
    pub infos_json: Box<[u8]>,
    /// Wire names withheld because they cannot be audited under one id.
    pub undecodable: Vec<String>,
    /// How many capabilities discovery returned (offered and withheld).
    pub discovered: usize,
}

/// A frontend tool the model is offered, by name (its schema went into [`Composition::tools`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontendTool {
    pub wire_name: String,
    pub canonical_id: String,
    /// The descriptor's `untrusted` mark (U1).
    pub untrusted: bool,
}

/// What one step offers the model, and what was reduced on the way.
#[derive(Debug, Clone)]
pub struct Composition {
    pub step_id: String,
    pub scope: Vec<String>,
    pub catalog_mode: CatalogMode,
    /// Shared with every step of the same actor, surface and scope.
    pub domain: Arc<DomainHalf>,
    /// The declared frontend tools left after collisions, in request order.
    pub frontend: Vec<FrontendTool>,
    /// What the model is offered: the domain tools, then the frontend ones. Shared by the
    /// model steps of the run.
    pub tools: Arc<[ToolSpec]>,
    /// Host inspector frames to send right after `step-start` (F2 item 2).
    pub host_frames: Vec<Frame>,
    /// The capability-state system message (E6), appended after the whole history.
    pub state_message: Option<String>,
}

impl Composition {
    /// Whether `wire_name` names a tool of this catalog that returns untrusted content (U1).
    pub fn is_untrusted(&self, wire_name: &str) -> bool {
        self.domain
            .tools
            .iter()
            .any(|t| t.untrusted && t.info.wire_name == wire_name)
            || self
                .frontend
                .iter()
                .any(|d| d.untrusted && d.wire_name == wire_name)
    }

    /// The canonical id a wire name maps to (domain first, then frontend), if any.
    pub fn canonical_of(&self, wire_name: &str) -> Option<String> {
        self.domain
            .tools
            .iter()
            .find(|t| t.info.wire_name == wire_name)
            .map(|t| t.info.canonical_id.clone())
            .or_else(|| {
                self.frontend
                    .iter()
                    .find(|d| d.wire_name == wire_name)
                    .map(|d| d.canonical_id.clone())
            })
    }
}

/// Entries kept before the cache starts over: one per (actor, scope) in use, so a server with
/// more distinct users than this recomposes now and then instead of growing without bound.
const MAX_CACHED_HALVES: usize = 4096;

/// The domain halves already composed, keyed by exactly what discovery reads: the actor (its
/// forwarded credential by SHA-256, so the cache keeps no credential), the surface and the
/// scope's tags. The registry and the policies are fixed once the runtime is built, and
/// policies decide from the request alone (`runtime::Policy`), so an entry never goes stale.
/// Belongs to one runtime: [`crate::Engine`] holds the two together.
#[derive(Debug, Default)]
pub struct DomainCatalogs {
    entries: Mutex<HashMap<CatalogKey, Arc<DomainHalf>>>,
}

/// A cache key: what discovery reads. Stored owned ([`CatalogKey`]) and looked up borrowed
/// from the request ([`KeyRef`]), so a hit allocates nothing: the derived `Hash` is one for
/// both forms (a `String` hashes as its `str`, a `Vec` as its slice), and the map compares
/// them through [`Equivalent`].
#[derive(Debug, PartialEq, Eq, Hash)]
struct Key<S, T> {
    id: S,
    kind: ActorKind,
    display_name: S,
    role: S,
    email: Option<S>,
    credential: Option<[u8; 32]>,
    surface: CallSurface,
    tags: Option<T>,
}

type CatalogKey = Key<String, Vec<String>>;
type KeyRef<'a> = Key<&'a str, &'a [String]>;

impl<'a> KeyRef<'a> {
    fn new(actor: &'a Actor, surface: CallSurface, tags: Option<&'a [String]>) -> Self {
        Key {
            id: &actor.id,
            kind: actor.kind,
            display_name: &actor.display_name,
            role: &actor.role,
            email: actor.email.as_deref(),
            credential: actor
                .authorization
                .as_ref()
                .map(|c| Sha256::digest(c.expose().as_bytes()).into()),
            surface,
            tags,
        }
    }

    fn to_owned(&self) -> CatalogKey {
        Key {
            id: self.id.to_owned(),
            kind: self.kind,
            display_name: self.display_name.to_owned(),
            role: self.role.to_owned(),
            email: self.email.map(str::to_owned),
            credential: self.credential,
            surface: self.surface,
            tags: self.tags.map(<[String]>::to_vec),
        }
    }
}

impl Equivalent<CatalogKey> for KeyRef<'_> {
    fn equivalent(&self, key: &CatalogKey) -> bool {
        let Key {
            id,
            kind,
            display_name,
            role,
            email,
            credential,
            surface,
            tags,
        } = key;
        *self
            == Key {
                id: id.as_str(),
                kind: *kind,
                display_name: display_name.as_str(),
                role: role.as_str(),
                email: email.as_deref(),
                credential: *credential,
                surface: *surface,
                tags: tags.as_deref(),
            }
    }
}

impl DomainCatalogs {
    /// The domain half for `actor` on `surface` under `tags`, composed on first use. Either
    /// way the discovery is audited (`capabilities.discovered`), as an uncached one is.
    pub fn get(
        &self,
        runtime: &Runtime,
        actor: &Actor,
        surface: CallSurface,
        tags: Option<&[String]>,
    ) -> Arc<DomainHalf> {
        if let Some(half) = self.cached(actor, surface, tags) {
            runtime.record_discovered(actor, surface, half.discovered);
            return half;
        }
        // Composed outside the lock; two steps racing compose the same half twice.
        let half = Arc::new(domain_half(runtime, actor, surface, tags));
        let mut cached = self.lock();
        if cached.len() >= MAX_CACHED_HALVES {
            cached.clear();
        }
        cached
            .entry(KeyRef::new(actor, surface, tags).to_owned())
            .or_insert_with(|| Arc::clone(&half));
        half
    }

    /// The half already composed for these, if any: the lookup [`DomainCatalogs::get`] makes
    /// first, by a key borrowed from its arguments (it allocates nothing).
    pub fn cached(
        &self,
        actor: &Actor,
        surface: CallSurface,
        tags: Option<&[String]>,
    ) -> Option<Arc<DomainHalf>> {
        self.lock()
            .get(&KeyRef::new(actor, surface, tags))
            .map(Arc::clone)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CatalogKey, Arc<DomainHalf>>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Discovers and names the domain half (audited by `discover`).
fn domain_half(
    runtime: &Runtime,
    actor: &Actor,
    surface: CallSurface,
    tags: Option<&[String]>,
) -> DomainHalf {
    let discovered = runtime.discover(actor, surface, tags);
    let count = discovered.len();
    let names = domain_wire_names(discovered.iter().map(|info| info.id.as_str()));
    let mut tools = Vec::with_capacity(count);
    let mut undecodable = Vec::new();
    for (info, name) in discovered.into_iter().zip(names) {
        let wire = match name {
            Ok(wire) => wire,
            Err(wire) => {
                undecodable.push(wire);
                continue;
            }
        };
        let meta = runtime.registry().get(&info.id).map(|c| &c.meta);
        let declared_approval = meta.is_some_and(|m| m.approval_required);
        let untrusted = meta.is_some_and(|m| m.untrusted);
        let mut description = info.description;
        if declared_approval {
            description.push_str(" Requires approval.");
        }
        tools.push(DomainTool {
            info: DomainToolInfo {
                wire_name: wire,
                canonical_id: format!("domain:{}", info.id),
                description,
                requires_approval: info.requires_approval,
                side_effect: info.side_effect.as_str().to_owned(),
            },
            capability_id: info.id,
            // A `Value` always serialises.
            input_schema: Arc::from(to_raw_value(&info.input_schema).unwrap_or_default()),
            untrusted,
        });
    }
    let infos: Vec<DomainToolInfo> = tools.iter().map(|t| t.info.clone()).collect();
    DomainHalf {
        infos_json: serde_json::to_vec(&infos)
            .expect("strings and booleans always serialise")
            .into(),
        infos,
        tools,
        undecodable,
        discovered: count,
    }
}

/// A wire name a provider accepts: 1–64 characters of `[A-Za-z0-9_-]`.
pub fn provider_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Names each domain capability (`domain:<id>`, level 0, as the reference's server does) and
/// captures the name as assigned. A name a provider would refuse, or one two capabilities
/// share, cannot be audited under one id: it comes back as `Err` and is withheld.
pub fn domain_wire_names<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<Result<String, String>> {
    let names: Vec<String> = ids
        .map(|id| encode_wire_name(&format!("domain:{id}"), None, 0))
        .collect();
    let mut counts: StdHashMap<&str, usize> = StdHashMap::with_capacity(names.len());
    for n in &names {
        *counts.entry(n.as_str()).or_default() += 1;
    }
    names
        .iter()
        .map(|n| {
            if provider_safe(n) && counts[n.as_str()] == 1 {
                Ok(n.clone())
            } else {
                Err(n.clone())
            }
        })
        .collect()
}

/// Mints a step id: `stp_` and 12 characters of `[a-z0-9]` (A6).
pub fn mint_step_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut id = String::with_capacity(16);
    id.push_str("stp_");
    id.extend(
        bytes
            .iter()
            .take(12)
            .map(|b| ALPHABET[usize::from(*b) % 36] as char),
    );
    id
}

/// Composes the catalog, taking the request's frontend tools (they move into the
/// composition). Errors are the contract's: 409 `CATALOG_COLLISION` (v1 only) and 413
/// `CATALOG_TOO_LARGE`; both are decided before anything is streamed.
pub fn compose(
    runtime: &Runtime,
    catalogs: &DomainCatalogs,
    actor: &Actor,
    request: &mut ChatStepRequest,
    floors: &RouteFloors,
) -> Result<Composition, HostError> {
    let step_id = mint_step_id();
    let correlation = || step_correlation(&request.conversation_id, &request.turn_id, &step_id);
    let host_audit = |kind: &str, data: Value| {
        runtime.audit().record(AuditDraft {
            actor_id: Some(actor.id.clone()),
            correlation: Correlation {
                conversation_id: Some(request.conversation_id.clone()),
                turn_id: Some(request.turn_id.clone()),
                step_id: Some(step_id.clone()),
                invocation_id: None,
            },
            data: Some(data),
            ..AuditDraft::new(AuditSource::Host, kind)
        });
    };

    let scope = floors.resolve(&request.pathname, request.requested_scope.as_deref());
    let tags = (!scope.is_empty()).then_some(scope.as_slice());
    let domain = catalogs.get(runtime, actor, CallSurface::Model, tags);

    let mut host_frames = Vec::new();
    let mut withheld = Vec::new();
    let mut frontend = std::mem::take(&mut request.frontend_tools);
    let collisions = find_collisions(&frontend, &domain.infos);
    if !collisions.is_empty() {
        withheld.push(
            json!({"reason": "collision", "count": collisions.frontend_indices.len(),
            "ids": collisions.capability_ids}),
        );
        host_audit(
            "catalog.collision",
            json!({"capabilityIds": collisions.capability_ids}),
        );
        if request.version == ProtocolVersion::V1 {
            return Err(HostError::catalog_collision(&collisions.capability_ids));
        }
        drop_indices(&mut frontend, &collisions.frontend_indices);
        host_frames.push(host_inspector::collision(
            &collisions.capability_ids,
            correlation(),
        ));
    }
    if let Some(truncated) = &request.truncated {
        withheld.push(json!({"reason": "truncated", "count": truncated.dropped,
            "detail": truncated.reason.as_str()}));
        host_frames.push(host_inspector::truncated(truncated, correlation()));
    }
    if !domain.undecodable.is_empty() {
        withheld.push(
            json!({"reason": "undecodable", "count": domain.undecodable.len(),
            "ids": domain.undecodable}),
        );
        host_audit(
            "catalog.undecodable",
            json!({"wireNames": domain.undecodable}),
        );
        host_frames.push(host_inspector::undecodable(
            &domain.undecodable,
            correlation(),
        ));
    }
    check_catalog_limits(frontend.len(), domain.tools.len())?;
    let state_message = capability_state_message(&request.frontend_state, &frontend);
    let (tools, frontend) = offered(&domain, frontend);
    host_audit(
        CATALOG_COMPOSED,
        json!({
            "route": request.pathname,
            "scope": scope,
            "mode": request.catalog_mode,
            "domainTools": domain.tools.len(),
            "frontendTools": frontend.len(),
            "toolsDigest": offered_digest(&tools),
            "withheld": withheld,
        }),
    );
    Ok(Composition {
        step_id,
        scope,
        catalog_mode: request.catalog_mode,
        domain,
        frontend,
        tools,
        host_frames,
        state_message,
    })
}

/// The digest of what the model is offered: [`input_hash`](dpas_governance::approval::input_hash)
/// (`jcs:` and the SHA-256 of the RFC 8785 JSON) of the tools' canonical ids, in offered order.
pub fn offered_digest(tools: &[ToolSpec]) -> String {
    let ids = tools
        .iter()
        .map(|t| Value::from(t.canonical_id.as_deref().unwrap_or(t.name.as_str())))
        .collect();
    dpas_governance::approval::input_hash(&Value::Array(ids))
}

/// The tools the model is offered, domain first, and the frontend tools by name: each
/// descriptor's description and schema text move into its tool.
fn offered(
    domain: &DomainHalf,
    frontend: Vec<WireToolDescriptor<RawSchema>>,
) -> (Arc<[ToolSpec]>, Vec<FrontendTool>) {
    let mut tools = Vec::with_capacity(domain.tools.len() + frontend.len());
    tools.extend(domain.tools.iter().map(|t| ToolSpec {
        name: t.info.wire_name.clone(),
        description: t.info.description.clone(),
        input_schema: Arc::clone(&t.input_schema),
        canonical_id: Some(t.info.canonical_id.clone()),
        untrusted: t.untrusted,
    }));
    let mut names = Vec::with_capacity(frontend.len());
    for d in frontend {
        tools.push(ToolSpec {
            name: d.wire_name.clone(),
            description: d.description,
            input_schema: Arc::from(d.input_schema.into_raw()),
            canonical_id: Some(d.canonical_id.clone()),
            untrusted: d.untrusted,
        });
        names.push(FrontendTool {
            wire_name: d.wire_name,
            canonical_id: d.canonical_id,
            untrusted: d.untrusted,
        });
    }
    (tools.into(), names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ids_have_the_reference_shape() {
        let id = mint_step_id();
        assert_eq!(id.len(), 16);
        assert!(id.starts_with("stp_"));
        assert!(id[4..]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        assert_ne!(mint_step_id(), id);
    }

    #[test]
    fn domain_names_that_cannot_be_audited_are_withheld() {
        let names = domain_wire_names(["list-invoices", "odd id", "a:b", "some_thing"].into_iter());
        assert_eq!(names[0], Ok("domain_list-invoices".to_owned()));
        assert_eq!(names[1], Err("domain_odd id".to_owned()));
        assert_eq!(names[2], Err("domain_a:b".to_owned()));
        // An id with its own underscore is shortened, captured and offered.
        assert!(names[3]
            .as_ref()
            .is_ok_and(|n| n.starts_with("domain_some_thing_0_")));
        let same = domain_wire_names(["x", "x"].into_iter());
        assert!(
            same.iter().all(Result::is_err),
            "a shared name cannot be audited under one id"
        );
    }

    #[test]
    fn provider_safe_names() {
        assert!(provider_safe("domain_list-invoices"));
        assert!(!provider_safe("domain_a:b"));
        assert!(!provider_safe(""));
        assert!(!provider_safe(&"a".repeat(65)));
    }
}
