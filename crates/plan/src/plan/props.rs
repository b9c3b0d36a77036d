//! Property tests for the plan parser and `${ENV}` expansion (issue #20):
//! arbitrary text never panics and errors are located inside the text;
//! generated plans parse to exactly what they say; escaping round-trips.
//!
//! CI runs a bounded number of cases from a fixed seed; `cargo xtask test
//! --long` (TOOLHOST_LONG_TESTS=1) runs many more from a random seed.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::Config;

use super::env_expand::{expand_str, ExpandError};
use super::{ModuleSource, Plan, PlanError};

/// Fixed seed and bounded cases in CI; many random cases when long.
fn config(ci_cases: u32) -> Config {
    toolhost_testkit::proptest_config(ci_cases, 0x7001_4057)
}

/// A variable this file sets once and never changes (tests run in threads).
const SET_NAME: &str = "TOOLHOST_PROP_SET";
const SET_VALUE: &str = "v$a{l}u:-e ${NOT_EXPANDED_AGAIN}";

fn set_var() {
    std::env::set_var(SET_NAME, SET_VALUE);
}

/// Text rich in the characters expansion cares about.
fn dollar_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("$".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            Just(":-".to_string()),
            Just("${".to_string()),
            Just(format!("${{{SET_NAME}}}")),
            Just("${TOOLHOST_PROP_UNSET:-dflt}".to_string()),
            "[a-zA-Z_0-9 é/]{0,4}",
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

/// Escapes every `${` so that it expands to itself.
fn escape(s: &str) -> String {
    s.replace("${", "$${")
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn expansion_never_panics_and_errors_only_on_references(s in dollar_text()) {
        set_var();
        match expand_str(&s) {
            Ok(out) => {
                if !s.contains("${") {
                    prop_assert_eq!(out, s);
                }
            }
            Err(ExpandError::Malformed(m)) => prop_assert_eq!(m, s),
            Err(ExpandError::Unset(name)) => {
                let reference = format!("${{{name}");
                prop_assert!(s.contains(&reference));
            }
        }
    }

    #[test]
    fn escaped_text_expands_to_itself(s in any::<String>(), d in dollar_text()) {
        prop_assert_eq!(expand_str(&escape(&s)).unwrap(), s);
        prop_assert_eq!(expand_str(&escape(&d)).unwrap(), d);
    }

    /// The syntax cannot put a literal `$` right before a reference (`$${`
    /// is always the escape), so the text before one does not end in `$`.
    #[test]
    fn references_expand_in_place(
        a in any::<String>().prop_filter("ends in $", |a| !a.ends_with('$')),
        b in any::<String>().prop_filter("ends in $", |b| !b.ends_with('$')),
        default in "[^}]{0,12}",
    ) {
        set_var();
        let template = format!(
            "{}${{{SET_NAME}}}{}${{TOOLHOST_PROP_UNSET:-{default}}}",
            escape(&a),
            escape(&b)
        );
        // The value is inserted as is: `${` inside it is not expanded again.
        prop_assert_eq!(expand_str(&template).unwrap(), format!("{a}{SET_VALUE}{b}{default}"));
    }
}

/// Fragments of plan text, valid and not, to shuffle into hostile plans.
fn plan_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("[host]\n".to_string()),
        Just("[[tools]]\n".to_string()),
        Just("[tools.config]\n".to_string()),
        Just("[policy]\n".to_string()),
        Just("[policy.tools.x]\n".to_string()),
        Just("[[hooks]]\n".to_string()),
        Just("module = \"fixture\"\n".to_string()),
        Just("path = \"${TOOLHOST_PROP_UNSET:-lib.so}\"\n".to_string()),
        Just("version = \"^0.1\"\n".to_string()),
        Just("version = \"not semver\"\n".to_string()),
        Just("max_concurrent = 0\n".to_string()),
        Just("default = \"ask\"\n".to_string()),
        Just("event = \"tool:pre\"\ncommand = [\"x\"]\n".to_string()),
        Just("tools = \"{a,\"\n".to_string()),
        Just("key = \"${UNCLOSED\"\n".to_string()),
        Just("x = [1, \"é\", {a = 2}]\n".to_string()),
        Just("\"\"\"\n".to_string()),
        Just("= = =\n".to_string()),
        "[ -~é\n]{0,16}",
    ]
}

