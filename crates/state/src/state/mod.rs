//! Shared state: idempotency records (and, in a fleet, audit records).
//!
//! Two backends behind one protocol: the embedded store ([`embedded`], SQLite
//! in WAL mode under the plan's state folder, shared by every process on the
//! machine) and the fleet store ([`postgres`], `[host] state_url`), shared by
//! every host that names the same database.
//!
//! The protocol is the same for both. A keyed call *claims* its key: one
//! atomic step either inserts a pending row naming this call as the owner,
//! with a lease, or finds the row that is there. The owner runs the tool and
//! then *completes* the row with the result (or *releases* it when the call
//! failed, so a retry may run). Everyone else finds a pending row and waits,
//! or a finished one and replays it. A pending row whose lease ran out means
//! its owner died (or lost the store) somewhere between starting the tool and
//! recording the result: the tool may or may not have acted, so the key is
//! refused (`idempotency_unknown_outcome`) until it expires, never run again.

pub use toolhost_plan::canonical;
pub use toolhost_plan::plan::state_config as config;
pub mod audit_sink;
pub mod embedded;
pub mod postgres;
pub mod tasks;
mod tasks_embedded;

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;
use toolhost_core::ToolResult;

/// What a claim asks for.
#[derive(Debug, Clone)]
pub struct Intent {
    /// The caller's key.
    pub key: String,
    /// The tool's public name.
    pub tool: String,
    /// [`canonical::digest`] of the input.
    pub digest: String,
    /// Unique per claim: who may complete or release the row.
    pub owner: String,
    /// How long the owner has to record a result before its row counts as
    /// abandoned (the call's deadline plus its grace plus a margin).
    pub lease: Duration,
    /// How long the finished record is kept, counted from when it is
    /// recorded (a pending record lives for its lease plus this, so a key
    /// never expires under a call that is still running).
    pub ttl: Duration,
}

/// What a claim found.
#[derive(Debug)]
pub enum Claim {
    /// The caller owns the key now and must run the call.
    Owned,
    /// The call ran before: here is its result.
    Replay(Box<ToolResult>),
    /// Another call with this key is running; wait and claim again.
    Pending,
    /// The key was used for another call (`tool` and whether the input
    /// differed).
    Conflict {
        /// The tool the key was first used with.
        tool: String,
    },
    /// A call with this key started and never reported back before its
    /// lease ran out: its outcome is unknown.
    Abandoned,
}

/// Why the store could not answer.
#[derive(Debug, Error, Clone)]
pub enum StateError {
    /// The store cannot be reached now (PostgreSQL down, the embedded file
    /// locked past its busy timeout); a retry may succeed.
    #[error("the state store is unavailable: {0}")]
    Unavailable(String),
    /// The store answered something it should not have (a corrupt record,
    /// a schema newer than this host).
    #[error("the state store is broken: {0}")]
    Broken(String),
}

/// The configured backend.
pub enum Store {
    /// SQLite under the state folder.
    Embedded(embedded::Store),
    /// PostgreSQL at `[host] state_url`.
    Postgres(postgres::IdempotencyStore),
}

impl Store {
    /// The store the plan asks for. The embedded one is opened (and its
    /// schema created) now; the PostgreSQL one connects and migrates now if
    /// it can, and again at each use until it has (see
    /// [`postgres::IdempotencyStore`]).
    pub fn open(plan: &crate::plan::Plan) -> Result<Arc<Store>, StateError> {
        match &plan.host.state_url {
            None => Ok(Arc::new(Store::Embedded(embedded::Store::open(
                &plan.state_dir(),
            )?))),
            Some(url) => Ok(Arc::new(Store::Postgres(postgres::IdempotencyStore::open(url)?))),
        }
    }

    /// Claims `intent.key` (see the module docs).
    pub async fn claim(&self, intent: &Intent) -> Result<Claim, StateError> {
        match self {
            Store::Embedded(s) => s.claim(intent),
            Store::Postgres(s) => s.claim(intent).await,
        }
    }

    /// Records the owner's result, kept for `ttl` from now. `Ok(false)`
    /// when the row is no longer this owner's (it expired and was claimed
    /// again).
    pub async fn complete(
        &self,
        key: &str,
        owner: &str,
        result: &ToolResult,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let text = serde_json::to_string(result).map_err(|e| StateError::Broken(e.to_string()))?;
        match self {
            Store::Embedded(s) => s.complete(key, owner, &text, ttl),
            Store::Postgres(s) => s.complete(key, owner, &text, ttl).await,
        }
    }

    /// Drops the owner's pending row so the key may run again. Called from
    /// `Drop`, so it does not wait for PostgreSQL, which is retried in the
    /// background until `until` (the claim's lease end).
    pub fn release(&self, key: &str, owner: &str, until: std::time::Instant) {
        match self {
            Store::Embedded(s) => {
                if let Err(e) = s.release(key, owner) {
                    tracing::warn!(key, "cannot release the idempotency key: {e}");
                }
            }
            Store::Postgres(s) => s.release(key, owner, until),
        }
    }

    /// Which backend, for messages (`sqlite`, `postgres`).
    pub fn kind(&self) -> &'static str {
        match self {
            Store::Embedded(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }
}

/// Parses a stored result.
fn parse_result(key: &str, text: &str) -> Result<ToolResult, StateError> {
    serde_json::from_str(text)
        .map_err(|e| StateError::Broken(format!("a corrupt idempotency record for '{key}': {e}")))
}
