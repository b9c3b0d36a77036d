//! The `Tool` trait: the one thing a module author implements per tool.

use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Serialize};

use super::context::Context;
use super::error::ToolError;
use crate::wire::ToolSpec;

/// A tool with a typed input and output.
///
/// The input's JSON Schema is derived from `Input` (its doc comments become
/// the descriptions), so the schema and the parser can never disagree. The SDK
/// deserializes the input before `execute` runs and reports a mismatch as a
/// `validation_error` naming the field.
///
/// `execute` is blocking and runs on a host thread under a deadline: check
/// [`Context::is_cancelled`] (or wait on [`Context::wait_cancelled`]) in any
/// loop or wait that can take long.
pub trait Tool: Send + Sync + 'static {
    /// The input, parsed from the call's JSON.
    type Input: DeserializeOwned + JsonSchema;
    /// The output; an object serializes to structured content for clients.
    type Output: Serialize;

    /// Describes the tool. Leave `input_schema` unset: the SDK derives it.
    fn spec(&self) -> ToolSpec;

    /// Runs one call.
    fn execute(&self, input: Self::Input, ctx: &Context<'_>) -> Result<Self::Output, ToolError>;
}
