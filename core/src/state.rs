//! Owner-scoped state a module keeps in the host's state store, so that any
//! host of a fleet can serve a caller's next call.
//!
//! # Why
//!
//! A module used to keep what must outlive one call (the files a caller
//! read, its undo history) in its own memory, keyed by the caller's session.
//! MCP 2026-07-28 has no session, and a fleet behind a load balancer without
//! affinity sends a caller's next call to any host: a record held in one
//! host's memory is not there when the next call lands on another. So the
//! host lends each call a small key/value service backed by its state store
//! (`[host] state_url`: PostgreSQL shared by the fleet).
//!
//! # The contract
//!
//! - **One ABI method.** [`crate::abi::FfiContext::state`] takes a
//!   [`Request`] and answers an [`Answer`], both JSON, so the operations can
//!   grow without touching the frozen surface again. It sits after the last
//!   prefix field with a default body: in a host that does not fill the slot
//!   the default answers `unsupported`. Adding it changed the layout
//!   abi_stable checks (a host whose vtable has more fields refuses a
//!   library built with fewer), so the ABI went from 0.1 to 0.2 and every
//!   module must be rebuilt against it.
//! - **The host picks the owner, never the module.** Keys are scoped by the
//!   host to (owner, module mount): a module cannot name another owner's or
//!   another mount's keys. The owner is the call's principal when the call
//!   has no session (an MCP 2026-07-28 request over HTTP, whose principal the
//!   HTTP front door identified by its token); a call in a session (an MCP
//!   session, stdio, one CLI process) is owned by that session, as before,
//!   and its state stays in the module's memory.
//! - **Only a shared store is lent.** Without `[host] state_url` the host
//!   answers `unsupported` and the module keeps its state in memory, keyed
//!   as before: a single host gains nothing from a database round trip.
//! - **Bounded.** A key is at most [`MAX_KEY_BYTES`], a value at most
//!   [`MAX_VALUE_BYTES`] (larger: `too_large`, nothing written); an owner
//!   holds at most [`MAX_KEYS`] keys per mount (a put beyond that evicts the
//!   key written longest ago); every entry expires ([`DEFAULT_TTL_MS`]
//!   unless the put says, at most [`MAX_TTL_MS`]), and expired entries are
//!   never answered and are deleted as the owner writes.
//! - **Not a lock.** Each operation is atomic on its own; two hosts writing
//!   one key race and the last write wins. A module that needs more must
//!   keep its own check (the filesystem's guard compares the file on disk
//!   with what was recorded, whoever recorded it).
//!
//! - **Outside a call, only by grant.** A module whose work outlives the
//!   call (a background job that keeps printing after `bash` returned)
//!   asks the call for a [`Request::Grant`]: an opaque token the host maps
//!   to the call's owner and mount. The module then reaches the same keys
//!   through [`crate::abi::FfiCoordinator::state`] with a [`Granted`]
//!   request (ABI 0.3), until the grant expires or the module releases it.
//!   The host picks the owner here too: a grant is usable only by the mount
//!   it was issued to, and a host holds at most [`MAX_GRANTS_PER_MOUNT`]
//!   per mount and [`MAX_GRANTS`] in all. An isolated module's grants end
//!   with its worker.
//!
//! What it does not guarantee: the host's store is as private as its
//! database; values are not encrypted by the host. A grant is a capability
//! inside one host process: it is not a credential another host accepts.

use serde::{Deserialize, Serialize};

/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 512;
/// Largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;
/// Keys one owner may hold in one mount.
pub const MAX_KEYS: usize = 1024;
/// How long an entry lives when the put does not say (a day).
pub const DEFAULT_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// The longest an entry may live (a week).
pub const MAX_TTL_MS: u64 = 7 * DEFAULT_TTL_MS;

/// Grants one host holds at once, all mounts together: past this a new
/// grant is refused `unavailable`.
pub const MAX_GRANTS: usize = 4096;
/// Grants one module mount holds at once (a grant per running background
/// job, or so): a module that never releases its grants exhausts its own
/// quota, not another mount's.
pub const MAX_GRANTS_PER_MOUNT: usize = 256;

/// What the default method answers: no store here.
pub const UNSUPPORTED_ANSWER: &str =
    r#"{"ok":false,"error":{"code":"unsupported","message":"this host lends no shared state to this call"}}"#;

/// One operation, as the module sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// The value of `key`, if set and not expired.
    Get {
        /// The key.
        key: String,
    },
    /// Sets `key` to `value` for `ttl_ms` (default [`DEFAULT_TTL_MS`]).
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Lifetime in milliseconds, capped at [`MAX_TTL_MS`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl_ms: Option<u64>,
    },
    /// Removes `key` (no error when it is not there).
    Delete {
        /// The key.
        key: String,
    },
    /// Inside a call only: a grant (its token is the answer's value) to
    /// reach this call's state outside the call, until the module releases
    /// it (or, for an isolated module, its worker ends), or for `ttl_ms`
    /// when given (at most [`MAX_TTL_MS`]).
    Grant {
        /// Lifetime in milliseconds; `None`: until released.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl_ms: Option<u64>,
    },
    /// Outside a call only: ends the grant the request carries (a module
    /// releases a grant when the work it served is over).
    Release,
}

