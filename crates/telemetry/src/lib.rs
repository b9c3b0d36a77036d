//! What toolhost tells an operator's monitoring, beside its logs and audit
//! records:
//!
//! - [`metrics`]: Prometheus counters, gauges and histograms (every name
//!   prefixed `toolhost_`), served at `/metrics` by `serve --http`;
//! - [`trace`]: one OpenTelemetry span per call, a child of the caller's W3C
//!   `traceparent`, exported over OTLP (HTTP/protobuf) in bounded batches.
//!
//! Both are off until the host turns them on, and cost a call one branch
//! each while off: no allocation, no lock.

mod export;
pub mod metrics;
pub mod trace;
