//! Who owns each HTTP session, and how many one principal may hold.
//!
//! A session belongs to the principal whose token opened it: a request
//! naming it with any other principal's token is answered exactly as for a
//! session that does not exist ([`not_found`]), so a session id seen in a
//! log or a proxy is worth nothing without its owner's token, and a
//! stranger cannot even learn that it is live.
//!
//! Each principal holds at most `sessions_per_principal` sessions. At that
//! quota a new `initialize` ends the principal's least recently used *idle*
//! session (no response of it still streaming: an SDK client's open GET
//! stream or a running call keeps its session busy) instead of being
//! refused, so a flood of `initialize` from one principal recycles its own
//! sessions and never takes the places of others.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, SizeHint};
use hyper::{Response, StatusCode};

use super::super::auth::Body;

/// The sessions, by id, with their owners.
pub struct Owners {
    per_principal: usize,
    sessions: Mutex<HashMap<String, Owned>>,
    /// Ticks up with every use: the order of last use, for LRU.
    clock: AtomicU64,
}

struct Owned {
    principal: String,
    last_used: u64,
    busy: Arc<AtomicUsize>,
}

/// Held while a response of a session is being produced or streamed.
pub struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether a principal may open one more session.
#[derive(Debug, PartialEq, Eq)]
pub enum Room {
    /// Under its quota.
    Free,
    /// At its quota: this idle session of its own must end first (it has
    /// been forgotten here already).
    Evict(String),
    /// At its quota, every session busy.
    Full,
}

impl Owners {
    /// At most `per_principal` sessions per principal (at least one).
    pub fn new(per_principal: usize) -> Owners {
        Owners {
            per_principal: per_principal.max(1),
            sessions: Mutex::new(HashMap::new()),
            clock: AtomicU64::new(0),
        }
    }

    /// The quota.
    pub fn per_principal(&self) -> usize {
        self.per_principal
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owned>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `session` was opened by `principal`; busy until the returned guard
    /// (held by the `initialize` answer) is dropped.
    pub fn register(&self, session: &str, principal: &str) -> Busy {
        let busy = Arc::new(AtomicUsize::new(1));
        let owned = Owned {
            principal: principal.to_owned(),
            last_used: self.tick(),
            busy: busy.clone(),
        };
        self.lock().insert(session.to_owned(), owned);
        Busy(busy)
    }

    /// A request of `principal` names `session`: a guard to hold while it is
    /// answered, or `None` when the session is unknown or someone else's.
    pub fn claim(&self, session: &str, principal: &str) -> Option<Busy> {
        let tick = self.tick();
        let mut sessions = self.lock();
        let owned = sessions.get_mut(session)?;
        if owned.principal != principal {
            return None;
        }
        owned.last_used = tick;
        owned.busy.fetch_add(1, Ordering::AcqRel);
        Some(Busy(owned.busy.clone()))
    }

    /// The session ended.
    pub fn forget(&self, session: &str) {
        self.lock().remove(session);
    }

    /// Forgets the sessions `live` no longer names.
    pub fn retain(&self, live: impl Fn(&str) -> bool) {
        self.lock().retain(|id, _| live(id));
    }

    /// Whether `principal` is at its quota (ending one of its sessions
    /// could make room).
    pub fn at_quota(&self, principal: &str) -> bool {
        self.lock().values().filter(|o| o.principal == principal).count() >= self.per_principal
    }

    /// Whether `principal` may open a session, and which of its own must
    /// end first. Call it under the admission lock.
    pub fn room_for(&self, principal: &str) -> Room {
        self.room(principal, self.per_principal - 1)
    }

    /// Once `principal` has opened a session past its quota: which of its
    /// own idle sessions ends for it (forgotten here already), if any.
    pub fn trim(&self, principal: &str) -> Room {
        self.room(principal, self.per_principal)
    }

    /// Whether `principal` is at its quota with every session busy (no
    /// session of its own can make room).
    pub fn all_busy(&self, principal: &str) -> bool {
        let sessions = self.lock();
        let mine = sessions.values().filter(|o| o.principal == principal);
        let (held, busy) = mine.fold((0, 0), |(held, busy), o| {
            (held + 1, busy + usize::from(o.busy.load(Ordering::Acquire) > 0))
        });
        held >= self.per_principal && busy == held
    }

    /// `Free` while `principal` holds at most `keep` sessions; past it, its
    /// least recently used idle session (forgotten here), or `Full`.
    fn room(&self, principal: &str, keep: usize) -> Room {
        let mut sessions = self.lock();
        let mut held = 0;
        let mut oldest_idle: Option<(&String, u64)> = None;
        for (id, owned) in sessions.iter() {
            if owned.principal != principal {
                continue;
            }
            held += 1;
            let idle = owned.busy.load(Ordering::Acquire) == 0;
            if idle && oldest_idle.is_none_or(|(_, used)| owned.last_used < used) {
                oldest_idle = Some((id, owned.last_used));
            }
        }
        if held <= keep {
            return Room::Free;
        }
        match oldest_idle.map(|(id, _)| id.clone()) {
            Some(id) => {
                sessions.remove(&id);
                Room::Evict(id)
            }
            None => Room::Full,
        }
    }
}

/// rmcp's answer for a session it does not hold, word for word: the answer
/// to a request naming a session that is not the caller's.
pub fn not_found() -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(b"Not Found: Session not found")).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

/// `response` whose session stays busy until its body has been sent (or
/// dropped): an SSE stream keeps its session from being taken as idle.
pub fn hold_while_streaming(response: Response<Body>, busy: Busy) -> Response<Body> {
    response.map(|body| Held { body, _busy: busy }.boxed())
}

struct Held {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for Held {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_answers_only_its_owner() {
        let owners = Owners::new(4);
        drop(owners.register("s1", "admin"));
        assert!(owners.claim("s1", "admin").is_some());
        assert!(owners.claim("s1", "mallory").is_none());
        assert!(owners.claim("nope", "admin").is_none());
        owners.forget("s1");
        assert!(owners.claim("s1", "admin").is_none());
    }

    #[test]
    fn at_quota_the_least_recently_used_idle_session_goes() {
        let owners = Owners::new(3);
        for id in ["a", "b", "c"] {
            drop(owners.register(id, "p"));
        }
        drop(owners.register("x", "other"));
        // `a` is used again (now the most recent); `b` is busy streaming.
        drop(owners.claim("a", "p"));
        let streaming = owners.claim("b", "p");
        assert!(owners.at_quota("p") && !owners.at_quota("other"));
        assert_eq!(owners.room_for("other"), Room::Free);
        assert_eq!(owners.room_for("p"), Room::Evict("c".into()));
        drop(owners.register("d", "p"));
        assert_eq!(owners.room_for("p"), Room::Evict("a".into()));
        drop(owners.register("e", "p"));
        // Left: b (busy), d, e; d is the oldest idle.
        assert_eq!(owners.room_for("p"), Room::Evict("d".into()));
        let _d = owners.register("d2", "p");
        let _e = owners.claim("e", "p");
        assert_eq!(owners.room_for("p"), Room::Full, "every session is busy");
        drop(streaming);
        assert_eq!(owners.room_for("p"), Room::Evict("b".into()));
        assert!(
            owners.claim("x", "other").is_some(),
            "other principals are untouched"
        );
    }
}
