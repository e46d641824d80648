//! Trace export with OTLP/HTTP (binary protobuf), configured by the standard OpenTelemetry
//! environment variables and off unless one of them names an endpoint.
//!
//! - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the full URL spans are posted to, used as given;
//! - otherwise `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL, spans go to
//!   `{base}/v1/traces`;
//! - `OTEL_SDK_DISABLED=true` turns export off whatever else is set;
//! - `OTEL_EXPORTER_OTLP_PROTOCOL` / `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, when set, must be
//!   `http/protobuf` (the one this build speaks; anything else fails the start rather than
//!   posting to a gRPC port that never answers);
//! - `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) names the service,
//!   `host-server` by default; the exporter's own variables (`OTEL_EXPORTER_OTLP_HEADERS`,
//!   `_TIMEOUT`, ...) are read by the exporter itself.
//!
//! With no endpoint nothing is built: no exporter, no batch thread, no layer.
//!
//! The SDK's batch processor exports from a thread of its own with a blocking executor, so
//! the exporter uses reqwest's blocking client (it runs its own small runtime); the provider
//! is built before the server's runtime starts and shut down (flushing what is queued) after
//! it has stopped, i.e. after the drain.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::Key;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The service name when the environment gives none.
pub const DEFAULT_SERVICE_NAME: &str = "host-server";

const TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
const ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
const PROTOCOLS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
];
const SUPPORTED_PROTOCOL: &str = "http/protobuf";

/// A trace export configuration the environment asks for that this server cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OtlpConfigError {
    #[error("{var}={value:?} is not an http:// or https:// URL: {why}")]
    BadEndpoint {
        var: &'static str,
        value: String,
        why: String,
    },
    #[error("{var}={value:?} is not supported: traces are exported with {SUPPORTED_PROTOCOL}")]
    UnsupportedProtocol { var: &'static str, value: String },
    #[error("the OTLP trace exporter cannot be built: {0}")]
    Build(String),
}

/// Where spans go, when the environment names an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceExport {
    /// The URL spans are posted to.
    pub endpoint: String,
}

impl TraceExport {
    /// Reads the process environment.
    pub fn from_env() -> Result<Option<Self>, OtlpConfigError> {
        Self::from_lookup(|var| std::env::var(var).ok())
    }

    /// Reads the variables through `lookup` (unset and empty are the same).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, OtlpConfigError> {
        let get = |var: &str| lookup(var).filter(|v| !v.trim().is_empty());
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoint = if let Some(full) = get(TRACES_ENDPOINT) {
            check_endpoint(TRACES_ENDPOINT, full.trim())?;
            full.trim().to_owned()
        } else if let Some(base) = get(ENDPOINT) {
            let base = base.trim();
            check_endpoint(ENDPOINT, base)?;
            format!("{}/v1/traces", base.trim_end_matches('/'))
        } else {
            return Ok(None);
        };
        for var in PROTOCOLS {
            if let Some(value) = get(var) {
                if value.trim() != SUPPORTED_PROTOCOL {
                    return Err(OtlpConfigError::UnsupportedProtocol { var, value });
                }
            }
        }
        Ok(Some(Self { endpoint }))
    }

    /// The endpoint as the startup line shows it: a password in the URL is masked.
    pub fn shown(&self) -> String {
        match reqwest::Url::parse(&self.endpoint) {
            Ok(mut url) if url.password().is_some() => {
                let _ = url.set_password(Some("***"));
                url.to_string()
            }
            _ => self.endpoint.clone(),
        }
    }

    /// Builds the exporter and its batch processor. Call outside any async runtime (the
    /// blocking HTTP client may not be created inside one); shut the provider down the same way.
    pub fn provider(&self) -> Result<SdkTracerProvider, OtlpConfigError> {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(self.endpoint.clone())
            .build()
            .map_err(|e| OtlpConfigError::Build(e.to_string()))?;
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .build())
    }
}

fn check_endpoint(var: &'static str, value: &str) -> Result<(), OtlpConfigError> {
    let bad = |why: String| OtlpConfigError::BadEndpoint {
        var,
        value: value.to_owned(),
        why,
    };
    let url = reqwest::Url::parse(value).map_err(|e| bad(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!("the scheme is {:?}", url.scheme())));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host".to_owned()));
    }
    Ok(())
}

