//! JUnit XML: one testsuite for the module, one testcase per check. A
//! failure is a `<failure>`, a skip a `<skipped>`; a warning passes with its
//! message in `<system-out>`, or fails under `--strict`.
//!
//! Written by `quick-junit` (the serializer nextest uses), which escapes
//! what XML needs escaped; multi-line text goes in element bodies, never in
//! attributes, where a parser would fold its newlines into spaces.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report as JunitReport, TestCase, TestCaseStatus, TestSuite};

use super::Report;
use crate::validate::check::Outcome;

/// The report as JUnit XML.
pub fn render(report: &Report) -> String {
    let suite_name = format!("validate-module.{}", report.module_name());
    let mut suite = TestSuite::new(suite_name.as_str());
    suite.set_time(report.duration);
    for check in &report.checks {
        // An XML parser folds a newline inside an attribute into a space, so
        // the `message` attribute carries the first line and the element's
        // text carries the whole message and the details, newlines intact.
        // (quick-junit drops the control characters XML 1.0 forbids.)
        let message = check.message.clone();
        let headline = message.lines().next().unwrap_or("");
        let mut body = if message.contains('\n') {
            message.clone()
        } else {
            String::new()
        };
        for detail in &check.details {
            if !body.is_empty() {
                body.push('\n');
            }
            body.push_str(detail);
        }
        let failure = |kind: &str| {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_type(kind).set_message(headline);
            if !body.is_empty() {
                status.set_description(body.as_str());
            }
            status
        };
        let status = match (check.outcome, report.strict) {
            (Outcome::Pass, _) | (Outcome::Warn, false) => TestCaseStatus::success(),
            (Outcome::Fail, _) => failure("fail"),
            (Outcome::Warn, true) => failure("warn"),
            (Outcome::Skip, _) => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(headline);
                status
            }
        };
        let mut case = TestCase::new(check.title(), status);
        case.set_classname(format!("{suite_name}.{}", check.category()))
            .set_time(Duration::from_secs_f64(check.duration_ms.max(0.0) / 1000.0));
        if check.outcome == Outcome::Warn && !report.strict {
            case.set_system_out(format!("WARN: {message}\n{body}"));
        }
        suite.add_test_case(case);
    }
    let mut junit = JunitReport::new("validate-module");
    junit.set_time(report.duration).add_test_suite(suite);
    junit.to_string().unwrap_or_else(|e| {
        // Serializing into memory fails only on a writer error; say so in
        // a document a CI system still reads.
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"validate-module\" tests=\"1\" failures=\"1\">\
             <testsuite name=\"validate-module\" tests=\"1\" failures=\"1\"><testcase name=\"report\">\
             <failure message=\"the JUnit report could not be written\">{}</failure></testcase></testsuite></testsuites>\n",
            e.to_string().replace('&', "&amp;").replace('<', "&lt;")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::check::CheckResult;

    fn report(message: &str, outcome: Outcome) -> Report {
        Report {
            library: "libx.so".into(),
            manifest: None,
            checks: vec![CheckResult::new(
                "behaviour.empty_input",
                Some("t"),
                outcome,
                message,
            )],
            strict: false,
            duration: Duration::from_millis(5),
        }
    }

    #[test]
    fn messages_with_newlines_and_markup_survive_as_one_attribute() {
        let message = "line one\nline two <b> & \"quoted\"\u{1}";
        let xml = render(&report(message, Outcome::Fail));
        // A raw newline inside an attribute is folded to a space by every XML
        // parser: the attribute holds the first line, the body the rest.
        assert!(xml.contains("message=\"line one\""), "{xml}");
        assert!(
            xml.contains("line one\nline two &lt;b&gt; &amp; &quot;quoted&quot;"),
            "{xml}"
        );
        assert!(!xml.contains('\u{1}'), "a control character XML forbids: {xml}");
        let parsed = quick_junit::Report::deserialize_from_str(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        let case = &parsed.test_suites[0].test_cases[0];
        let TestCaseStatus::NonSuccess {
            message, description, ..
        } = &case.status
        else {
            panic!("not a failure: {xml}");
        };
        assert_eq!(message.as_deref(), Some("line one"));
        assert!(
            description
                .as_deref()
                .unwrap_or("")
                .contains("line one\nline two <b>"),
            "{xml}"
        );
    }

    #[test]
    fn outcomes_map_to_junit_elements() {
        assert!(
            render(&report("fine", Outcome::Pass)).contains("<testcase name=\"behaviour.empty_input [t]\"")
        );
        assert!(render(&report("why", Outcome::Skip)).contains("<skipped message=\"why\""));
        let warn = render(&report("hm", Outcome::Warn));
        assert!(warn.contains("WARN: hm") && !warn.contains("<failure"), "{warn}");
        let mut strict = report("hm", Outcome::Warn);
        strict.strict = true;
        let strict = render(&strict);
        assert!(
            strict.contains("<failure") && strict.contains("type=\"warn\""),
            "{strict}"
        );
    }
}
