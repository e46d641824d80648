//! The log lines on stderr.
//!
//! With `RUST_LOG` unset (or not a valid filter) the layer prints events at INFO and above and
//! sees no spans at all. A span the log layer sees has its fields formatted into a string when
//! it opens, whether or not a line is ever printed inside it; at INFO every step opens several
//! (`agent.step`, `agent.model_call`, a policy evaluation per capability), so that formatting
//! cost every step CPU for nothing. The spans still exist for the trace export (`otlp`) and
//! for any layer an embedder adds; with neither, they are disabled where they are written and
//! cost nothing. `RUST_LOG` set to a valid filter is taken as given, spans included, so
//! `RUST_LOG=info` brings the span context back into the lines.

use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The default: events at INFO and above, no spans.
fn default_interest(meta: &Metadata<'_>) -> bool {
    meta.is_event() && *meta.level() <= Level::INFO
}

/// The log layer, filtered by `rust_log` (the `RUST_LOG` value) when it is a valid filter.
pub fn layer<S>(rust_log: Option<&str>) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let lines = tracing_subscriber::fmt::layer()
        // Logs go to stderr so stdout carries only the startup line.
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match rust_log
        .filter(|v| !v.trim().is_empty())
        .map(EnvFilter::try_new)
    {
        Some(Ok(filter)) => lines.with_filter(filter).boxed(),
        _ => lines.with_filter(filter_fn(default_interest)).boxed(),
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// Whether an INFO span and an INFO event are enabled under the log layer alone.
    fn enabled(rust_log: Option<&str>) -> (bool, bool) {
        let subscriber = tracing_subscriber::registry().with(layer(rust_log));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("agent.step", dpas.step_id = "stp_1");
            (!span.is_disabled(), tracing::event_enabled!(Level::INFO))
        })
    }

    /// One test, not two: a callsite's interest is a process-wide cache that `tracing`
    /// rebuilds whenever a dispatcher is registered, and two tests registering dispatchers
    /// with opposite filters on the one callsite of `enabled` at once can leave the other's
    /// answer cached (CI saw an invalid filter's span enabled). Sequential calls each rebuild
    /// it for the only live dispatcher.
    #[test]
    fn spans_are_off_by_default_and_rust_log_is_taken_as_given() {
        assert_eq!(enabled(None), (false, true));
        assert_eq!(enabled(Some("")), (false, true));
        // An invalid filter falls back to the default, as before.
        assert_eq!(enabled(Some("info,=[")), (false, true));
        // A valid one is taken as given, spans included.
        assert_eq!(enabled(Some("info")), (true, true));
        assert_eq!(enabled(Some("warn")), (false, false));
        assert_eq!(enabled(None), (false, true));
    }
}
