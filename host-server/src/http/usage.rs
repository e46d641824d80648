//! `GET /api/usage?day=YYYY-MM-DD`: the usage rows (per actor, day, model and tool) and their
//! totals. The operator role (the role that reads every audit entry) reads every actor's
//! rows; anyone else only their own.

use actix_web::{web, HttpRequest, HttpResponse};
use dpas_governance::usage::UsageRow;
use serde_json::{json, Value};

use super::audit::READS_EVERY_ENTRY;
use super::{ApiError, Caller};
use crate::app::AppState;

fn usd(nano: u64) -> Value {
    json!(nano as f64 / 1e9)
}

/// `day` when the query gives one (`YYYY-MM-DD`); nothing else is accepted.
pub(crate) fn parse_day(query: &str) -> Result<Option<String>, ApiError> {
    let mut day = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "day" {
            return Err(ApiError::BadRequest("Only day is accepted.".to_owned()));
        }
        if day.is_some() || dpas_store::parse_date(value).is_none() || value.len() != 10 {
            return Err(ApiError::BadRequest(
                "day must be one date written YYYY-MM-DD.".to_owned(),
            ));
        }
        day = Some(value.to_owned());
    }
    Ok(day)
}

fn row_json(r: &UsageRow) -> Value {
    json!({
        "tenant": r.tenant, "actor": r.actor, "day": r.day, "model": r.model, "tool": r.tool,
        "inputTokens": r.input_tokens, "cachedInputTokens": r.cached_input_tokens,
        "outputTokens": r.output_tokens, "totalTokens": r.total_tokens,
        "usd": usd(r.nano_usd), "calls": r.calls,
    })
}

pub(crate) async fn list_usage(
    state: web::Data<AppState>,
    Caller(actor): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let day = parse_day(req.query_string())?;
    let only = (actor.role != READS_EVERY_ENTRY).then_some(actor.id.as_str());
    let rows = match &state.engine.meter {
        Some(meter) => meter
            .store
            .rows(only, day.as_deref())
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?,
        None => Vec::new(),
    };
    let mut total = UsageRow::default();
    for r in &rows {
        total.input_tokens += r.input_tokens;
        total.cached_input_tokens += r.cached_input_tokens;
        total.output_tokens += r.output_tokens;
        total.total_tokens += r.total_tokens;
        total.nano_usd += r.nano_usd;
    }
    Ok(HttpResponse::Ok().json(json!({
        "rows": rows.iter().map(row_json).collect::<Vec<_>>(),
        "totals": {
            "inputTokens": total.input_tokens, "cachedInputTokens": total.cached_input_tokens,
            "outputTokens": total.output_tokens, "totalTokens": total.total_tokens,
            "usd": usd(total.nano_usd),
        },
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_at_most_one_day() {
        assert_eq!(parse_day("").unwrap(), None);
        assert_eq!(
            parse_day("day=2026-12-02").unwrap().as_deref(),
            Some("2026-12-02")
        );
        for bad in [
            "day=2026-13-01",
            "day=",
            "day=2026-12-02&day=2026-12-03",
            "actor=x",
            "day=20261202",
        ] {
            assert!(parse_day(bad).is_err(), "{bad}");
        }
    }
}
