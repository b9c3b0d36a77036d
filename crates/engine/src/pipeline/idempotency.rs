//! Idempotency keys in the pipeline: a side-effecting call with a key runs
//! once per key, however many processes or hosts see it.
//!
//! Between policy and the hooks the call claims its key in the state store
//! ([`crate::state`]): the first caller owns it and runs; callers that find
//! the key running wait (until their own deadline, or until cancelled) and
//! then replay the owner's result; the same key with another tool or another
//! input (compared as canonical JSON) is refused with `idempotency_conflict`.
//! The owner records a successful result; a failed one releases the key so a
//! retry may run. A key whose owner vanished mid-call is refused with
//! `idempotency_unknown_outcome` until it expires (`[host] idempotency_ttl`):
//! the tool may have acted, so running it again is not safe.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolhost_core::{Status, ToolResult};

use crate::cancel::CancelToken;
use crate::state::{canonical, Claim, Intent, StateError, Store};

/// Error code: the store cannot be reached; retry later (retryable).
pub const STATE_UNAVAILABLE: &str = "state_unavailable";
/// Error code: the key was used for another call.
pub const CONFLICT: &str = "idempotency_conflict";
/// Error code: the key's call is still running past this caller's deadline
/// (retryable).
pub const IN_FLIGHT: &str = "idempotency_in_flight";
/// Error code: a call with this key started and its outcome was never
/// recorded (its host died or lost the store).
pub const UNKNOWN_OUTCOME: &str = "idempotency_unknown_outcome";

/// Extra time an owner has past its call's deadline and grace to record
/// the result before its claim counts as abandoned: 30 s, or
/// `TOOLHOST_IDEMPOTENCY_LEASE_MARGIN_MS` (for tests of abandoned keys).
fn lease_margin() -> Duration {
    std::env::var("TOOLHOST_IDEMPOTENCY_LEASE_MARGIN_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(30))
}

/// What claiming a key led to.
pub(crate) enum Begun {
    /// Run the call; complete the claim with its result.
    Run(Claimed),
    /// The key's result, to hand back instead of running.
    Replay(Box<ToolResult>),
}

/// A call's hold on its key. Dropped without [`Claimed::complete`], it
/// releases the key (the call never ran or failed).
pub struct Claimed {
    store: Arc<Store>,
    key: String,
    owner: String,
    lease_end: Instant,
    ttl: Duration,
    finished: AtomicBool,
}

impl Claimed {
    /// Records the result: a success is kept for replay; a failure releases
    /// the key. When the store is unreachable the record is retried in the
    /// background until the lease ends (the key waits meanwhile).
    pub async fn complete(&self, result: &ToolResult) {
        if !result.success {
            return; // Drop releases the key.
        }
        self.finished.store(true, Ordering::SeqCst);
        match self.store.complete(&self.key, &self.owner, result, self.ttl).await {
            Ok(true) => {}
            Ok(false) => tracing::error!(
                key = self.key,
                "the idempotency key was taken over before its result was recorded (the call outlived its lease)"
            ),
            Err(StateError::Unavailable(e)) => {
                tracing::warn!(key = self.key, "cannot record the idempotent result yet, retrying: {e}");
                let (store, key, owner) = (self.store.clone(), self.key.clone(), self.owner.clone());
                let (lease_end, ttl, result) = (self.lease_end, self.ttl, result.clone());
                tokio::spawn(async move { complete_later(store, key, owner, lease_end, ttl, result).await });
            }
            Err(e) => tracing::error!(key = self.key, "cannot record the idempotent result: {e}"),
        }
    }
}

/// Retries recording a result until it is stored or the lease ends.
async fn complete_later(
    store: Arc<Store>,
    key: String,
    owner: String,
    lease_end: Instant,
    ttl: Duration,
    result: ToolResult,
) {
    let mut pause = Duration::from_millis(100);
    while Instant::now() + pause < lease_end {
        tokio::time::sleep(pause).await;
        match store.complete(&key, &owner, &result, ttl).await {
            Ok(_) => {
                tracing::info!(key, "recorded the idempotent result after the store came back");
                return;
            }
            Err(StateError::Unavailable(_)) => pause = (pause * 2).min(Duration::from_secs(2)),
            Err(e) => {
                tracing::error!(key, "cannot record the idempotent result: {e}");
                return;
            }
        }
    }
    tracing::error!(
        key,
        "the store stayed unreachable for the whole lease; the key's outcome is unknown"
    );
}

impl Drop for Claimed {
    fn drop(&mut self) {
        if !self.finished.load(Ordering::SeqCst) {
            self.store.release(&self.key, &self.owner, self.lease_end);
        }
    }
}

/// What the pipeline knows about a keyed call.
pub(crate) struct KeyedCall<'a> {
    pub id: &'a str,
    /// The caller's key, as messages show it.
    pub key: &'a str,
    /// Who the call runs for: a key belongs to its principal, so another
    /// principal's same key is another key in the store (it can neither
    /// replay nor suppress this one's call).
    pub principal: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
    /// The call's own deadline: the longest it waits for another owner.
    pub timeout: Duration,
    /// How long the owner may take to record its result.
    pub lease: Duration,
    pub ttl: Duration,
    pub cancel: Option<&'a CancelToken>,
    /// The host shutting down also ends the wait.
    pub shutdown: &'a CancelToken,
}

