//! Errors a tool or a mount can return.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::wire::{codes, ErrorInfo, Status};

/// Why a call failed, with a message a model can act on.
///
/// The status decides how the host and clients treat the failure
/// (`validation_error` means "fix the input", `policy_denied` means "not
/// allowed", `error` means the tool failed); the code is for programs.
///
/// It is one pointer wide (the details are boxed), so `Result<T, ToolError>`
/// stays small on the success path.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError(Box<Inner>);

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Inner {
    pub(crate) status: Status,
    pub(crate) info: ErrorInfo,
    pub(crate) output: Option<Value>,
}

impl ToolError {
    /// A tool failure with a code of your choosing.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::with_status(Status::Error, code, message)
    }

    /// A failure with an explicit status.
    pub fn with_status(status: Status, code: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError(Box::new(Inner {
            status,
            info: ErrorInfo {
                code: code.into(),
                message: message.into(),
                retryable: matches!(status, Status::Timeout),
                details: None,
            },
            output: None,
        }))
    }

    /// The input is wrong in a way the schema could not express.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::with_status(Status::ValidationError, codes::INVALID_INPUT, message)
    }

    /// A rule of the tool's own policy refused the call (say which rule).
    pub fn denied(message: impl Into<String>) -> Self {
        Self::with_status(Status::PolicyDenied, codes::DENIED, message)
    }

    /// Something the call names does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(codes::NOT_FOUND, message)
    }

    /// The call stopped because it was cancelled.
    pub fn cancelled() -> Self {
        Self::with_status(Status::Cancelled, codes::CANCELLED, "the call was cancelled")
    }

    /// The call ran out of time.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::with_status(Status::Timeout, codes::TIMEOUT, message)
    }

    /// Marks whether retrying the same call may succeed.
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.0.info.retryable = retryable;
        self
    }

    /// Attaches structured particulars (candidates, sizes, violations).
    pub fn with_details(mut self, details: Value) -> Self {
        self.0.info.details = Some(details);
        self
    }

    /// Attaches partial output (what a failed command printed, say).
    pub fn with_output(mut self, output: impl Serialize) -> Self {
        self.0.output = serde_json::to_value(output).ok();
        self
    }

    /// The outcome class.
    pub fn status(&self) -> Status {
        self.0.status
    }

    /// The machine-readable code.
    pub fn code(&self) -> &str {
        &self.0.info.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0.info.message
    }

    /// The structured details, if any.
    pub fn details(&self) -> Option<&Value> {
        self.0.info.details.as_ref()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.0.status, self.0.info.code, self.0.info.message
        )
    }
}

impl std::error::Error for ToolError {}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::not_found(e.to_string()),
            _ => ToolError::new(codes::IO, e.to_string()),
        }
    }
}

/// Why `mount` failed: shown to the operator as one paragraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountError(String);

impl MountError {
    /// A mount failure with a message saying what to fix.
    pub fn new(message: impl fmt::Display) -> Self {
        MountError(message.to_string())
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<std::io::Error> for MountError {
    fn from(e: std::io::Error) -> Self {
        MountError(e.to_string())
    }
}

impl From<String> for MountError {
    fn from(message: String) -> Self {
        MountError(message)
    }
}

impl From<&str> for MountError {
    fn from(message: &str) -> Self {
        MountError(message.to_string())
    }
}

impl ToolError {
    pub(crate) fn into_parts(self) -> (Status, ErrorInfo, Option<Value>) {
        let inner = *self.0;
        (inner.status, inner.info, inner.output)
    }
}
