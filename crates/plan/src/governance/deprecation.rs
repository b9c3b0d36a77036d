//! Tool versions and deprecation: a spec's `deprecated = { since,
//! replacement, sunset }` warns in `check`, `list` and each result's
//! metadata, and after the sunset the tool is refused (code
//! `deprecated_tool`) naming its replacement; a plan's
//! `[policy.tools.X] version = "^1"` pins the tool's version at mount.

use serde_json::{json, Value};
use toolhost_core::wire::Deprecation;
use toolhost_core::{Status, ToolResult};

use super::SunsetError;
use crate::tool::MountedTool;

/// The refusal code of a tool past its sunset.
pub const DEPRECATED_TOOL: &str = "deprecated_tool";

/// The sunset as milliseconds since the epoch: an RFC 3339 instant, or a
/// day (`YYYY-MM-DD`, UTC) whose end is the sunset: the tool still works
/// on that day and is refused from the next.
pub fn sunset_ms(sunset: &str) -> Result<i64, SunsetError> {
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(sunset) {
        return Ok(at.timestamp_millis());
    }
    let day = chrono::NaiveDate::parse_from_str(sunset, "%Y-%m-%d")
        .map_err(|_| SunsetError::NotADate(sunset.to_string()))?;
    let next = day
        .succ_opt()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .ok_or_else(|| SunsetError::OutOfRange(sunset.to_string()))?;
    Ok(next.and_utc().timestamp_millis())
}

/// One line for `check`/`list` about a deprecated tool.
pub fn warning(name: &str, d: &Deprecation) -> String {
    let mut text = format!("'{name}' is deprecated since {}", d.since);
    if let Some(r) = &d.replacement {
        text.push_str(&format!("; use '{r}' instead"));
    }
    if let Some(s) = &d.sunset {
        match sunset_ms(s) {
            Ok(at) if at <= chrono::Utc::now().timestamp_millis() => {
                text.push_str(&format!("; its sunset {s} has passed, so calls are refused"))
            }
            Ok(_) => text.push_str(&format!("; calls are refused after {s}")),
            Err(e) => text.push_str(&format!("; {e} (ignored)")),
        }
    }
    text
}

/// The call stage: refuses a tool past its sunset; otherwise the notice to
/// put in the result's metadata (`None` for a current tool).
pub fn check(tool: &MountedTool, id: &str) -> Result<Option<Value>, ToolResult> {
    let Some(d) = &tool.spec.deprecated else {
        return Ok(None);
    };
    let notice = json!({ "since": d.since, "replacement": d.replacement, "sunset": d.sunset });
    let passed = d
        .sunset
        .as_deref()
        .and_then(|s| sunset_ms(s).ok())
        .is_some_and(|at| at <= chrono::Utc::now().timestamp_millis());
    if passed {
        let instead = d.replacement.as_ref().map_or_else(
            || "it has no replacement".to_string(),
            |r| format!("use '{r}' instead"),
        );
        return Err(ToolResult::failure(
            id,
            Status::PolicyDenied,
            DEPRECATED_TOOL,
            format!(
                "'{}' was retired at its sunset ({}); {instead}",
                tool.name(),
                d.sunset.as_deref().unwrap_or_default()
            ),
        )
        .with_details(notice));
    }
    Ok(Some(notice))
}
