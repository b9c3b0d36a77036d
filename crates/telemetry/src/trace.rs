//! One OpenTelemetry span per call, exported over OTLP (HTTP/protobuf).
//!
//! [`install`] reads the endpoint (the plan's `[host.telemetry]
//! otlp_endpoint`, else the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_ENDPOINT`); without one, [`CallSpan::start`] returns
//! `None` after one atomic load, and a call costs nothing more.
//!
//! A call's span is the child of the caller's W3C `traceparent` (MCP
//! `_meta.traceparent`, with `_meta.tracestate`), and its own context is
//! what the host passes on ([`CallSpan::traceparent`]), so a mounted MCP
//! server's spans continue the same trace.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, Tracer};
use opentelemetry_sdk::Resource;

use crate::export::{Bounded, Queued, Releasing};

/// What [`install`] needs (the plan's `[host.telemetry]`).
#[derive(Debug, Clone)]
pub struct Config {
    /// The collector's base URL (`/v1/traces` is appended, as for
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`); `None`: the environment's, if any.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported spans.
    pub service_name: String,
    /// Finished spans that may wait for export; past it they are dropped
    /// and counted.
    pub max_queued_spans: usize,
    /// How long one export may take before it is abandoned.
    pub export_timeout: Duration,
    /// How often a batch is sent.
    pub export_interval: Duration,
}

/// Why the exporter could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The endpoint (or the HTTP client) was refused by the exporter.
    #[error("cannot export spans to {endpoint}: {reason}")]
    Exporter {
        /// The endpoint as configured.
        endpoint: String,
        /// The exporter's reason.
        reason: String,
    },
}

struct Installed {
    provider: SdkTracerProvider,
    tracer: Tracer,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

/// The environment variables that name a collector when the plan does not.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// Sets up export for this process once (later calls keep the first
/// setup that named a collector); `Ok(false)` when no endpoint is
/// configured, so spans are off.
pub fn install(config: &Config) -> Result<bool, TraceError> {
    if INSTALLED.get().is_some() {
        return Ok(true);
    }
    let from_env = ENDPOINT_VARS
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()));
    let endpoint = match (&config.otlp_endpoint, from_env) {
        (Some(base), _) => Some(format!("{}/v1/traces", base.trim_end_matches('/'))),
        // The exporter reads the variables itself (the signal's URL as
        // given, the general one with `/v1/traces` appended).
        (None, Some(_)) => None,
        // Nothing is recorded: a later plan (or the bench) may name one.
        (None, None) => return Ok(false),
    };
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(config.export_timeout);
    if let Some(url) = &endpoint {
        builder = builder.with_endpoint(url.clone());
    }
    let exporter = builder.build().map_err(|e| TraceError::Exporter {
        endpoint: endpoint
            .clone()
            .unwrap_or_else(|| "the OTEL_EXPORTER_OTLP_* endpoint".into()),
        reason: e.to_string(),
    })?;
    let queued = std::sync::Arc::new(Queued::default());
    let cap = config.max_queued_spans.max(1);
    let batch = BatchSpanProcessor::builder(Releasing {
        inner: exporter,
        queued: queued.clone(),
    })
    .with_batch_config(
        BatchConfigBuilder::default()
            // Never the SDK's to drop: [`Bounded`] refuses first.
            .with_max_queue_size(cap + 1)
            .with_max_export_batch_size(cap.min(512))
            .with_scheduled_delay(config.export_interval)
            .build(),
    )
    .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(Bounded {
            inner: batch,
            queued,
            cap,
        })
        .with_resource(
            Resource::builder()
                .with_service_name(config.service_name.clone())
                .build(),
        )
        .build();
    let tracer = provider.tracer("toolhost");
    if let Err(lost) = INSTALLED.set(Installed { provider, tracer }) {
        // Another pipeline installed one meanwhile: keep that one.
        let _ = lost.provider.shutdown();
    }
    Ok(true)
}

/// Sends what is queued and stops the exporter (at process exit), waiting
/// at most the export timeout.
pub fn shutdown() {
    if let Some(installed) = INSTALLED.get() {
        let _ = installed.provider.shutdown();
    }
}

#[inline]
fn tracer() -> Option<&'static Tracer> {
    INSTALLED.get().map(|i| &i.tracer)
}

/// A W3C trace context: `traceparent` and, when given, `tracestate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    /// `00-<trace id>-<parent id>-<flags>`.
    pub traceparent: String,
    /// The vendors' state, passed on as given.
    pub tracestate: Option<String>,
}

