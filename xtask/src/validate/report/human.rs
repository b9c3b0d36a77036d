//! Human output: one line per check as it completes, then a summary.

use std::io::Write;

use super::Report;
use crate::validate::check::{CheckResult, Outcome};

/// Prints one finished check (progress), with its details when it did not pass.
pub fn progress(result: &CheckResult) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:<5} {:<52} {}",
        result.outcome.label(),
        result.title(),
        first_line(&result.message)
    );
    if matches!(result.outcome, Outcome::Fail | Outcome::Warn) {
        for detail in result.details.iter().filter(|d| !d.starts_with("note:")).take(12) {
            let _ = writeln!(out, "      {}", first_line(detail));
        }
    }
    let _ = out.flush();
}

/// The closing lines: the tally and the verdict.
pub fn summary(report: &Report) -> String {
    let c = report.counts();
    let verdict = if report.ok() { "OK" } else { "FAILED" };
    let strict = if report.strict {
        " (strict: warnings fail)"
    } else {
        ""
    };
    format!(
        "\n{}: {} passed, {} warnings, {} failed, {} skipped in {:.1} s: {verdict}{strict}\n",
        report.module_name(),
        c.pass,
        c.warn,
        c.fail,
        c.skip,
        report.duration.as_secs_f64()
    )
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
