//! The fleet backend: PostgreSQL through tokio-postgres.
//!
//! Connections live on one background thread with its own small tokio
//! runtime, so the store works the same from the server's runtime, from a
//! CLI call, and from the synchronous audit-sink trait; the pipeline awaits
//! the work it hands that thread. A connection that breaks (PostgreSQL
//! restarted, the network gone) is replaced at the next use; until one can
//! be made every operation answers [`StateError::Unavailable`].

pub mod audit;
mod idempotency;
pub mod migrations;
pub mod principal_kv;
pub mod tasks;

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio_postgres::{Client, Config, NoTls};

pub use audit::{open_audit_sink, PgAuditSink};
pub use idempotency::IdempotencyStore;

use super::StateError;

/// How long one connection attempt may take (unless the URL says).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one operation may take before it counts as unavailable.
const OP_TIMEOUT: Duration = Duration::from_secs(10);

/// The background runtime's handle (started on first use); `None` when its
/// thread could not be started, which makes every operation unavailable.
fn runtime() -> Option<&'static tokio::runtime::Handle> {
    static HANDLE: OnceLock<Option<tokio::runtime::Handle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            std::thread::Builder::new()
                .name("toolhost-postgres".into())
                .spawn(move || {
                    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                        Ok(rt) => rt,
                        Err(e) => {
                            tracing::error!("cannot start the PostgreSQL runtime: {e}");
                            return;
                        }
                    };
                    let _ = tx.send(rt.handle().clone());
                    rt.block_on(std::future::pending::<()>());
                })
                .map_err(|e| tracing::error!("cannot start the toolhost-postgres thread: {e}"))
                .ok()
                .and_then(|_| rx.recv().ok())
        })
        .as_ref()
}

fn no_runtime<T>() -> Result<T, StateError> {
    Err(StateError::Unavailable(
        "the PostgreSQL thread could not be started".into(),
    ))
}

/// Starts `fut` on the background runtime without waiting for it.
fn detach(fut: impl Future<Output = ()> + Send + 'static) {
    if let Some(rt) = runtime() {
        rt.spawn(fut);
    }
}

/// Runs `fut` on the background runtime under [`OP_TIMEOUT`] and awaits it
/// from whatever runtime the caller is on.
async fn on_runtime<T, F>(fut: F) -> Result<T, StateError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, StateError>> + Send + 'static,
{
    let Some(rt) = runtime() else { return no_runtime() };
    rt.spawn(async move {
        tokio::time::timeout(OP_TIMEOUT, fut).await.unwrap_or_else(|_| {
            Err(StateError::Unavailable(
                "PostgreSQL did not answer within 10 s".into(),
            ))
        })
    })
    .await
    .unwrap_or_else(|e| {
        Err(StateError::Unavailable(format!(
            "the PostgreSQL task failed: {e}"
        )))
    })
}

/// Runs `fut` on the background runtime and blocks this thread for its
/// answer (for synchronous callers such as [`crate::state::audit_sink::AuditSink`]).
fn wait<T, F>(fut: F) -> Result<T, StateError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, StateError>> + Send + 'static,
{
    let Some(rt) = runtime() else { return no_runtime() };
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(on_runtime(fut).await);
    });
    rx.recv()
        .unwrap_or_else(|_| Err(StateError::Unavailable("the PostgreSQL thread is gone".into())))
}

/// A driver error as a state error: connection-level failures (refused,
/// closed, timed out) are `Unavailable`; errors the server reports for a
/// statement are `Broken`, except those that say the server is going away.
fn db_error(e: tokio_postgres::Error) -> StateError {
    match e.as_db_error() {
        Some(db) if !db.code().code().starts_with("57") && !db.code().code().starts_with("08") => {
            StateError::Broken(format!("PostgreSQL: {db}"))
        }
        _ => StateError::Unavailable(format!("PostgreSQL: {e}")),
    }
}

/// One shared connection, remade when it breaks, and the migrations run
/// once per process before the first use.
pub struct Connector {
    config: Config,
    /// For messages: the URL without its password.
    shown: String,
    client: Mutex<Option<Arc<Client>>>,
    /// Serializes reconnects so a burst of calls makes one connection.
    connecting: tokio::sync::Mutex<bool>,
}

impl Connector {
    /// Parses `url`; does not connect.
    pub fn new(url: &str) -> Result<Connector, StateError> {
        let mut config: Config = url
            .parse()
            .map_err(|e| StateError::Broken(format!("host.state_url is not a valid PostgreSQL URL: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.keepalives(true);
        config.application_name("toolhost");
        Ok(Connector {
            config,
            shown: super::config::redact(url),
            client: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(false),
        })
    }

    fn current(&self) -> Option<Arc<Client>> {
        let slot = self.client.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_ref().filter(|c| !c.is_closed()).cloned()
    }

    /// A live client, connecting (and migrating, the first time) if needed.
    pub async fn client(&self) -> Result<Arc<Client>, StateError> {
        if let Some(client) = self.current() {
            return Ok(client);
        }
        let mut migrated = self.connecting.lock().await;
        if let Some(client) = self.current() {
            return Ok(client);
        }
        let config = self.config.clone();
        let need_migrations = !*migrated;
        let client = on_runtime(async move {
            if need_migrations {
                let mut own = connect(&config).await?;
                migrations::run(&mut own).await?;
                // Expired keys go once per process start; claims take over
                // any expired row they meet in between.
                own.execute(
                    "DELETE FROM toolhost_idempotency WHERE expires_at <= clock_timestamp()",
                    &[],
                )
                .await
                .map_err(db_error)?;
            }
            connect(&config).await
        })
        .await
        .map_err(|e| match e {
            StateError::Unavailable(m) => StateError::Unavailable(format!("{m} (at {})", self.shown)),
            other => other,
        })?;
        *migrated = true;
        let client = Arc::new(client);
        *self.client.lock().unwrap_or_else(|p| p.into_inner()) = Some(client.clone());
        Ok(client)
    }
}

/// Connects; the connection task runs on the background runtime (the
/// caller is on it).
async fn connect(config: &Config) -> Result<Client, StateError> {
    let (client, connection) = config.connect(NoTls).await.map_err(db_error)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("a PostgreSQL connection ended: {e}");
        }
    });
    Ok(client)
}