/// The longest `tracestate` passed on (W3C allows 32 members of at most
/// 256 bytes each; 512 bytes is what it asks every platform to keep).
const MAX_TRACESTATE: usize = 512;

impl TraceParent {
    /// The caller's context, when `traceparent` is a valid W3C header
    /// (anything else is ignored, as the W3C asks: the call starts a new
    /// trace).
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<TraceParent> {
        let tracestate = tracestate.filter(|s| s.len() <= MAX_TRACESTATE && s.is_ascii());
        let context = extract(traceparent, tracestate);
        let span = context.span();
        if !span.span_context().is_valid() {
            return None;
        }
        Some(TraceParent {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate.map(str::to_owned),
        })
    }

    fn of(context: &SpanContext) -> TraceParent {
        let state = context.trace_state().header();
        TraceParent {
            traceparent: format!(
                "00-{}-{}-{:02x}",
                context.trace_id(),
                context.span_id(),
                context.trace_flags().to_u8()
            ),
            tracestate: (!state.is_empty()).then_some(state),
        }
    }
}

struct Headers<'a>(HashMap<&'static str, &'a str>);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).copied()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().copied().collect()
    }
}

fn extract(traceparent: &str, tracestate: Option<&str>) -> Context {
    let mut headers = HashMap::from([("traceparent", traceparent)]);
    if let Some(state) = tracestate {
        headers.insert("tracestate", state);
    }
    TraceContextPropagator::new().extract(&Headers(headers))
}

/// How a call ended, for its span.
pub struct Finished<'a> {
    /// The mounted tool's name (`None`: the name matched no tool).
    pub tool: Option<&'a str>,
    /// The name the caller used.
    pub name: &'a str,
    /// Who the call ran for.
    pub principal: &'a str,
    /// The ToolResult status.
    pub status: &'static str,
    /// How policy let the call through or why it stopped (`allow`,
    /// `deny`, `invalid`, ...).
    pub decision: &'static str,
    /// The error code of a failed call.
    pub code: Option<&'a str>,
    /// The call's id.
    pub call_id: &'a str,
    /// Arrival to result.
    pub duration: Duration,
}

/// The span of one call, open from its arrival to its record.
pub struct CallSpan {
    span: opentelemetry_sdk::trace::Span,
}

impl CallSpan {
    /// Opens a call's span, the child of `parent` when given; `None` while
    /// export is off.
    #[inline]
    pub fn start(parent: Option<&TraceParent>) -> Option<CallSpan> {
        let tracer = tracer()?;
        let context = match parent {
            Some(p) => extract(&p.traceparent, p.tracestate.as_deref()),
            None => Context::new(),
        };
        let span = tracer
            .span_builder("tools/call")
            .with_kind(SpanKind::Server)
            .start_with_context(tracer, &context);
        Some(CallSpan { span })
    }

    /// A pipeline stage the call passed (an event on the span).
    pub fn stage(&mut self, name: &'static str) {
        self.span.add_event(name, Vec::new());
    }

    /// This span's context, for the servers the call reaches.
    pub fn traceparent(&self) -> TraceParent {
        TraceParent::of(self.span.span_context())
    }

    /// Ends the span with the call's outcome.
    pub fn finish(mut self, done: Finished<'_>) {
        if let Some(tool) = done.tool {
            self.span.update_name(format!("tools/call {tool}"));
        }
        let tool = done.tool.unwrap_or(crate::metrics::UNRESOLVED).to_owned();
        self.span.set_attributes([
            KeyValue::new("mcp.method.name", "tools/call"),
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", tool.clone()),
            KeyValue::new("gen_ai.tool.call.id", done.call_id.to_owned()),
            KeyValue::new("toolhost.tool", tool),
            KeyValue::new("toolhost.called_as", done.name.to_owned()),
            KeyValue::new("toolhost.principal", done.principal.to_owned()),
            KeyValue::new("toolhost.status", done.status),
            KeyValue::new("toolhost.decision", done.decision),
            KeyValue::new("toolhost.duration_ms", done.duration.as_secs_f64() * 1000.0),
        ]);
        if done.status != "success" {
            let code = done.code.unwrap_or(done.status).to_owned();
            self.span.set_attribute(KeyValue::new("error.type", code.clone()));
            self.span.set_status(Status::error(code));
        }
        self.span.end();
    }
}
