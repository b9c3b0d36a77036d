//! `[policy.tools.X] version = "^1"`: the plan pins a tool's version. The
//! requirement is checked when the plan loads, and a mounted tool is
//! compared with it when the host mounts it.

use crate::governance::GovernanceError;
use crate::plan::{Plan, PolicySection};
use crate::tool::MountedTool;

/// Every `version` pin in `[policy.tools]` parses as a semver requirement.
pub fn check(policy: &PolicySection) -> Result<(), GovernanceError> {
    for (name, rule) in &policy.tools {
        if let Some(req) = &rule.version {
            semver::VersionReq::parse(req).map_err(|error| GovernanceError::VersionPin {
                tool: name.clone(),
                requirement: req.clone(),
                error,
            })?;
        }
    }
    Ok(())
}

/// Where a tool's version misses the plan's `[policy.tools.X] version` pin.
pub fn pin_problem(plan: &Plan, tool: &MountedTool) -> Option<String> {
    let (name, req) = tool.names().find_map(|n| {
        plan.policy
            .tools
            .get(n)
            .and_then(|r| r.version.as_ref())
            .map(|v| (n, v))
    })?;
    let req = match semver::VersionReq::parse(req) {
        Ok(req) => req,
        Err(e) => {
            return Some(format!(
                "[policy.tools.{name}] version '{req}' is not a semver requirement: {e}"
            ))
        }
    };
    match semver::Version::parse(&tool.spec.version) {
        Ok(v) if req.matches(&v) => None,
        Ok(v) => Some(format!(
            "[policy.tools.{name}] version = \"{req}\", but the mounted '{}' is {v}",
            tool.name()
        )),
        Err(_) => Some(format!(
            "[policy.tools.{name}] version = \"{req}\", but '{}' has no semver version ('{}')",
            tool.name(),
            tool.spec.version
        )),
    }
}