/// The longest key accepted, in bytes (PostgreSQL indexes, logs and
/// messages stay small).
pub const MAX_KEY_BYTES: usize = 256;

/// Refuses an empty or oversized key before it reaches the store.
pub(crate) fn check_key(id: &str, key: &str) -> Result<(), ToolResult> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(char::is_control) {
        return Err(ToolResult::failure(
            id,
            Status::ValidationError,
            toolhost_core::wire::codes::INVALID_INPUT,
            format!(
                "an idempotency key must be 1 to {MAX_KEY_BYTES} bytes without control characters (got {} bytes); use a short unique id such as a UUID",
                key.len()
            ),
        ));
    }
    Ok(())
}

/// The lease for a call that may run `timeout` plus `grace`.
pub(crate) fn lease_for(timeout: Duration, grace: Duration) -> Duration {
    timeout + grace + lease_margin()
}

/// Claims the call's key, waiting while another call holds it.
pub(crate) async fn begin(store: &Arc<Store>, call: KeyedCall<'_>) -> Result<Begun, ToolResult> {
    let intent = Intent {
        // Length-prefixed, so no principal/key pair can spell another.
        key: format!("{}:{}:{}", call.principal.len(), call.principal, call.key),
        tool: call.tool.to_string(),
        digest: canonical::digest(call.input),
        owner: owner_id(call.id),
        lease: call.lease,
        ttl: call.ttl,
    };
    let started = Instant::now();
    let give_up = started + call.timeout;
    let mut pause = Duration::from_millis(2);
    let mut waiting = false;
    loop {
        let claim = store
            .claim(&intent)
            .await
            .map_err(|e| unavailable(call.id, call.key, store, e))?;
        match claim {
            Claim::Owned => {
                return Ok(Begun::Run(Claimed {
                    store: store.clone(),
                    key: intent.key,
                    owner: intent.owner,
                    lease_end: started + call.lease,
                    ttl: call.ttl,
                    finished: AtomicBool::new(false),
                }))
            }
            Claim::Replay(recorded) => {
                let mut result = *recorded;
                result.tool_call_id = call.id.to_string();
                result.metadata.extra.insert("idempotent_replay".into(), json!(true));
                return Ok(Begun::Replay(Box::new(result)));
            }
            Claim::Conflict { tool } => {
                let which = if tool != call.tool {
                    format!("tool '{tool}'")
                } else {
                    "another input".into()
                };
                return Err(ToolResult::failure(
                    call.id,
                    Status::ValidationError,
                    CONFLICT,
                    format!(
                        "idempotency key '{}' was already used for a different call ({which}); use a new key for a new call",
                        call.key
                    ),
                ));
            }
            Claim::Abandoned => {
                return Err(ToolResult::failure(
                    call.id,
                    Status::Error,
                    UNKNOWN_OUTCOME,
                    format!(
                        "a call with idempotency key '{}' started but its result was never recorded (its host stopped or lost the state store); it may or may not have taken effect, so it is not run again. Check its effect, then use a new key",
                        call.key
                    ),
                ))
            }
            Claim::Pending => {
                if !waiting {
                    waiting = true;
                    tracing::info!(key = call.key, "waiting for the call holding idempotency key");
                }
            }
        }
        let now = Instant::now();
        if now >= give_up {
            let mut refused = ToolResult::failure(
                call.id,
                Status::Error,
                IN_FLIGHT,
                format!(
                    "a call with idempotency key '{}' is still running after {} s (this call's deadline); retry later to get its result",
                    call.key,
                    call.timeout.as_secs()
                ),
            );
            if let Some(e) = refused.error.as_mut() {
                e.retryable = true;
            }
            return Err(refused);
        }
        let nap = pause.min(give_up - now);
        let cancelled = async {
            match call.cancel {
                Some(cancel) => cancel.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(nap) => {}
            _ = cancelled => {
                return Err(ToolResult::failure(
                    call.id,
                    Status::Cancelled,
                    toolhost_core::wire::codes::CANCELLED,
                    format!("cancelled while waiting for the call holding idempotency key '{}'", call.key),
                ));
            }
            _ = call.shutdown.cancelled() => {
                return Err(ToolResult::failure(
                    call.id,
                    Status::Cancelled,
                    toolhost_core::wire::codes::CANCELLED,
                    format!("the host is shutting down; the call holding idempotency key '{}' may still finish, retry later", call.key),
                ));
            }
        }
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn unavailable(id: &str, key: &str, store: &Store, e: StateError) -> ToolResult {
    let retryable = matches!(e, StateError::Unavailable(_));
    let mut result = ToolResult::failure(
        id,
        Status::Error,
        STATE_UNAVAILABLE,
        format!(
            "cannot check idempotency key '{key}' in the {} state store, so the call did not run: {e}{}",
            store.kind(),
            if retryable { "; retry later" } else { "" }
        ),
    );
    if let Some(err) = result.error.as_mut() {
        err.retryable = retryable;
    }
    result
}

/// Unique per claim: the process, the call and a random part.
fn owner_id(call_id: &str) -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}:{}:{call_id}:{random}",
        crate::state::config::host_id(&Default::default()),
        std::process::id()
    )
}
