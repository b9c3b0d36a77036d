//! `toolhost check`: load everything, report, exit 0 if all is well.

use std::process::ExitCode;

use super::{print_stdout, EXIT_FAILED, EXIT_USAGE};
use crate::host::Host;
use crate::plan::{Origin, Plan, TrustState};

pub(super) fn run(plan: Plan, origin: &Origin, trust: &TrustState) -> ExitCode {
    let file = match origin {
        Origin::BuiltIn => "built-in default plan (mount-plans/default.toml)".to_string(),
        _ => plan.file.display().to_string(),
    };
    let why = origin.why();
    let module_path = std::env::join_paths(&plan.module_path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let working_dir = plan.working_dir.display().to_string();
    line(&format!("plan: {file}"));
    line(&format!("why: {why}"));
    line(&format!("trust: {}", trust.describe()));
    line(&format!("working_dir: {working_dir}"));
    line(&format!("module_path: {module_path}"));
    if let TrustState::Untrusted(what) = trust {
        // Loading would run its hooks' and servers' programs: nothing of
        // an untrusted plan runs, `check` included.
        eprintln!("error: {}", crate::plan::trust::refusal(&plan.file, what));
        return ExitCode::from(EXIT_USAGE);
    }
    let (host, reports) = Host::load(plan, true);
    let mut failed = 0;
    for report in &reports {
        match (&report.error, &report.loaded) {
            (None, Some((name, version))) => {
                let path = report
                    .path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                line(&format!(
                    "ok    {name} {version} ({path}): {} tool(s) [{}]; load {:.2} ms, mount {:.2} ms; source: {}",
                    report.tools.len(),
                    report.tools.join(", "),
                    report.timings.0.as_secs_f64() * 1000.0,
                    report.timings.1.as_secs_f64() * 1000.0,
                    report.source.map(|s| s.as_str()).unwrap_or("module"),
                ));
            }
            (Some(error), _) => {
                failed += 1;
                line(&format!("FAIL  {}: {error}", report.label));
            }
            (None, None) => {}
        }
    }
    // What modules reported on themselves at mount (e.g. sandbox layers).
    for (module, report) in host.events.reports() {
        let title = report["title"].as_str().unwrap_or("report");
        line(&format!("      {module}: {title}"));
        for item in report["items"].as_array().into_iter().flatten() {
            line(&format!(
                "        {:<12} {}: {}",
                item["state"].as_str().unwrap_or("?"),
                item["name"].as_str().unwrap_or("?"),
                item["detail"].as_str().unwrap_or("")
            ));
        }
    }
    for tool in host.tools() {
        if let Err(e) = tool.validator() {
            failed += 1;
            line(&format!("FAIL  {}: {e}", tool.name()));
        }
    }
    for tool in host.tools() {
        if let Some(d) = &tool.spec.deprecated {
            line(&format!(
                "warn  {}",
                crate::governance::deprecation::warning(tool.name(), d)
            ));
        }
    }
    for line in crate::surface::pin::check_lines(&host.tools(), &host.plan) {
        print_stdout(&line);
    }
    let governance = &host.plan.governance;
    let (_, warnings) = crate::governance::principals::Directory::resolve(&governance.principals);
    for warning in warnings {
        line(&format!("warn  {warning}"));
    }
    let with_claims = governance
        .principals
        .iter()
        .filter(|p| p.claims.is_some())
        .count();
    match &host.plan.host.oauth {
        Some(oauth) => {
            line(&format!(
                "oauth: serve --http accepts access tokens: {}; {with_claims} principal(s) with claims",
                crate::mcp::oauth::OAuth::describe(oauth)
            ));
            if with_claims == 0 {
                line("warn  [host.oauth] is set but no [[principals]] entry has claims: every access token is refused (403)");
            }
        }
        None if with_claims > 0 => line(&format!(
            "warn  {with_claims} principal(s) have claims but [host.oauth] is not set: no access token is accepted"
        )),
        None => line("oauth: not configured (serve --http accepts static bearer tokens only)"),
    }
    if !governance.grants.is_empty() {
        line(&format!(
            "grants: {} (calls need a grant; [host] principal is '{}')",
            governance.grants.len(),
            governance.host_principal
        ));
        for grant in &governance.grants {
            line(&format!("      {}", crate::governance::grants::describe(grant)));
        }
    }
    if !host.plan.limits.is_empty() {
        let scope = if host.plan.host.state_url.is_some() {
            "per host: each host of a fleet sharing state_url keeps its own buckets"
        } else {
            "per host"
        };
        line(&format!("limits: {} ({scope})", host.plan.limits.len()));
        for limit in &host.plan.limits {
            line(&format!("      {}", limit.describe()));
        }
        // A principal no token or `[host] principal` names is most likely
        // a typo: its limit would never apply.
        let known = |name: &str| {
            name == governance.host_principal || governance.principals.iter().any(|p| p.name == name)
        };
        for limit in &host.plan.limits {
            if let Some(p) = limit.principal.as_deref().filter(|p| !known(p)) {
                line(&format!(
                    "warn  {}: principal '{p}' is neither in [[principals]] nor [host] principal, \
                     so this limit applies to no call",
                    limit.id
                ));
            }
        }
    }
    host.shutdown();
    if failed == 0 {
        line(&format!("all {} module(s) mounted", reports.len()));
        ExitCode::SUCCESS
    } else {
        line(&format!("{failed} problem(s)"));
        ExitCode::from(EXIT_FAILED)
    }
}

/// Prints one line of the report. What modules and servers said (names,
/// errors, their own reports) is escaped, so none of it can span lines or
/// act on the terminal.
fn line(text: &str) {
    print_stdout(&crate::escape::escape_line(text));
}
