//! Owner-scoped key/value entries in PostgreSQL: the state a module keeps
//! for a principal so that any host of a fleet can serve the principal's
//! next call (the contract is `toolhost_core::state`).
//!
//! Each operation is one statement. A put also deletes the owner's expired
//! entries in that scope and, past [`MAX_KEYS`], the entries written
//! longest ago, so an owner's entries never outgrow the bound whatever the
//! module does (two hosts putting at once may each keep their own row, and
//! the next put trims again). Times are the database's clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use toolhost_core::state::{DEFAULT_TTL_MS, MAX_KEYS, MAX_TTL_MS};

use super::super::StateError;
use super::{db_error, detach, wait, Connector};

const GET: &str = "
SELECT value FROM toolhost_principal_kv
WHERE owner = $1 AND scope = $2 AND key = $3 AND expires_at > clock_timestamp()";

const PUT: &str = "
WITH expired AS (
    DELETE FROM toolhost_principal_kv
    WHERE owner = $1 AND scope = $2 AND expires_at <= clock_timestamp()
), evicted AS (
    DELETE FROM toolhost_principal_kv
    WHERE (owner, scope, key) IN (
        SELECT owner, scope, key FROM toolhost_principal_kv
        WHERE owner = $1 AND scope = $2 AND key <> $3
        ORDER BY written_at DESC
        OFFSET $6
    )
)
INSERT INTO toolhost_principal_kv (owner, scope, key, value, written_at, expires_at)
VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp() + $5::float8 * interval '1 millisecond')
ON CONFLICT (owner, scope, key) DO UPDATE SET
    value = EXCLUDED.value, written_at = EXCLUDED.written_at, expires_at = EXCLUDED.expires_at";

/// Every owner's expired entries (an owner who never writes again must not
/// keep rows forever): at start and every [`SWEEP_EVERY`] puts.
const SWEEP: &str = "DELETE FROM toolhost_principal_kv WHERE expires_at <= clock_timestamp()";

/// Puts between two sweeps of every owner's expired entries.
const SWEEP_EVERY: u64 = 256;

const DELETE: &str = "DELETE FROM toolhost_principal_kv WHERE owner = $1 AND scope = $2 AND key = $3";

/// The fleet's owner-scoped key/value store.
pub struct PrincipalKv {
    db: Arc<Connector>,
    puts: AtomicU64,
}

impl PrincipalKv {
    /// The store at `url`; connects (and migrates) in the background now,
    /// and at each use until it has.
    pub fn open(url: &str) -> Result<PrincipalKv, StateError> {
        let db = Arc::new(Connector::new(url)?);
        let warm = db.clone();
        detach(async move {
            if let Err(e) = sweep(&warm).await {
                tracing::warn!("the state database is not reachable yet: {e}");
            }
        });
        Ok(PrincipalKv {
            db,
            puts: AtomicU64::new(0),
        })
    }

    /// The value of `key`, if set and not expired. Blocking.
    pub fn get(&self, owner: &str, scope: &str, key: &str) -> Result<Option<String>, StateError> {
        let db = self.db.clone();
        let args = [owner.to_string(), scope.to_string(), key.to_string()];
        wait(async move {
            let client = db.client().await?;
            let row = client
                .query_opt(GET, &[&args[0], &args[1], &args[2]])
                .await
                .map_err(db_error)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// Sets `key` for `ttl` (default a day, at most a week). Blocking.
    pub fn put(
        &self,
        owner: &str,
        scope: &str,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<(), StateError> {
        let ttl_ms = ttl
            .map_or(DEFAULT_TTL_MS, |t| {
                u64::try_from(t.as_millis()).unwrap_or(u64::MAX)
            })
            .min(MAX_TTL_MS) as f64;
        let keep_others = MAX_KEYS as i64 - 1;
        let db = self.db.clone();
        let args = [
            owner.to_string(),
            scope.to_string(),
            key.to_string(),
            value.to_string(),
        ];
        wait(async move {
            let client = db.client().await?;
            client
                .execute(
                    PUT,
                    &[&args[0], &args[1], &args[2], &args[3], &ttl_ms, &keep_others],
                )
                .await
                .map_err(db_error)?;
            Ok(())
        })?;
        if self.puts.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            let db = self.db.clone();
            detach(async move {
                if let Err(e) = sweep(&db).await {
                    tracing::debug!("cannot sweep expired state entries: {e}");
                }
            });
        }
        Ok(())
    }

    /// Removes `key`. Blocking.
    pub fn delete(&self, owner: &str, scope: &str, key: &str) -> Result<(), StateError> {
        let db = self.db.clone();
        let args = [owner.to_string(), scope.to_string(), key.to_string()];
        wait(async move {
            let client = db.client().await?;
            client
                .execute(DELETE, &[&args[0], &args[1], &args[2]])
                .await
                .map_err(db_error)?;
            Ok(())
        })
    }
}

/// Deletes every owner's expired entries.
async fn sweep(db: &Connector) -> Result<(), StateError> {
    let client = db.client().await?;
    client.execute(SWEEP, &[]).await.map_err(db_error)?;
    Ok(())
}
