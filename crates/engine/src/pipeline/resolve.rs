//! Stage 1, resolve: a name or alias to a mounted tool. An unknown name
//! answers with the closest names, so a model can correct itself.
//!
//! With `[[grants]]` in the plan, a name resolves *for a principal*
//! ([`for_principal`]) before anything else looks at the call: a tool its
//! grants do not cover is hidden from its `tools/list`, so calling it must
//! not reveal more than calling a name that does not exist. Both get the
//! same `grant_missing` refusal naming the name as written (an unknown name
//! inside the principal's globs still gets `unknown_tool`), and suggestions
//! list only tools the principal may see. This runs before validation, so a
//! schema is never disclosed by a validation error to someone not granted
//! the tool.

use std::sync::Arc;

use serde_json::json;
use toolhost_core::wire::codes;
use toolhost_core::{Status, ToolResult};

use crate::governance::grants::{self, Grant};
use crate::host::Host;
use crate::registry::Resolved;
use crate::tool::MountedTool;

/// The tool `name` refers to, or an `unknown_tool` result with suggestions.
pub fn tool(host: &Host, id: &str, name: &str) -> Result<Arc<MountedTool>, ToolResult> {
    call(host, id, name).map(|r| r.tool)
}

/// The tool `name` refers to and the alias profile whose schema the caller
/// used (see [`crate::alias`]), or an `unknown_tool` result.
pub fn call(host: &Host, id: &str, name: &str) -> Result<Resolved, ToolResult> {
    host.resolve(name).ok_or_else(|| {
        let suggestions = host.suggest(name);
        ToolResult::failure(
            id,
            Status::Error,
            codes::UNKNOWN_TOOL,
            unknown(name, &suggestions),
        )
        .with_details(json!({ "suggestions": suggestions }))
    })
}

/// The tool `name` refers to, if `principal` may use it: see the module
/// docs. Without grants, the same as [`call`].
pub fn for_principal(
    host: &Host,
    grants: &[Grant],
    principal: &str,
    id: &str,
    name: &str,
) -> Result<Resolved, ToolResult> {
    if grants.is_empty() {
        return call(host, id, name);
    }
    match host.resolve(name) {
        Some(resolved) if grants::visible(grants, principal, &resolved.tool) => Ok(resolved),
        Some(_) => Err(grants::no_grant(principal, name, id)),
        None if grants::covers_name(grants, principal, name) => {
            let suggestions: Vec<String> = host
                .suggest(name)
                .into_iter()
                .filter(|s| {
                    host.resolve(s)
                        .is_some_and(|r| grants::visible(grants, principal, &r.tool))
                })
                .collect();
            Err(ToolResult::failure(
                id,
                Status::Error,
                codes::UNKNOWN_TOOL,
                unknown(name, &suggestions),
            )
            .with_details(json!({ "suggestions": suggestions })))
        }
        None => Err(grants::no_grant(principal, name, id)),
    }
}

/// "unknown tool 'x'; did you mean …?", for every front end that resolves names.
pub fn unknown(name: &str, suggestions: &[String]) -> String {
    let hint = match suggestions {
        [] => "run `toolhost list` to see the tools".to_string(),
        [one] => format!("did you mean {one}?"),
        many => format!("did you mean one of: {}?", many.join(", ")),
    };
    format!("unknown tool '{name}'; {hint}")
}
