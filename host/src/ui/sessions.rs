//! Signed-in page sessions: a random id (the cookie's value) mapped to the
//! principal who signed in. The bearer token itself never leaves the
//! sign-in request. Sessions are bounded in number (past the cap, the
//! oldest ends for the new one) and in lifetime (`[host.ui] session_secs`).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    /// Who signed in.
    pub principal: String,
    /// The token every state-changing form must carry (CSRF).
    pub csrf: String,
    created: Instant,
}

/// The sessions of one server.
pub struct Sessions {
    max: usize,
    lifetime: Duration,
    by_id: Mutex<HashMap<String, Session>>,
}

/// 32 random bytes from the OS, as hex; `None` when the OS gives none.
fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Sessions {
    /// At most `max` sessions, each living `lifetime` from sign-in.
    pub fn new(max: usize, lifetime: Duration) -> Sessions {
        Sessions {
            max: max.max(1),
            lifetime,
            by_id: Mutex::new(HashMap::new()),
        }
    }

    /// How long a session lives.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// A new session for `principal`: its id, and the session. Expired
    /// sessions go first; at the cap, the oldest ends.
    pub fn open(&self, principal: &str) -> Option<(String, Session)> {
        let id = random_hex()?;
        let session = Session {
            principal: principal.to_string(),
            csrf: random_hex()?,
            created: Instant::now(),
        };
        let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        by_id.retain(|_, s| s.created.elapsed() < self.lifetime);
        while by_id.len() >= self.max {
            let oldest = by_id
                .iter()
                .min_by_key(|(_, s)| s.created)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(oldest) => by_id.remove(&oldest),
                None => break,
            };
        }
        by_id.insert(id.clone(), session.clone());
        Some((id, session))
    }

    /// The live session `id`, if any.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        let alive = by_id.get(id)?.created.elapsed() < self.lifetime;
        if !alive {
            by_id.remove(id);
            return None;
        }
        by_id.get(id).cloned()
    }

    /// Ends session `id` (sign-out).
    pub fn close(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_bounded_and_end() {
        let sessions = Sessions::new(2, Duration::from_secs(60));
        let (a, _) = sessions.open("a").expect("a");
        let (b, _) = sessions.open("b").expect("b");
        let (c, _) = sessions.open("c").expect("c");
        assert!(sessions.get(&a).is_none(), "the oldest ended for the third");
        assert_eq!(sessions.get(&b).expect("b").principal, "b");
        sessions.close(&c);
        assert!(sessions.get(&c).is_none());
        let expired = Sessions::new(2, Duration::ZERO);
        let (d, _) = expired.open("d").expect("d");
        assert!(expired.get(&d).is_none());
    }
}
