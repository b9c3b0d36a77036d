//! The worker's report file: one JSON event per line, flushed at once.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use crate::validate::check::CheckResult;
use crate::validate::protocol::Event;

/// Appends events to the report file. Write errors are ignored: the parent
/// notices a missing result and reports the check as failed.
pub struct Sink {
    file: Mutex<File>,
    started: Mutex<HashMap<(String, Option<String>), Instant>>,
}

impl Sink {
    /// Opens (appends to) the report file.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Sink {
            file: Mutex::new(file),
            started: Mutex::new(HashMap::new()),
        })
    }

    /// Writes one event as a line.
    pub fn send(&self, event: &Event) {
        let Ok(mut line) = serde_json::to_string(event) else {
            return;
        };
        line.push('\n');
        if let Ok(mut file) = self.file.lock() {
            let _ = file.write_all(line.as_bytes());
            let _ = file.flush();
        }
    }

    /// Announces a check (and a case within it) before running it.
    pub fn begin(&self, check: &str, tool: Option<&str>, case: impl Into<String>) {
        if let Ok(mut started) = self.started.lock() {
            started
                .entry((check.to_string(), tool.map(str::to_string)))
                .or_insert_with(Instant::now);
        }
        self.send(&Event::Begin {
            check: check.to_string(),
            tool: tool.map(str::to_string),
            case: case.into(),
        });
    }

    /// Reports a finished check.
    /// Its duration runs from the check's first `begin`, when it had one.
    pub fn result(&self, mut result: CheckResult) {
        let began = self
            .started
            .lock()
            .ok()
            .and_then(|s| s.get(&(result.name.clone(), result.tool.clone())).copied());
        if let Some(began) = began.filter(|_| result.duration_ms <= 0.0) {
            result.duration_ms = began.elapsed().as_secs_f64() * 1000.0;
        }
        self.send(&Event::Check { result });
    }
}
