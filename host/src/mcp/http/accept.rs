//! The accept loop's defences: a cap on authenticated connections, a
//! back-off when the process runs out of descriptors, and logs that cannot
//! flood.
//!
//! Without them a server out of descriptors (idle connections held open
//! by anyone on the machine) would retry `accept` at once, forever: 100 %
//! CPU and tens of MB of logs a second, while real clients time out.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The first pause after an accept failure that more accepting cannot fix.
const BACKOFF_MIN: Duration = Duration::from_millis(5);
/// The longest pause.
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// At most one log line per kind of trouble in this window.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// What to do after `accept` failed.
pub struct Backoff {
    next: Duration,
    log: RateLimitedLog,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: BACKOFF_MIN,
            log: RateLimitedLog::new(LOG_EVERY),
        }
    }
}

impl Backoff {
    /// How long to pause after `error` (zero for an error that concerned
    /// one connection only); logs at most once per window.
    pub fn after(&mut self, error: &io::Error) -> Duration {
        let resources = matches!(
            error.raw_os_error(),
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
        );
        if let Some(suppressed) = self.log.admit() {
            tracing::warn!(
                suppressed,
                "accept failed: {error}{}",
                if resources {
                    " (out of descriptors or memory: pausing the accept loop; \
                     raise the limit with ulimit -n or lower max_connections)"
                } else {
                    ""
                }
            );
        }
        if !resources {
            return Duration::ZERO;
        }
        let pause = self.next;
        self.next = (self.next * 2).min(BACKOFF_MAX);
        pause
    }

    /// An accept succeeded: the next failure starts from the shortest pause.
    pub fn reset(&mut self) {
        self.next = BACKOFF_MIN;
    }
}

/// One log line per window; counts what it held back.
pub struct RateLimitedLog {
    every: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimitedLog {
    /// A log allowed one line per `every`.
    pub fn new(every: Duration) -> Self {
        RateLimitedLog {
            every,
            last: None,
            suppressed: 0,
        }
    }

    /// `Some(lines held back since the last one)` when a line may go out.
    pub fn admit(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < self.every)
        {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// The cap on open authenticated connections (see [`super::unauthenticated`]
/// for the others).
#[derive(Clone)]
pub struct Connections {
    permits: Arc<Semaphore>,
    max: usize,
}

impl Connections {
    /// At most `max` connections at once.
    pub fn new(max: usize) -> Self {
        Connections {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// A permit held for the connection's life, or `None` when full.
    pub fn admit(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    /// The answer to a request whose connection finds every place taken:
    /// 503, and the connection closes (its body may be left unread).
    pub fn refusal(&self) -> hyper::Response<super::super::auth::Body> {
        let mut refused = super::super::auth::refusal(
            hyper::StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "too many connections: this server holds at most {} (max_connections); retry later\n",
                self.max
            ),
        );
        let headers = refused.headers_mut();
        headers.insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
        headers.insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("1"),
        );
        refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_exhaustion_backs_off_and_other_errors_do_not() {
        let mut backoff = Backoff::default();
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        let first = backoff.after(&emfile);
        let second = backoff.after(&emfile);
        assert!(first >= BACKOFF_MIN && second > first, "{first:?} {second:?}");
        for _ in 0..20 {
            assert!(backoff.after(&emfile) <= BACKOFF_MAX);
        }
        backoff.reset();
        assert_eq!(backoff.after(&emfile), BACKOFF_MIN);
        let aborted = io::Error::from_raw_os_error(libc::ECONNABORTED);
        assert_eq!(backoff.after(&aborted), Duration::ZERO);
    }

    #[test]
    fn the_log_holds_back_lines_within_its_window() {
        let mut log = RateLimitedLog::new(Duration::from_secs(3600));
        assert_eq!(log.admit(), Some(0));
        assert_eq!(log.admit(), None);
        assert_eq!(log.admit(), None);
        log.last = Some(Instant::now() - Duration::from_secs(7200));
        assert_eq!(log.admit(), Some(2));
    }

    #[test]
    fn connections_are_capped() {
        let connections = Connections::new(2);
        let a = connections.admit();
        let b = connections.admit();
        assert!(a.is_some() && b.is_some());
        assert!(connections.admit().is_none());
        drop(a);
        assert!(connections.admit().is_some());
    }
}