fn plan_text() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(plan_fragment(), 0..16).prop_map(|p| p.concat()),
        any::<String>(),
    ]
}

/// A TOML basic string holding `s`.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s)
        .unwrap_or_default()
        .replace("\\u007f", "\u{7f}")
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn any_plan_text_parses_or_fails_with_a_located_error(text in plan_text()) {
        match Plan::parse(&text, Path::new("/plans/p.toml")) {
            Ok(_)
            | Err(PlanError::Invalid { .. })
            | Err(PlanError::Read { .. })
            | Err(PlanError::Env { .. })
            | Err(PlanError::Tool { .. })
            | Err(PlanError::Hook { .. })
            | Err(PlanError::McpTable { .. })
            | Err(PlanError::State { .. })
            | Err(PlanError::Governance { .. })
            | Err(PlanError::Toolsets { .. })
            | Err(PlanError::Limits { .. })
            | Err(PlanError::OAuth { .. }) => {}
            Err(PlanError::Syntax { line, column, message, .. }) => {
                prop_assert!(!message.is_empty());
                prop_assert!(line >= 1 && line <= text.lines().count().max(1) + 1, "line {} of {:?}", line, text);
                let width = text.lines().nth(line - 1).map(|l| l.chars().count()).unwrap_or(0);
                prop_assert!(column >= 1 && column <= width + 1, "column {} of line {:?}", column, text);
            }
        }
    }

    #[test]
    fn generated_plans_parse_to_what_they_say(
        modules in proptest::collection::vec(("[a-z][a-z0-9_-]{0,10}", "[a-z_]{0,6}", proptest::option::of(1usize..64)), 1..5),
        values in proptest::collection::vec(any::<String>(), 1..5),
        timeout in 1u64..100_000,
    ) {
        let mut text = format!("[host]\ndefault_timeout_secs = {timeout}\n");
        for (i, (name, prefix, max)) in modules.iter().enumerate() {
            text.push_str(&format!("\n[[tools]]\nmodule = \"{name}\"\nprefix = \"{prefix}\"\n"));
            if let Some(max) = max {
                text.push_str(&format!("max_concurrent = {max}\n"));
            }
            text.push_str("[tools.config]\n");
            for (k, v) in values.iter().enumerate() {
                text.push_str(&format!("k{k} = {}\n", toml_string(&escape(v))));
            }
            text.push_str(&format!("index = {i}\n"));
        }
        let plan = Plan::parse(&text, Path::new("/plans/p.toml"));
        prop_assert!(plan.is_ok(), "{:?}\n{}", plan.err(), text);
        let plan = plan.unwrap();
        prop_assert_eq!(plan.host.default_timeout_secs, timeout);
        prop_assert_eq!(plan.tools.len(), modules.len());
        for (entry, (name, prefix, max)) in plan.tools.iter().zip(&modules) {
            prop_assert_eq!(&entry.source, &ModuleSource::Name(name.clone()));
            prop_assert_eq!(&entry.prefix, prefix);
            prop_assert_eq!(entry.max_concurrent, *max);
            for (k, v) in values.iter().enumerate() {
                prop_assert_eq!(entry.config[format!("k{k}")].as_str(), Some(v.as_str()));
            }
        }
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line(
        section in 0usize..4,
        key in "zz[a-z]{1,8}",
        blank_lines in 0usize..5,
    ) {
        let sections = [
            "[host]\ndefault_timeout_secs = 5\n",
            "[[tools]]\nmodule = \"fixture\"\n",
            "[policy]\ndefault = \"allow\"\n",
            "[[hooks]]\nevent = \"tool:pre\"\ncommand = [\"x\"]\n",
        ];
        let head = format!("{}{}", "\n".repeat(blank_lines), sections[section]);
        let text = format!("{head}{key} = 1\n");
        match Plan::parse(&text, Path::new("/plans/p.toml")) {
            Err(PlanError::Syntax { line, message, .. }) => {
                prop_assert!(message.contains(&key), "{}", message);
                prop_assert_eq!(line, head.lines().count() + 1);
            }
            other => prop_assert!(false, "expected a syntax error, got {:?}", other.map(|p| p.tools.len())),
        }
    }
}
