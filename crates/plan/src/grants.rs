//! Grants: a call's lent state, reachable after the call by the module it
//! was lent to (see `toolhost_core::state`, "Outside a call, only by
//! grant").
//!
//! # Why one table per process
//!
//! A grant is issued inside a call (the engine's context answers a `grant`
//! request) and used outside any call, through the coordinator the module
//! kept from `mount` (the backend's). The two never share a handle, so the
//! table is the process's: a token is 128 random bits and names nothing but
//! the lent state it maps to, so a table shared by every host of one
//! process (tests run several) lets no host use another's grants unless it
//! holds the token, and the mount check below holds even then.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use toolhost_core::state::{check, Answer, Granted, Request, MAX_GRANTS, MAX_GRANTS_PER_MOUNT, MAX_TTL_MS};

use crate::lent::LentState;

struct Grant {
    lent: Arc<dyn LentState>,
    /// `None`: until released.
    expires: Option<Instant>,
}

impl Grant {
    fn live(&self, now: Instant) -> bool {
        self.expires.is_none_or(|at| at > now)
    }
}

fn table() -> &'static Mutex<HashMap<String, Grant>> {
    static TABLE: OnceLock<Mutex<HashMap<String, Grant>>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// Issues a grant to `lent` (the call's state), until released or for
/// `ttl_ms` (capped at a week); the answer's value is the token.
pub fn issue(lent: Arc<dyn LentState>, ttl_ms: Option<u64>) -> Answer {
    let ttl = ttl_ms.map(|ms| Duration::from_millis(ms.min(MAX_TTL_MS)));
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        return Answer::failed("unavailable", format!("no randomness for a grant: {e}"));
    }
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let now = Instant::now();
    let mut table = table().lock().unwrap_or_else(PoisonError::into_inner);
    table.retain(|_, g| g.live(now));
    let scope = lent.scope();
    if table.values().filter(|g| g.lent.scope() == scope).count() >= MAX_GRANTS_PER_MOUNT {
        return Answer::failed(
            "unavailable",
            format!("module '{scope}' holds {MAX_GRANTS_PER_MOUNT} grants already; it must release some"),
        );
    }
    if table.len() >= MAX_GRANTS {
        return Answer::failed(
            "unavailable",
            format!("this host holds {MAX_GRANTS} grants already; retry later"),
        );
    }
    table.insert(
        token.clone(),
        Grant {
            lent,
            expires: ttl.map(|ttl| now + ttl),
        },
    );
    Answer::ok(Some(token))
}

/// Answers a [`Granted`] request (JSON text) of the module mounted as
/// `scope`: a grant issued to another mount, expired or released is
/// `unsupported`, as if never issued, so the module falls back as it would
/// without shared state.
pub fn answer(scope: &str, request: &str) -> String {
    let granted: Granted = match serde_json::from_str(request) {
        Ok(g) => g,
        Err(e) => {
            return Answer::failed("bad_request", format!("not a granted state request: {e}")).to_json()
        }
    };
    if let Err(refused) = check(&granted.request) {
        return refused.to_json();
    }
    if matches!(granted.request, Request::Grant { .. }) {
        return Answer::failed("bad_request", "a grant cannot issue another grant; ask in a call").to_json();
    }
    let now = Instant::now();
    let lent = {
        let mut table = table().lock().unwrap_or_else(PoisonError::into_inner);
        let lent = match table.get(&granted.grant) {
            Some(grant) if grant.live(now) && grant.lent.scope() == scope => grant.lent.clone(),
            found => {
                if found.is_some_and(|grant| !grant.live(now)) {
                    table.remove(&granted.grant);
                }
                return Answer::failed(
                    "unsupported",
                    "no such grant for this module (expired or released)",
                )
                .to_json();
            }
        };
        if granted.request == Request::Release {
            table.remove(&granted.grant);
            return Answer::ok(None).to_json();
        }
        lent
    };
    crate::lent::perform_guarded(lent.as_ref(), &granted.request).to_json()
}

/// Ends these grants (an isolated module's, when its worker ended: the
/// module can no longer release them itself).
pub fn release_all(tokens: &[String]) {
    let mut table = table().lock().unwrap_or_else(PoisonError::into_inner);
    for token in tokens {
        table.remove(token);
    }
}

/// Whether `token` names a grant the table still holds.
pub fn holds(token: &str) -> bool {
    let now = Instant::now();
    table()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(token)
        .is_some_and(|g| g.live(now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counter {
        scope: String,
        calls: AtomicUsize,
    }

    impl LentState for Counter {
        fn perform(&self, _request: &Request) -> Answer {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Answer::ok(Some("v".into()))
        }
        fn scope(&self) -> &str {
            &self.scope
        }
    }

    fn request(grant: &str, request: Request) -> String {
        serde_json::to_string(&Granted {
            grant: grant.into(),
            request,
        })
        .unwrap()
    }

    #[test]
    fn a_grant_serves_its_mount_only_until_released() {
        let lent = Arc::new(Counter {
            scope: "bash".into(),
            calls: AtomicUsize::new(0),
        });
        let token = issue(lent.clone(), None).value.expect("a token");
        let get = || Request::Get { key: "k".into() };
        assert!(answer("bash", &request(&token, get())).contains(r#""value":"v""#));
        let other = answer("filesystem", &request(&token, get()));
        assert!(other.contains("unsupported"), "{other}");
        let regrant = answer("bash", &request(&token, Request::Grant { ttl_ms: None }));
        assert!(regrant.contains("bad_request"), "{regrant}");
        assert!(answer("bash", &request(&token, Request::Release)).contains(r#""ok":true"#));
        let after = answer("bash", &request(&token, get()));
        assert!(after.contains("unsupported"), "{after}");
        assert_eq!(
            lent.calls.load(Ordering::SeqCst),
            1,
            "only the one live get reached the store"
        );
        let forged = answer("bash", &request("00", get()));
        assert!(forged.contains("unsupported"), "{forged}");
    }

    #[test]
    fn a_mount_that_never_releases_exhausts_its_own_quota_only() {
        let counter = |scope: &str| {
            Arc::new(Counter {
                scope: scope.into(),
                calls: AtomicUsize::new(0),
            })
        };
        let hog = counter("hog");
        let tokens: Vec<String> = (0..MAX_GRANTS_PER_MOUNT)
            .map(|_| issue(hog.clone(), None).value.expect("within the quota"))
            .collect();
        let refused = issue(hog.clone(), None);
        assert!(!refused.ok, "{refused:?}");
        assert!(
            issue(counter("other"), None).ok,
            "another mount still gets grants"
        );
        release_all(&tokens);
        assert!(!holds(&tokens[0]));
        assert!(issue(hog, None).ok, "released grants free the quota");
    }

    #[test]
    fn an_expired_grant_is_refused() {
        let lent = Arc::new(Counter {
            scope: "bash".into(),
            calls: AtomicUsize::new(0),
        });
        let token = issue(lent, Some(0)).value.expect("a token");
        let after = answer("bash", &request(&token, Request::Get { key: "k".into() }));
        assert!(after.contains("unsupported"), "{after}");
    }
}
