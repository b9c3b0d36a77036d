//! `[host.telemetry]` (a span per call, exported over OTLP) and
//! `[host.metrics]` (Prometheus `/metrics` on `serve --http`). The plan owns
//! their keys and defaults; `toolhost-telemetry` does the work.

use serde::Deserialize;

/// `[host.telemetry]`: OpenTelemetry traces.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySection {
    /// The OTLP/HTTP collector's base URL, such as
    /// `"http://127.0.0.1:4318"` (spans go to its `/v1/traces`). It wins
    /// over `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` and
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, which are used when it is unset; with
    /// none of the three, no span is exported.
    #[serde(default)]
    pub otlp_endpoint: Option<OtlpEndpoint>,
    /// `service.name` of the exported spans.
    #[serde(default = "default_service_name")]
    pub service_name: String,
    /// Finished spans that may wait for the collector; past this they are
    /// dropped and counted (`toolhost_spans_dropped_total`), so a dead
    /// collector never holds a call or grows the host.
    #[serde(default = "default_max_queued_spans")]
    pub max_queued_spans: usize,
    /// How long one export may take.
    #[serde(default = "default_export_timeout_ms")]
    pub export_timeout_ms: u64,
    /// How often queued spans are sent.
    #[serde(default = "default_export_interval_ms")]
    pub export_interval_ms: u64,
}

impl Default for TelemetrySection {
    fn default() -> Self {
        TelemetrySection {
            otlp_endpoint: None,
            service_name: default_service_name(),
            max_queued_spans: default_max_queued_spans(),
            export_timeout_ms: default_export_timeout_ms(),
            export_interval_ms: default_export_interval_ms(),
        }
    }
}

/// An `http://` or `https://` URL (checked when the plan is read).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct OtlpEndpoint(pub String);

impl TryFrom<String> for OtlpEndpoint {
    type Error = String;

    fn try_from(url: String) -> Result<Self, String> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"));
        match rest {
            Some(host) if !host.is_empty() && !url.chars().any(char::is_whitespace) => Ok(OtlpEndpoint(url)),
            _ => Err(format!(
                "otlp_endpoint must be the collector's http:// or https:// URL, such as \"http://127.0.0.1:4318\" (got {url:?})"
            )),
        }
    }
}

fn default_service_name() -> String {
    "toolhost".into()
}

fn default_max_queued_spans() -> usize {
    2048
}

fn default_export_timeout_ms() -> u64 {
    5000
}

fn default_export_interval_ms() -> u64 {
    1000
}

/// `[host.metrics]`: who may read `/metrics` on `serve --http`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// Serve `/metrics` at all.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Answer without a bearer token. Off by default: the metrics name
    /// every mounted tool and how much each is used.
    #[serde(default)]
    pub public: bool,
    /// The principals whose tokens may read `/metrics` when it is not
    /// public; empty: any principal the server accepts.
    #[serde(default)]
    pub principals: Vec<String>,
}

impl Default for MetricsSection {
    fn default() -> Self {
        MetricsSection {
            enabled: true,
            public: false,
            principals: Vec::new(),
        }
    }
}

fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::plan::Plan;

    #[test]
    fn the_keys_default_and_parse() {
        let plan = Plan::parse("", Path::new("/p/p.toml")).unwrap();
        assert_eq!(plan.host.telemetry.otlp_endpoint, None);
        assert!(plan.host.metrics.enabled && !plan.host.metrics.public);
        let plan = Plan::parse(
            "[host.telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\nmax_queued_spans = 8\n\
             [host.metrics]\npublic = true\n",
            Path::new("/p/p.toml"),
        )
        .unwrap();
        let endpoint = plan.host.telemetry.otlp_endpoint.as_ref().map(|e| e.0.as_str());
        assert_eq!(endpoint, Some("http://127.0.0.1:4318"));
        assert_eq!(plan.host.telemetry.max_queued_spans, 8);
        assert!(plan.host.metrics.public);
    }

    #[test]
    fn a_bad_endpoint_or_unknown_reader_is_refused_with_the_reason() {
        let err = Plan::parse(
            "[host.telemetry]\notlp_endpoint = \"127.0.0.1:4318\"\n",
            Path::new("p.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("p.toml:2:"), "{err}");
        assert!(err.contains("http:// or https://"), "{err}");
        let err = Plan::parse("[host.metrics]\nprincipals = [\"ops\"]\n", Path::new("p.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("host.metrics.principals: 'ops'"), "{err}");
        let err = Plan::parse("[host.metrics]\nbogus = 1\n", Path::new("p.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus"), "{err}");
    }
}
