//! `GET /api/audit?since=&limit=`: the stored audit entries after a cursor. A controller
//! reads everyone's; any other user only entries that name them as the actor.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::{ApiError, Caller};
use crate::app::AppState;
use dpas_store::audit_log::{DEFAULT_LIMIT, MAX_LIMIT};

/// The role that reads every actor's entries (the demo's controllers have it; any app may
/// give it). Everyone else reads the entries that name them as the actor.
pub(crate) const READS_EVERY_ENTRY: &str = "controller";

/// How long a read waits for this process's own newest entries to be stored.
const FLUSH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// The query: `since` (a `seq` from an earlier answer, 0 or absent for the start) and
/// `limit` (1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when absent).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct AuditQuery {
    since: i64,
    limit: i64,
}

fn bad(message: String) -> ApiError {
    ApiError::BadRequest(message)
}

pub(crate) fn parse_query(query: &str) -> Result<AuditQuery, ApiError> {
    let (mut since, mut limit) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match key {
            "since" => &mut since,
            "limit" => &mut limit,
            _ => return Err(bad("Only since and limit are accepted.".to_owned())),
        };
        if slot.is_some() {
            return Err(bad(format!("{key} is given twice.")));
        }
        // Digits only: no sign, no space, nothing to decode.
        let n = (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
            .then(|| value.parse::<i64>().ok())
            .flatten()
            .ok_or_else(|| bad(format!("{key} must be a whole number.")))?;
        *slot = Some(n);
    }
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(bad(format!("limit must be between 1 and {MAX_LIMIT}.")));
    }
    Ok(AuditQuery {
        since: since.unwrap_or(0),
        limit,
    })
}

pub(crate) async fn list_audit(
    state: web::Data<AppState>,
    Caller(actor): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = parse_query(req.query_string())?;
    let only = (actor.role != READS_EVERY_ENTRY).then_some(actor.id.as_str());
    state.audit_log.flush(FLUSH_DEADLINE).await;
    let stored = state
        .audit_log
        .read(only, query.since, query.limit)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let next = stored.last().map_or(query.since, |e| e.seq);
    let entries: Vec<Value> = stored
        .into_iter()
        .map(|e| {
            let mut entry = e.entry;
            if let Value::Object(map) = &mut entry {
                map.insert("seq".to_owned(), json!(e.seq));
            }
            entry
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({"entries": entries, "next": next})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_two_bounded_whole_numbers() {
        assert_eq!(
            parse_query("").unwrap(),
            AuditQuery {
                since: 0,
                limit: DEFAULT_LIMIT
            }
        );
        assert_eq!(
            parse_query("since=7&limit=500").unwrap(),
            AuditQuery {
                since: 7,
                limit: 500
            }
        );
        for bad in [
            "since=-1",
            "since=x",
            "since=",
            "limit=0",
            "limit=501",
            "limit=1e3",
            "since=1&since=2",
            "offset=3",
            "since=99999999999999999999",
        ] {
            assert!(parse_query(bad).is_err(), "{bad}");
        }
    }
}
