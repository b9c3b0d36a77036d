//! JUnit XML: one testsuite for the module, one testcase per check. A
//! failure is a `<failure>`, a skip a `<skipped>`; a warning passes with its
//! message in `<system-out>`, or fails under `--strict`.

use std::fmt::Write;

use super::Report;
use crate::validate::check::Outcome;

/// The report as JUnit XML.
pub fn render(report: &Report) -> String {
    let c = report.counts();
    let failures = c.fail + if report.strict { c.warn } else { 0 };
    let name = escape(&format!("validate-module.{}", report.module_name()));
    let time = report.duration.as_secs_f64();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"validate-module\" tests=\"{}\" failures=\"{failures}\" skipped=\"{}\" time=\"{time:.3}\">",
        report.checks.len(),
        c.skip
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{}\" time=\"{time:.3}\">",
        report.checks.len(),
        c.skip
    );
    for check in &report.checks {
        let _ = write!(
            out,
            "    <testcase classname=\"{name}.{}\" name=\"{}\" time=\"{:.3}\"",
            escape(check.category()),
            escape(&check.title()),
            check.duration_ms / 1000.0
        );
        let body = escape(&check.details.join("\n"));
        let message = escape(&check.message);
        match check.outcome {
            Outcome::Pass => out.push_str("/>\n"),
            Outcome::Fail => {
                let _ = writeln!(
                    out,
                    ">\n      <failure type=\"fail\" message=\"{message}\">{body}</failure>\n    </testcase>"
                );
            }
            Outcome::Warn if report.strict => {
                let _ = writeln!(
                    out,
                    ">\n      <failure type=\"warn\" message=\"{message}\">{body}</failure>\n    </testcase>"
                );
            }
            Outcome::Warn => {
                let _ = writeln!(
                    out,
                    ">\n      <system-out>WARN: {message}\n{body}</system-out>\n    </testcase>"
                );
            }
            Outcome::Skip => {
                let _ = writeln!(out, ">\n      <skipped message=\"{message}\"/>\n    </testcase>");
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Escapes text for XML attributes and content; drops characters XML 1.0 forbids.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(escape("a<b>&\"'\u{1}"), "a&lt;b&gt;&amp;&quot;&apos;");
    }
}
