//! Idempotency records in PostgreSQL. A claim is one `INSERT … ON CONFLICT
//! DO UPDATE … WHERE expired` statement: the primary key's row lock decides
//! between hosts racing on one key, and only an expired record is taken
//! over. Times are the database's clock, so the hosts' clocks do not matter.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::{parse_result, Claim, Intent, StateError};
use super::{db_error, detach, on_runtime, Connector};

const CLAIM: &str = "
INSERT INTO toolhost_idempotency AS t (key, tool, input_digest, state, owner, lease_until, expires_at)
VALUES ($1, $2, $3, 'pending', $4,
        clock_timestamp() + $5::float8 * interval '1 millisecond',
        clock_timestamp() + ($5::float8 + $6::float8) * interval '1 millisecond')
ON CONFLICT (key) DO UPDATE SET
    tool = EXCLUDED.tool, input_digest = EXCLUDED.input_digest, state = 'pending',
    owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until,
    expires_at = EXCLUDED.expires_at, result = NULL, created_at = now()
WHERE t.expires_at <= clock_timestamp()
RETURNING owner";

const FIND: &str = "
SELECT tool, input_digest, state, lease_until > clock_timestamp(), result
FROM toolhost_idempotency WHERE key = $1";

/// The fleet's idempotency store.
pub struct IdempotencyStore {
    db: Arc<Connector>,
}

impl IdempotencyStore {
    /// The store at `url`. Connecting and migrating start now in the
    /// background, so a host that cannot reach PostgreSQL still starts (its
    /// keyed side-effecting calls answer `state_unavailable` until it can).
    pub fn open(url: &str) -> Result<IdempotencyStore, StateError> {
        let db = Arc::new(Connector::new(url)?);
        let warm = db.clone();
        detach(async move {
            match warm.client().await {
                Ok(_) => tracing::debug!("connected to the state database"),
                Err(e) => tracing::warn!("the state database is not reachable yet: {e}"),
            }
        });
        Ok(IdempotencyStore { db })
    }

    /// One claim (see [`super::super`]).
    pub async fn claim(&self, intent: &Intent) -> Result<Claim, StateError> {
        let client = self.db.client().await?;
        let intent = intent.clone();
        on_runtime(async move {
            // A row deleted between the two statements (released by its
            // owner) is claimed again; twice is plenty, then wait.
            for _ in 0..2 {
                let won = client
                    .query_opt(
                        CLAIM,
                        &[
                            &intent.key,
                            &intent.tool,
                            &intent.digest,
                            &intent.owner,
                            &(intent.lease.as_millis() as f64),
                            &(intent.ttl.as_millis() as f64),
                        ],
                    )
                    .await
                    .map_err(db_error)?;
                if won.is_some() {
                    return Ok(Claim::Owned);
                }
                let Some(row) = client.query_opt(FIND, &[&intent.key]).await.map_err(db_error)? else {
                    continue;
                };
                let tool: String = row.get(0);
                let digest: String = row.get(1);
                let state: String = row.get(2);
                let leased: bool = row.get(3);
                let result: Option<String> = row.get(4);
                return Ok(if tool != intent.tool || digest != intent.digest {
                    Claim::Conflict { tool }
                } else if let (true, Some(result)) = (state == "done", result) {
                    Claim::Replay(Box::new(parse_result(&intent.key, &result)?))
                } else if leased {
                    Claim::Pending
                } else {
                    Claim::Abandoned
                });
            }
            Ok(Claim::Pending)
        })
        .await
    }

    /// Records the owner's result.
    pub async fn complete(
        &self,
        key: &str,
        owner: &str,
        result: &str,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let client = self.db.client().await?;
        let (key, owner, result) = (key.to_string(), owner.to_string(), result.to_string());
        let ttl_ms = ttl.as_millis() as f64;
        on_runtime(async move {
            let n = client
                .execute(
                    "UPDATE toolhost_idempotency SET state = 'done', result = $3,
                         expires_at = clock_timestamp() + $4::float8 * interval '1 millisecond'
                     WHERE key = $1 AND owner = $2 AND state = 'pending'",
                    &[&key, &owner, &result, &ttl_ms],
                )
                .await
                .map_err(db_error)?;
            Ok(n == 1)
        })
        .await
    }

    /// Deletes the owner's pending row, in the background, retrying while
    /// PostgreSQL cannot be reached until `until` (the claim's lease end):
    /// a call refused because the store went away just after it claimed
    /// its key must not leave the key pending once the store is back, or
    /// every retry waits for a call that never ran. Only if the store stays
    /// away for the whole lease does the row stay, and the key is then
    /// refused as of unknown outcome until it expires.
    pub fn release(&self, key: &str, owner: &str, until: Instant) {
        let db = self.db.clone();
        let (key, owner) = (key.to_string(), owner.to_string());
        detach(async move {
            let mut pause = Duration::from_millis(100);
            loop {
                let outcome = async {
                    let client = db.client().await?;
                    client
                        .execute(
                            "DELETE FROM toolhost_idempotency WHERE key = $1 AND owner = $2 AND state = 'pending'",
                            &[&key, &owner],
                        )
                        .await
                        .map_err(db_error)
                };
                match outcome.await {
                    Ok(_) => return,
                    Err(e) if Instant::now() + pause >= until => {
                        tracing::warn!(key, "cannot release the idempotency key: {e}");
                        return;
                    }
                    Err(_) => {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(2));
                    }
                }
            }
        });
    }
}
