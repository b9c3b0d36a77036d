//! The bound on spans waiting for export. The SDK's batch processor drops
//! spans when its queue is full, but counts them only for a log line at
//! shutdown; this wrapper holds the bound itself so each dropped span is
//! counted in `toolhost_spans_dropped_total` as it happens, and a dead or
//! slow collector never makes a call wait or the queue grow.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;

/// Spans handed on for export and not yet through an export attempt.
#[derive(Debug, Default)]
pub(crate) struct Queued(AtomicUsize);

/// Passes finished spans to `inner` (the SDK's batch processor) while fewer
/// than `cap` wait; drops and counts the rest.
#[derive(Debug)]
pub(crate) struct Bounded<P> {
    pub(crate) inner: P,
    pub(crate) queued: Arc<Queued>,
    pub(crate) cap: usize,
}

impl<P: SpanProcessor> SpanProcessor for Bounded<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let taken = self
            .queued
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            });
        if taken.is_err() {
            crate::metrics::span_dropped();
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The OTLP exporter, releasing each batch's places in [`Queued`] once its
/// export attempt is over (delivered or not) and counting failures.
#[derive(Debug)]
pub(crate) struct Releasing<E> {
    pub(crate) inner: E,
    pub(crate) queued: Arc<Queued>,
}

impl<E: SpanExporter> SpanExporter for Releasing<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.inner.export(batch).await;
        self.queued.0.fetch_sub(n, Ordering::AcqRel);
        if let Err(e) = &result {
            crate::metrics::span_export_failed();
            tracing::debug!("OTLP span export failed: {e}");
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
