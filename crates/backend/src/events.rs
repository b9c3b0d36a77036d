//! The host's event bus: `tool:pre`, `tool:post`, `tool:error` and the
//! events modules contribute, delivered to in-process observers.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use serde_json::Value;

/// An observer: called synchronously with the event name and payload. Keep it
/// quick; it runs on the caller's thread.
pub type Observer = Arc<dyn Fn(&str, &Value) + Send + Sync>;

/// Event names the host itself emits.
pub const HOST_EVENTS: [&str; 3] = ["tool:pre", "tool:post", "tool:error"];

/// Known event names and their observers.
#[derive(Default)]
pub struct EventBus {
    names: RwLock<BTreeSet<String>>,
    observers: RwLock<Vec<Observer>>,
    observed: std::sync::atomic::AtomicBool,
    reports: std::sync::Mutex<Vec<(String, Value)>>,
}

/// The event a module emits at mount to report on its own state (e.g. which
/// sandbox layers hold): `{"title": str, "items": [{"name", "state", "detail"}]}`.
/// The host keeps these for `toolhost check`.
pub const MODULE_REPORT: &str = "module:report";

impl EventBus {
    /// A bus that knows the host's own events.
    pub fn new() -> Arc<Self> {
        let bus = EventBus::default();
        if let Ok(mut names) = bus.names.write() {
            names.extend(HOST_EVENTS.iter().map(|s| s.to_string()));
        }
        Arc::new(bus)
    }

    /// Declares event names (from a module's `contribute_events`).
    pub fn contribute(&self, names: impl IntoIterator<Item = String>) {
        if let Ok(mut known) = self.names.write() {
            known.extend(names);
        }
    }

    /// Every known event name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.names
            .read()
            .map(|n| n.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Adds an observer of every event.
    pub fn subscribe(&self, observer: Observer) {
        if let Ok(mut observers) = self.observers.write() {
            observers.push(observer);
            self.observed.store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// Whether anyone listens (so callers can skip building payloads).
    pub fn is_observed(&self) -> bool {
        self.observed.load(std::sync::atomic::Ordering::Acquire)
            || tracing::enabled!(target: "toolhost::events", tracing::Level::DEBUG)
    }

    /// Keeps a module's [`MODULE_REPORT`].
    pub fn record_report(&self, module: &str, payload: &Value) {
        if let Ok(mut reports) = self.reports.lock() {
            reports.push((module.to_string(), payload.clone()));
        }
    }

    /// Every module report so far, as `(module, payload)`.
    pub fn reports(&self) -> Vec<(String, Value)> {
        self.reports.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Delivers an event to every observer; an observer that panics is
    /// logged and skipped, never propagated into a module.
    pub fn emit(&self, event: &str, payload: &Value) {
        tracing::debug!(target: "toolhost::events", event, %payload, "event");
        let observers = match self.observers.read() {
            Ok(o) if !o.is_empty() => o.clone(),
            _ => return,
        };
        for observer in observers {
            let run = std::panic::AssertUnwindSafe(|| observer(event, payload));
            if std::panic::catch_unwind(run).is_err() {
                tracing::error!(event, "an event observer panicked");
            }
        }
    }
}