/// A request made outside a call, through the coordinator: the grant that
/// names the owner, and the operation (`get`, `put`, `delete`, `release`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Granted {
    /// The token a [`Request::Grant`] answered.
    pub grant: String,
    /// The operation.
    pub request: Request,
}

/// Why an operation failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// `unsupported`, `too_large`, `bad_request` or `unavailable`.
    pub code: String,
    /// What happened, for logs and messages.
    pub message: String,
}

/// The host's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// Whether the operation happened.
    pub ok: bool,
    /// For a get that found the key: its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// For a failure: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Failure>,
}

impl Answer {
    /// Success, with a value for a get.
    pub fn ok(value: Option<String>) -> Answer {
        Answer {
            ok: true,
            value,
            error: None,
        }
    }

    /// A failure with `code` and `message`.
    pub fn failed(code: &str, message: impl Into<String>) -> Answer {
        Answer {
            ok: false,
            value: None,
            error: Some(Failure {
                code: code.to_string(),
                message: message.into(),
            }),
        }
    }

    /// As JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| UNSUPPORTED_ANSWER.to_string())
    }
}

/// Why a state operation failed, for the module's code to branch on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    /// No shared state for this call: keep the state in memory.
    Unsupported,
    /// The key or value is over its bound; nothing was written.
    TooLarge(String),
    /// The store cannot be reached now, or answered nonsense.
    Unavailable(String),
    /// The request was malformed (a bug in the module).
    BadRequest(String),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Unsupported => write!(f, "no shared state for this call"),
            StateError::TooLarge(m) | StateError::Unavailable(m) | StateError::BadRequest(m) => {
                write!(f, "{m}")
            }
        }
    }
}

impl std::error::Error for StateError {}

/// The answer text as a result.
pub fn parse_answer(text: &str) -> Result<Option<String>, StateError> {
    let answer: Answer = serde_json::from_str(text)
        .map_err(|e| StateError::Unavailable(format!("the host's state answer is not JSON: {e}")))?;
    if answer.ok {
        return Ok(answer.value);
    }
    let failure = answer.error.unwrap_or(Failure {
        code: "unavailable".into(),
        message: "the host's state answer gave no reason".into(),
    });
    Err(match failure.code.as_str() {
        "unsupported" => StateError::Unsupported,
        "too_large" => StateError::TooLarge(failure.message),
        "bad_request" => StateError::BadRequest(failure.message),
        _ => StateError::Unavailable(failure.message),
    })
}

/// Checks a request against the bounds; the host applies it before the
/// store does anything.
pub fn check(request: &Request) -> Result<(), Answer> {
    let key = match request {
        Request::Get { key } | Request::Delete { key } | Request::Put { key, .. } => key,
        Request::Grant { .. } | Request::Release => return Ok(()),
    };
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(Answer::failed(
            "too_large",
            format!(
                "a state key must be 1 to {MAX_KEY_BYTES} bytes (this one is {})",
                key.len()
            ),
        ));
    }
    if let Request::Put { value, .. } = request {
        if value.len() > MAX_VALUE_BYTES {
            return Err(Answer::failed(
                "too_large",
                format!(
                    "a state value may be at most {MAX_VALUE_BYTES} bytes (this one is {})",
                    value.len()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_answers_round_trip() {
        let put = Request::Put {
            key: "k".into(),
            value: "v".into(),
            ttl_ms: None,
        };
        let text = serde_json::to_string(&put).expect("serializes");
        assert_eq!(text, r#"{"op":"put","key":"k","value":"v"}"#);
        assert_eq!(serde_json::from_str::<Request>(&text).expect("parses"), put);
        assert_eq!(parse_answer(UNSUPPORTED_ANSWER), Err(StateError::Unsupported));
        assert_eq!(
            parse_answer(&Answer::ok(Some("x".into())).to_json()),
            Ok(Some("x".into()))
        );
        assert!(matches!(
            parse_answer(&Answer::failed("too_large", "big").to_json()),
            Err(StateError::TooLarge(_))
        ));
    }

    #[test]
    fn bounds_are_checked() {
        let long = "k".repeat(MAX_KEY_BYTES + 1);
        assert!(check(&Request::Get { key: long }).is_err());
        assert!(check(&Request::Get { key: String::new() }).is_err());
        let big = Request::Put {
            key: "k".into(),
            value: "v".repeat(MAX_VALUE_BYTES + 1),
            ttl_ms: None,
        };
        assert!(check(&big).is_err());
        assert!(check(&Request::Delete { key: "k".into() }).is_ok());
    }
}
