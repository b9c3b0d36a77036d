//! Approvals waiting for an answer from the operator page. A call whose
//! policy says `ask` is put here (when the page is served) and waits for
//! whichever answers first: its own client (elicitation) or an operator on
//! the page. The registry is bounded: past [`MAX_PENDING`] a call is not
//! offered to the page and is asked as if there were no page.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

/// The most approvals waiting on the page at once.
pub const MAX_PENDING: usize = 1024;

/// One approval as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Waiting {
    /// The page's handle for it (what Approve / Deny send back).
    pub id: u64,
    /// The call's id.
    pub call_id: String,
    /// The tool's public name.
    pub tool: String,
    /// Who asked (the caller's principal).
    pub principal: String,
    /// The policy rule that asked.
    pub reason: String,
    /// The (validated) input the tool would run with.
    pub input: Value,
    /// When it began waiting, ms since the Unix epoch.
    pub since_unix_ms: u128,
    /// Separation of duties: the caller may not approve it.
    pub another_principal: bool,
}

/// An operator's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// Approved (`false`: denied).
    pub approve: bool,
    /// The operator's principal.
    pub by: String,
}

/// Why an operator's answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// Answered already (by the client or another operator), or the call
    /// ended.
    #[error("this approval is no longer pending (answered already, or the call ended)")]
    Gone,
    /// Separation of duties: the caller cannot approve its own call.
    #[error(
        "'{0}' cannot approve its own call: the plan requires another principal to approve this tool \
         ([policy.tools.NAME] approval = \"another_principal\")"
    )]
    SamePrincipal(String),
}

struct Entry {
    shown: Waiting,
    answer: oneshot::Sender<Decided>,
}

/// The registry; one per pipeline.
#[derive(Default)]
pub struct Approvals {
    /// Set when the operator page is served: without it nobody could answer.
    served: AtomicBool,
    next: AtomicU64,
    waiting: Mutex<BTreeMap<u64, Entry>>,
}

/// Keeps an approval listed until dropped (answered or abandoned).
pub struct Offered {
    registry: Arc<Approvals>,
    id: u64,
    /// The operator's answer.
    pub answer: oneshot::Receiver<Decided>,
}

impl Drop for Offered {
    fn drop(&mut self) {
        self.registry.entries().remove(&self.id);
    }
}

impl Approvals {
    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The operator page is served: calls that ask are offered to it.
    pub fn serve_page(&self) {
        self.served.store(true, Ordering::Relaxed);
    }

    /// Whether calls are offered to the page.
    pub fn page_served(&self) -> bool {
        self.served.load(Ordering::Relaxed)
    }

    /// Offers an approval to the page; `None` when the page is not served
    /// or [`MAX_PENDING`] wait already.
    pub fn offer(self: &Arc<Self>, mut shown: Waiting) -> Option<Offered> {
        if !self.page_served() {
            return None;
        }
        let mut entries = self.entries();
        if entries.len() >= MAX_PENDING {
            tracing::warn!(tool = %shown.tool, "{MAX_PENDING} approvals wait on the operator page: this one is not offered there");
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        shown.id = id;
        let (answer, receiver) = oneshot::channel();
        entries.insert(id, Entry { shown, answer });
        Some(Offered {
            registry: self.clone(),
            id,
            answer: receiver,
        })
    }

    /// The approvals waiting now, oldest first.
    pub fn list(&self) -> Vec<Waiting> {
        self.entries().values().map(|e| e.shown.clone()).collect()
    }

    /// An operator's answer to approval `id`. Approving one's own call is
    /// refused when the tool requires another principal (denying is not).
    pub fn decide(&self, id: u64, decided: Decided) -> Result<Waiting, DecideError> {
        let mut entries = self.entries();
        let entry = entries.get(&id).ok_or(DecideError::Gone)?;
        if decided.approve && entry.shown.another_principal && entry.shown.principal == decided.by {
            return Err(DecideError::SamePrincipal(decided.by));
        }
        let entry = entries.remove(&id).ok_or(DecideError::Gone)?;
        // The call may have ended between the two: then nobody hears it.
        entry.answer.send(decided).map_err(|_| DecideError::Gone)?;
        Ok(entry.shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(principal: &str, another: bool) -> Waiting {
        Waiting {
            id: 0,
            call_id: "c".into(),
            tool: "t".into(),
            principal: principal.into(),
            reason: "r".into(),
            input: Value::Null,
            since_unix_ms: 0,
            another_principal: another,
        }
    }

    #[test]
    fn only_a_served_page_is_offered_and_the_caller_cannot_approve_when_separated() {
        let approvals = Arc::new(Approvals::default());
        assert!(approvals.offer(waiting("alice", true)).is_none());
        approvals.serve_page();
        let mut offered = approvals.offer(waiting("alice", true)).expect("offered");
        let id = approvals.list()[0].id;
        let by = |who: &str, approve| Decided {
            approve,
            by: who.into(),
        };
        assert_eq!(
            approvals.decide(id, by("alice", true)).err(),
            Some(DecideError::SamePrincipal("alice".into()))
        );
        approvals.decide(id, by("bob", true)).expect("bob approves");
        assert_eq!(offered.answer.try_recv().expect("answer"), by("bob", true));
        assert_eq!(
            approvals.decide(id, by("bob", false)).err(),
            Some(DecideError::Gone)
        );
        drop(offered);
        assert!(approvals.list().is_empty());
    }
}
