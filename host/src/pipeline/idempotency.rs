//! Idempotency keys: a side-effecting call with a key runs once. Its result
//! is kept in an embedded store (redb) under the plan's state folder, so a
//! retry after a crash or in another process replays it instead of acting
//! twice; the same key with a different input is an error.

use std::path::Path;

use redb::{Database, ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};
use toolhost_core::ToolResult;

const RESULTS: TableDefinition<&str, &[u8]> = TableDefinition::new("results");

/// The store.
pub struct Store {
    db: Database,
}

/// What is kept per key.
#[derive(Serialize, Deserialize)]
pub struct Recorded {
    /// The tool the key was first used with.
    pub tool: String,
    /// SHA-256 of the input it was first used with.
    pub input_sha256: String,
    /// The result to replay.
    pub result: ToolResult,
}

impl Store {
    /// Opens or creates `<state_dir>/idempotency.redb`.
    pub fn open(state_dir: &Path) -> Result<Store, String> {
        std::fs::create_dir_all(state_dir)
            .map_err(|e| format!("cannot create the state folder {}: {e}", state_dir.display()))?;
        let path = state_dir.join("idempotency.redb");
        let db = Database::create(&path).map_err(|e| {
            format!(
                "cannot open the idempotency store {}: {e} (is another toolhost using it?)",
                path.display()
            )
        })?;
        Ok(Store { db })
    }

    /// The record for `key`, if any.
    pub fn get(&self, key: &str) -> Result<Option<Recorded>, String> {
        let txn = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = match txn.open_table(RESULTS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let Some(bytes) = table.get(key).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        serde_json::from_slice(bytes.value())
            .map(Some)
            .map_err(|e| format!("a corrupt idempotency record for '{key}': {e}"))
    }

    /// Records the result for `key`.
    pub fn put(&self, key: &str, record: &Recorded) -> Result<(), String> {
        let bytes = serde_json::to_vec(record).map_err(|e| e.to_string())?;
        let txn = self.db.begin_write().map_err(|e| e.to_string())?;
        {
            let mut table = txn.open_table(RESULTS).map_err(|e| e.to_string())?;
            table.insert(key, bytes.as_slice()).map_err(|e| e.to_string())?;
        }
        txn.commit().map_err(|e| e.to_string())
    }
}