/// The SDK's resource from the environment, with our service name when it names none.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    if named {
        detected
    } else {
        Resource::builder()
            .with_service_name(DEFAULT_SERVICE_NAME)
            .build()
    }
}

/// The layer that turns the server's spans (`agent.step` and those under it) into OTLP
/// spans. Only the server's own crates' spans at INFO and above ([`SERVER_TARGETS`]): not the
/// HTTP client's or the database driver's, and never the exporter's own requests.
pub fn layer<S>(provider: &SdkTracerProvider) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(DEFAULT_SERVICE_NAME))
        .with_filter(Targets::new().with_targets(SERVER_TARGETS.map(|t| (t, tracing::Level::INFO))))
}

/// The tracing targets of the server's own crates (a span's target is its module path).
pub const SERVER_TARGETS: [&str; 5] = [
    "host_server",
    "dpas_engine",
    "dpas_governance",
    "dpas_store",
    "dpas_demo",
];

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Option<TraceExport>, OtlpConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        TraceExport::from_lookup(|k| vars.get(k).cloned())
    }

    fn endpoint(vars: &[(&str, &str)]) -> Option<String> {
        read(vars).expect("valid").map(|t| t.endpoint)
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        assert_eq!(endpoint(&[]), None);
        assert_eq!(endpoint(&[(ENDPOINT, "")]), None);
        assert_eq!(
            endpoint(&[
                ("OTEL_SERVICE_NAME", "x"),
                (
                    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                    "http://127.0.0.1:4318/v1/metrics"
                ),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ]),
            None
        );
        assert_eq!(
            endpoint(&[
                ("OTEL_SDK_DISABLED", "TRUE"),
                (ENDPOINT, "http://127.0.0.1:4318")
            ]),
            None
        );
    }

    #[test]
    fn the_base_endpoint_gains_the_traces_path_and_the_traces_endpoint_is_taken_as_given() {
        for base in ["http://127.0.0.1:4318", "http://127.0.0.1:4318/"] {
            assert_eq!(
                endpoint(&[(ENDPOINT, base)]).as_deref(),
                Some("http://127.0.0.1:4318/v1/traces")
            );
        }
        assert_eq!(
            endpoint(&[(ENDPOINT, "https://collector.example/otlp")]).as_deref(),
            Some("https://collector.example/otlp/v1/traces")
        );
        assert_eq!(
            endpoint(&[
                (ENDPOINT, "http://127.0.0.1:4318"),
                (TRACES_ENDPOINT, "http://127.0.0.1:9999/custom"),
                ("OTEL_SDK_DISABLED", "false"),
            ])
            .as_deref(),
            Some("http://127.0.0.1:9999/custom")
        );
    }

    #[test]
    fn the_shown_endpoint_masks_a_password() {
        let read = |base: &str| read(&[(ENDPOINT, base)]).expect("valid").expect("on");
        assert_eq!(
            read("https://team:s3cret@collector.example").shown(),
            "https://team:***@collector.example/v1/traces"
        );
        assert_eq!(
            read("http://127.0.0.1:4318").shown(),
            "http://127.0.0.1:4318/v1/traces"
        );
    }

    #[test]
    fn a_bad_endpoint_or_another_protocol_is_refused_with_the_variable_named() {
        for bad in ["127.0.0.1:4318", "ftp://127.0.0.1/", "collector", "http://"] {
            let err = read(&[(ENDPOINT, bad)]).expect_err(bad);
            assert!(
                matches!(err, OtlpConfigError::BadEndpoint { var: ENDPOINT, .. }),
                "{bad}: {err:?}"
            );
            assert!(err.to_string().starts_with(ENDPOINT), "{err}");
        }
        let err = read(&[
            (ENDPOINT, "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .expect_err("grpc");
        assert_eq!(
            err,
            OtlpConfigError::UnsupportedProtocol {
                var: "OTEL_EXPORTER_OTLP_PROTOCOL",
                value: "grpc".to_owned()
            }
        );
        assert!(read(&[
            (TRACES_ENDPOINT, "http://127.0.0.1:4318/v1/traces"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ])
        .is_err());
    }
}
