//! Prometheus metrics, process-wide: a call, a worker restart or a
//! redaction anywhere in the host counts here without being handed a
//! registry, and `/metrics` encodes them all.
//!
//! Recording is off until [`enable`] (`serve --http` turns it on); until
//! then every recording function returns after one relaxed atomic load.
//!
//! Labels are bounded: `tool` is a mounted tool's name (the plan and the
//! servers it mounts fix the set; a name that resolves to no tool counts as
//! [`UNRESOLVED`]), `status` one of the ToolResult statuses, `module` and
//! `server` the plan's entries. No principal, input or id is ever a label.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The `tool` label of a call whose name matched no tool.
pub const UNRESOLVED: &str = "(unresolved)";

/// The content type of [`encode`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns recording on for the rest of the process.
pub fn enable() {
    metrics();
    ENABLED.store(true, Ordering::Release);
}

/// Whether recording is on.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModuleLabel {
    module: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabel {
    server: String,
}

type Histograms = Family<ToolLabel, Histogram, fn() -> Histogram>;

struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    duration: Histograms,
    in_flight: Gauge,
    sessions: Gauge,
    worker_restarts: Family<ModuleLabel, Counter>,
    server_restarts: Family<ServerLabel, Counter>,
    redactions: Counter,
    spans_dropped: Counter,
    span_exports_failed: Counter,
}

fn duration_histogram() -> Histogram {
    // 1 ms to ~65 s in powers of two: tools run from sub-millisecond reads
    // to minute-long commands.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut registry = Registry::with_prefix("toolhost");
        let m = Metrics {
            calls: Family::default(),
            duration: Family::new_with_constructor(duration_histogram as fn() -> Histogram),
            in_flight: Gauge::default(),
            sessions: Gauge::default(),
            worker_restarts: Family::default(),
            server_restarts: Family::default(),
            redactions: Counter::default(),
            spans_dropped: Counter::default(),
            span_exports_failed: Counter::default(),
            registry: Registry::default(),
        };
        registry.register("calls", "Finished tool calls by tool and status", m.calls.clone());
        registry.register(
            "call_duration_seconds",
            "Time from a call's arrival to its result, by tool",
            m.duration.clone(),
        );
        registry.register(
            "calls_in_flight",
            "Calls started and not yet finished",
            m.in_flight.clone(),
        );
        registry.register(
            "mcp_sessions",
            "Open MCP sessions on serve --http",
            m.sessions.clone(),
        );
        registry.register(
            "worker_restarts",
            "Isolated modules' worker processes started again after a crash, by module",
            m.worker_restarts.clone(),
        );
        registry.register(
            "mcp_server_restarts",
            "Mounted MCP servers reconnected (restarted) after being lost, by server",
            m.server_restarts.clone(),
        );
        registry.register(
            "redactions",
            "Secrets redacted from results",
            m.redactions.clone(),
        );
        registry.register(
            "spans_dropped",
            "Call spans dropped because the export queue was full",
            m.spans_dropped.clone(),
        );
        registry.register(
            "span_exports_failed",
            "Span batches the OTLP collector did not accept",
            m.span_exports_failed.clone(),
        );
        Metrics { registry, ..m }
    })
}

/// One call counted in `toolhost_calls_in_flight` until dropped.
#[must_use = "the call counts as in flight until this is dropped"]
pub struct InFlight(());

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics().in_flight.dec();
    }
}

/// A call started: counted in flight until the guard drops; `None` while
/// recording is off.
#[inline]
pub fn call_started() -> Option<InFlight> {
    if !enabled() {
        return None;
    }
    metrics().in_flight.inc();
    Some(InFlight(()))
}

/// A call finished with `status` after `elapsed`; `tool` is the mounted
/// tool's name ([`UNRESOLVED`] when the name matched none).
#[inline]
pub fn call_finished(tool: &str, status: &'static str, elapsed: Duration) {
    if !enabled() {
        return;
    }
    let m = metrics();
    m.calls
        .get_or_create(&CallLabels {
            tool: tool.to_owned(),
            status,
        })
        .inc();
    m.duration
        .get_or_create(&ToolLabel {
            tool: tool.to_owned(),
        })
        .observe(elapsed.as_secs_f64());
}

/// An isolated module's worker was started again.
pub fn worker_restarted(module: &str) {
    if enabled() {
        metrics()
            .worker_restarts
            .get_or_create(&ModuleLabel {
                module: module.to_owned(),
            })
            .inc();
    }
}

/// A mounted MCP server was reconnected (restarted, for a command);
/// `server` is its plan label (`mcp:<program>` or `mcp:<url>`).
pub fn server_restarted(server: &str) {
    if enabled() {
        metrics()
            .server_restarts
            .get_or_create(&ServerLabel {
                server: without_secrets(server),
            })
            .inc();
    }
}

/// A server label as a metric may show it: a URL's user info, query and
/// fragment (where credentials are sometimes put) are cut.
fn without_secrets(label: &str) -> String {
    let Some((scheme, rest)) = label.split_once("://") else {
        return label.to_owned();
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    format!("{scheme}://{host}{path}")
}

/// `count` secrets were redacted from one result.
#[inline]
pub fn redacted(count: u64) {
    if count > 0 && enabled() {
        metrics().redactions.inc_by(count);
    }
}

/// A finished span was dropped (the export queue was full).
pub(crate) fn span_dropped() {
    metrics().spans_dropped.inc();
}

/// The collector refused or missed a batch of spans.
pub(crate) fn span_export_failed() {
    metrics().span_exports_failed.inc();
}

/// The number of open MCP sessions, as the server counts them when it is
/// scraped.
pub fn set_sessions(open: usize) {
    metrics().sessions.set(open as i64);
}

/// Every metric in the Prometheus text exposition format.
pub fn encode() -> String {
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &metrics().registry);
    text
}

#[cfg(test)]
mod tests {
    use super::without_secrets;

    #[test]
    fn a_server_label_loses_a_urls_credentials() {
        assert_eq!(without_secrets("mcp:python3"), "mcp:python3");
        assert_eq!(
            without_secrets("mcp:https://user:pw@mcp.example:8443/v1/mcp?key=s3cret#x"),
            "mcp:https://mcp.example:8443/v1/mcp"
        );
        assert_eq!(
            without_secrets("mcp:http://a.example?t=1"),
            "mcp:http://a.example"
        );
    }
}
