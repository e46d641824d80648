//! `GET /api/audit?since=&limit=`: the stored audit entries after a cursor. A controller
//! reads everyone's; any other user only entries that name them as the actor.
//! `GET /api/audit/export?from=&to=`: the tenant's hash-chained records of a time range as
//! JSON Lines, for the operator (the controller role) only.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::{ApiError, Caller};
use crate::app::AppState;
use dpas_store::audit_log::{chain_time, DEFAULT_LIMIT, MAX_LIMIT};
use futures_util::StreamExt as _;

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

/// The export's query: `from` (inclusive) and `to` (exclusive), RFC 3339 times, each
/// optional (an open end).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    from: Option<String>,
    to: Option<String>,
}

/// The query's bounds as chained-record times; 400 `BAD_REQUEST` for anything else.
pub(crate) fn parse_export_query(
    query: &str,
) -> Result<(Option<String>, Option<String>), ApiError> {
    let q = web::Query::<ExportQuery>::from_query(query)
        .map_err(|_| bad("Only from and to are accepted, each once.".to_owned()))?
        .into_inner();
    let time = |key: &str, v: Option<String>| {
        v.map(|v| {
            time::OffsetDateTime::parse(&v, &time::format_description::well_known::Rfc3339)
                .map_err(|_| bad(format!("{key} must be an RFC 3339 time.")))
        })
        .transpose()
    };
    let (from, to) = (time("from", q.from)?, time("to", q.to)?);
    if let (Some(from), Some(to)) = (from, to) {
        if from > to {
            return Err(bad("from must not be after to.".to_owned()));
        }
    }
    Ok((from.map(chain_time), to.map(chain_time)))
}

pub(crate) async fn export_audit(
    state: web::Data<AppState>,
    Caller(actor): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    // The operator's: every actor's records, and the chain's digests.
    if actor.role != READS_EVERY_ENTRY {
        return Err(ApiError::Host(dpas_protocol::HostError::of(
            dpas_protocol::HostErrorCode::Forbidden,
        )));
    }
    let (from, to) = parse_export_query(req.query_string())?;
    state.audit_log.flush(FLUSH_DEADLINE).await;
    let range = state
        .audit_log
        .export_range(from.as_deref(), to.as_deref())
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let lines = range.map(|range| state.audit_log.export(range));
    let body = futures_util::stream::iter(lines)
        .flatten()
        .map(|line| match line {
            Ok(value) => {
                let mut text = value.to_string();
                text.push('\n');
                Ok(web::Bytes::from(text))
            }
            // Headers are sent: the cause goes to the log and the body ends short, which a
            // verify of the file reports as a missing record.
            Err(e) => {
                tracing::error!(error = %e, "audit export failed");
                Err(actix_web::error::ErrorInternalServerError(
                    "audit export failed",
                ))
            }
        });
    Ok(HttpResponse::Ok()
        .insert_header((
            actix_web::http::header::CONTENT_TYPE,
            "application/x-ndjson; charset=utf-8",
        ))
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .streaming(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_query_is_two_optional_ordered_times() {
        assert_eq!(parse_export_query("").unwrap(), (None, None));
        let (from, to) =
            parse_export_query("from=2026-01-02T03:04:05Z&to=2026-01-02T05:04:05.5%2B02:00")
                .unwrap();
        assert_eq!(from.as_deref(), Some("2026-01-02T03:04:05.000000Z"));
        assert_eq!(to.as_deref(), Some("2026-01-02T03:04:05.500000Z"));
        for bad in [
            "from=yesterday",
            "from=2026-01-02",
            "to=",
            "from=2026-01-02T03:04:05Z&from=2026-01-02T03:04:05Z",
            "since=1",
            "from=2026-01-03T00:00:00Z&to=2026-01-02T00:00:00Z",
        ] {
            assert!(parse_export_query(bad).is_err(), "{bad}");
        }
    }

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
