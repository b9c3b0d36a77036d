//! Schema migrations the host runs itself when it first reaches the
//! database: numbered SQL files compiled in, a `toolhost_migrations` table
//! naming those applied, all under one advisory lock so hosts starting
//! together apply each migration once.

use tokio_postgres::types::ToSql;
use tokio_postgres::Client;

use super::super::StateError;
use super::db_error;

/// The advisory lock key of migrations (`toolhost` in ASCII, as an i64).
const LOCK_KEY: i64 = 0x746f_6f6c_686f_7374;

/// `(version, name, sql)` in order; never edit an applied one, add a file.
pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "idempotency", include_str!("migrations/0001_idempotency.sql")),
    (2, "audit", include_str!("migrations/0002_audit.sql")),
    (3, "tasks", include_str!("migrations/0003_tasks.sql")),
    (
        4,
        "principal_kv",
        include_str!("migrations/0004_principal_kv.sql"),
    ),
];

/// Applies the migrations not yet applied. `client` must be a connection of
/// its own: the transactions here must not interleave with other queries.
pub async fn run(client: &mut Client) -> Result<(), StateError> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(db_error)?;
    let outcome = apply(client).await;
    // The lock is the session's; it also goes when the connection does.
    let unlocked = client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await;
    outcome?;
    unlocked.map_err(db_error)?;
    Ok(())
}

async fn apply(client: &mut Client) -> Result<(), StateError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS toolhost_migrations (
                 version integer PRIMARY KEY,
                 name text NOT NULL,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(db_error)?;
    let applied: Vec<i32> = client
        .query("SELECT version FROM toolhost_migrations", &[])
        .await
        .map_err(db_error)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if let Some(newer) = applied.iter().filter(|v| **v > MIGRATIONS.len() as i32).max() {
        tracing::warn!(
            version = newer,
            "the state database has migrations newer than this toolhost; running with the older schema's tables"
        );
    }
    for (version, name, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        let txn = client.transaction().await.map_err(db_error)?;
        txn.batch_execute(sql).await.map_err(db_error)?;
        txn.execute(
            "INSERT INTO toolhost_migrations (version, name) VALUES ($1, $2)",
            &[version as &(dyn ToSql + Sync), name],
        )
        .await
        .map_err(db_error)?;
        txn.commit().await.map_err(db_error)?;
        tracing::info!(version, name, "applied a state migration");
    }
    Ok(())
}
