//! Caps on what an isolated module's worker may send the host.
//!
//! Isolation protects the host's memory from a module's crashes, but the
//! worker still talks to the host: every frame it writes is read, parsed
//! and acted on in the host (a log line written, an event delivered, a
//! progress report queued for its call, event names kept for good). A
//! worker that writes frames as fast as it can would otherwise grow the
//! host's memory and flood its log. Past any of these caps the worker is
//! killed and its calls answer `module_crashed`, naming the cap.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::frame::{Frame, Kind};

pub use toolhost_plan::plan::limits::WorkerLimits;

/// A cap the worker went past.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sent {seen} {what}, past the limit of {cap} ([host.worker_limits] {key})")]
pub struct Exceeded {
    /// The plan key.
    pub key: &'static str,
    /// What was counted, with its scope ("log lines in one second").
    pub what: &'static str,
    /// The cap.
    pub cap: u64,
    /// How many it sent when it was stopped.
    pub seen: u64,
}

impl Exceeded {
    /// The cap as `error.details.limit`.
    pub fn details(&self) -> Value {
        json!({ "key": self.key, "cap": self.cap, "seen": self.seen })
    }
}

fn check(key: &'static str, what: &'static str, cap: u64, seen: u64) -> Result<(), Exceeded> {
    if seen > cap {
        Err(Exceeded { key, what, cap, seen })
    } else {
        Ok(())
    }
}

/// Counts one worker's frames in the current second, and the event names
/// it contributed since it started.
#[derive(Debug)]
pub(crate) struct Meter {
    limits: WorkerLimits,
    second: Instant,
    frames: u64,
    logs: u64,
    events: u64,
    /// The distinct event names contributed, shared by every worker of
    /// the module (a restarted worker contributes the same names again).
    names: EventNames,
}

/// The event names one module's workers contributed.
pub(crate) type EventNames = std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>;

impl Meter {
    /// A meter starting now; `names` holds the names contributed before.
    pub(crate) fn new(limits: WorkerLimits, names: EventNames) -> Self {
        Meter {
            limits,
            second: Instant::now(),
            frames: 0,
            logs: 0,
            events: 0,
            names,
        }
    }

    /// Counts `frame`; an error when it goes past a per-second cap or the
    /// event names cap.
    pub(crate) fn admit(&mut self, frame: &Frame) -> Result<(), Exceeded> {
        if self.second.elapsed() >= Duration::from_secs(1) {
            self.second = Instant::now();
            self.frames = 0;
            self.logs = 0;
            self.events = 0;
        }
        let l = &self.limits;
        self.frames += 1;
        check(
            "max_frames_per_second",
            "frames in one second",
            l.max_frames_per_second,
            self.frames,
        )?;
        match frame.t {
            Kind::Log => {
                self.logs += 1;
                check(
                    "max_log_lines_per_second",
                    "log lines in one second",
                    l.max_log_lines_per_second,
                    self.logs,
                )
            }
            Kind::Event => {
                self.events += 1;
                check(
                    "max_events_per_second",
                    "events in one second",
                    l.max_events_per_second,
                    self.events,
                )
            }
            Kind::Events => {
                let mut known = self
                    .names
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for name in frame.list.iter().flatten() {
                    check(
                        "max_event_name_bytes",
                        "bytes in one event name",
                        l.max_event_name_bytes,
                        name.len() as u64,
                    )?;
                    if !known.contains(name) {
                        known.insert(name.clone());
                    }
                    check(
                        "max_event_names",
                        "distinct event names",
                        l.max_event_names,
                        known.len() as u64,
                    )?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Counts a frame that belongs to one call in flight (`call`).
    pub(crate) fn admit_for_call(&self, call: &mut CallCount, kind: Kind) -> Result<(), Exceeded> {
        call.frames += 1;
        check(
            "max_frames_per_call",
            "frames for one call",
            self.limits.max_frames_per_call,
            call.frames,
        )?;
        if kind == Kind::Log {
            call.logs += 1;
            check(
                "max_log_lines_per_call",
                "log lines for one call",
                self.limits.max_log_lines_per_call,
                call.logs,
            )?;
        }
        Ok(())
    }
}

/// What one call's worker sent for it so far.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CallCount {
    frames: u64,
    logs: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> WorkerLimits {
        WorkerLimits {
            max_frames_per_second: 10,
            max_log_lines_per_second: 3,
            max_event_names: 4,
            max_frames_per_call: 5,
            max_log_lines_per_call: 2,
            ..WorkerLimits::default()
        }
    }

    #[test]
    fn each_cap_stops_the_frame_past_it() {
        let mut meter = Meter::new(limits(), EventNames::default());
        for _ in 0..3 {
            meter.admit(&Frame::new(Kind::Log)).expect("under the cap");
        }
        let e = meter.admit(&Frame::new(Kind::Log)).expect_err("fourth log line");
        assert_eq!((e.key, e.cap, e.seen), ("max_log_lines_per_second", 3, 4));

        let known = EventNames::default();
        let mut meter = Meter::new(limits(), known.clone());
        let names = |list: &[&str]| {
            let mut frame = Frame::new(Kind::Events);
            frame.list = Some(list.iter().map(|n| n.to_string()).collect());
            frame
        };
        meter.admit(&names(&["a", "b", "c"])).expect("three names");
        // A restarted worker's meter shares what the module contributed:
        // the same names again cost nothing.
        let mut meter = Meter::new(limits(), known);
        meter
            .admit(&names(&["a", "b", "c", "d"]))
            .expect("four distinct names");
        let e = meter.admit(&names(&["e"])).expect_err("five distinct names");
        assert_eq!((e.key, e.seen), ("max_event_names", 5));
        let e = meter.admit(&names(&[&"x".repeat(257)])).expect_err("a long name");
        assert_eq!((e.key, e.seen), ("max_event_name_bytes", 257));

        let meter = Meter::new(limits(), EventNames::default());
        let mut call = CallCount::default();
        meter.admit_for_call(&mut call, Kind::Log).expect("one");
        meter.admit_for_call(&mut call, Kind::Log).expect("two");
        let e = meter.admit_for_call(&mut call, Kind::Log).expect_err("three");
        assert_eq!(e.key, "max_log_lines_per_call");
        assert!(
            e.to_string()
                .contains("[host.worker_limits] max_log_lines_per_call"),
            "{e}"
        );
    }

    #[test]
    fn the_window_restarts_every_second() {
        let mut meter = Meter::new(limits(), EventNames::default());
        for _ in 0..10 {
            meter.admit(&Frame::new(Kind::Progress)).expect("ten");
        }
        meter.second -= Duration::from_secs(1);
        meter.admit(&Frame::new(Kind::Progress)).expect("a new second");
    }
}
