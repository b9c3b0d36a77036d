//! State reached outside a call, by a grant a call gave (see
//! [`crate::state`]): what a module's own threads use when its work
//! outlives the call that started it.

use std::time::Duration;

use abi_stable::std_types::RStr;

use super::coordinator::Coordinator;
use crate::state::{parse_answer, Granted, Request, StateError};

/// The state of one call's owner, held past the call. Cheap to move to a
/// thread; released (the host forgets the grant) when dropped.
pub struct GrantedState {
    coordinator: Coordinator,
    grant: String,
}

impl GrantedState {
    /// The state of the call that gave `grant` (see
    /// [`crate::Context::state_grant`]), reached through the mount's
    /// `coordinator`, from any thread, until the grant is released (when
    /// this is dropped) or expires.
    pub fn new(coordinator: &Coordinator, grant: String) -> Self {
        GrantedState {
            coordinator: coordinator.clone(),
            grant,
        }
    }

    /// The value of `key`, if set and not expired.
    pub fn get(&self, key: &str) -> Result<Option<String>, StateError> {
        self.call(Request::Get { key: key.to_string() })
    }

    /// Sets `key` to `value` for `ttl` (the host's default when `None`).
    pub fn put(&self, key: &str, value: &str, ttl: Option<Duration>) -> Result<(), StateError> {
        let ttl_ms = ttl.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        self.call(Request::Put {
            key: key.to_string(),
            value: value.to_string(),
            ttl_ms,
        })
        .map(|_| ())
    }

    /// Removes `key`.
    pub fn delete(&self, key: &str) -> Result<(), StateError> {
        self.call(Request::Delete { key: key.to_string() }).map(|_| ())
    }

    fn call(&self, request: Request) -> Result<Option<String>, StateError> {
        let granted = Granted {
            grant: self.grant.clone(),
            request,
        };
        let text = serde_json::to_string(&granted).map_err(|e| StateError::BadRequest(e.to_string()))?;
        parse_answer(self.coordinator.ffi_state(RStr::from_str(&text)).as_str())
    }
}

impl Drop for GrantedState {
    fn drop(&mut self) {
        let _ = self.call(Request::Release);
    }
}

impl std::fmt::Debug for GrantedState {
    /// The grant is a capability: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantedState").finish_non_exhaustive()
    }
}
