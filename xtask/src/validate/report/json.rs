//! JSON output: the whole report as one document.

use serde_json::json;

use super::Report;

/// `{library, module, ok, strict, summary, duration_ms, checks: [...]}`.
pub fn render(report: &Report) -> String {
    let c = report.counts();
    let doc = json!({
        "library": report.library.to_string_lossy(),
        "module": report.manifest,
        "ok": report.ok(),
        "strict": report.strict,
        "summary": { "pass": c.pass, "warn": c.warn, "fail": c.fail, "skip": c.skip },
        "duration_ms": report.duration.as_secs_f64() * 1000.0,
        "checks": report.checks,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}
