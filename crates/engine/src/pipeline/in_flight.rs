//! The calls running now, for the operator page: which tool, for whom,
//! since when. A call is listed from the moment the pipeline takes it
//! until its record is written (approval waits included).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde::Serialize;

/// One call in flight, as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Running {
    /// The call's id.
    pub call_id: String,
    /// The name it was called by.
    pub tool: String,
    /// Who it runs for.
    pub principal: String,
    /// When it started, ms since the Unix epoch.
    pub started_unix_ms: u128,
    /// How long it has run, in ms.
    pub elapsed_ms: u64,
}

struct Entry {
    call_id: String,
    tool: String,
    principal: String,
    started_unix_ms: u128,
    started: Instant,
}

/// The registry; one per pipeline. Its size is the number of calls the
/// pipeline runs at once, which the transports bound.
#[derive(Default)]
pub struct InFlight {
    next: AtomicU64,
    calls: Mutex<BTreeMap<u64, Entry>>,
}

/// Keeps a call listed until dropped.
pub struct Listed {
    registry: Arc<InFlight>,
    key: u64,
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.registry
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}

impl InFlight {
    /// Lists a call until the returned guard drops.
    pub fn enter(self: &Arc<Self>, call_id: &str, tool: &str, principal: &str) -> Listed {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let entry = Entry {
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            principal: principal.to_string(),
            started_unix_ms: crate::audit::now_ms(),
            started: Instant::now(),
        };
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, entry);
        Listed {
            registry: self.clone(),
            key,
        }
    }

    /// The calls running now, oldest first.
    pub fn list(&self) -> Vec<Running> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls
            .values()
            .map(|e| Running {
                call_id: e.call_id.clone(),
                tool: e.tool.clone(),
                principal: e.principal.clone(),
                started_unix_ms: e.started_unix_ms,
                elapsed_ms: u64::try_from(e.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            })
            .collect()
    }
}
