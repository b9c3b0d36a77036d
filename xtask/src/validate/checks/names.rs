//! `names.*`: tool names are snake_case, unique, and not reserved.

use std::collections::BTreeMap;

use serde_json::Value;

use super::is_snake_case;
use crate::validate::check::{names as n, CheckResult, Verdict};

/// The longest name every client accepts (OpenAI and MCP clients cap at 64).
pub const MAX_NAME_LEN: usize = 64;

/// Prefixes no module may use: they belong to the host and to protocols.
pub const RESERVED_PREFIXES: [&str; 3] = ["toolhost", "mcp_", "rpc_"];

/// First-party names and default aliases, by owning module. Another module
/// may use them, but a plan that mounts both then needs a `prefix`.
pub const FIRST_PARTY: [(&str, &[&str]); 3] = [
    (
        "filesystem",
        &[
            "read_file",
            "write_file",
            "edit_file",
            "delete_file",
            "undo_edit",
            "list_directory",
            "glob",
            "grep",
            "Read",
            "Write",
            "create_file",
            "Edit",
            "Glob",
            "Grep",
        ],
    ),
    ("bash", &["bash", "Bash", "run_terminal_command"]),
    ("web", &["web_fetch", "web_search", "read_web_page"]),
];

/// The module owning a first-party name, if any.
pub fn first_party_owner(name: &str) -> Option<&'static str> {
    FIRST_PARTY
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map(|(owner, _)| *owner)
}

fn name_of(spec: &Value) -> Option<&str> {
    spec.get("name").and_then(Value::as_str)
}

/// `names.snake_case`.
pub fn snake_case(spec: &Value, tool: &str) -> CheckResult {
    let mut v = Verdict::new();
    match name_of(spec) {
        None => v.fail("the spec has no `name` string"),
        Some("") => v.fail("the name is empty"),
        Some(name) => {
            if !is_snake_case(name) {
                v.fail(format!(
                    "'{name}' is not snake_case (lower-case letters, digits and single underscores, starting with a letter)"
                ));
            }
            if name.len() > MAX_NAME_LEN {
                v.fail(format!(
                    "'{name}' is {} characters long; clients accept at most {MAX_NAME_LEN}",
                    name.len()
                ));
            }
        }
    }
    v.finish(n::NAMES_SNAKE_CASE, Some(tool), "snake_case")
}

/// `names.reserved`.
pub fn reserved(spec: &Value, tool: &str, module: &str) -> CheckResult {
    let mut v = Verdict::new();
    if let Some(name) = name_of(spec) {
        if let Some(prefix) = RESERVED_PREFIXES.iter().find(|p| name.starts_with(*p)) {
            v.fail(format!("'{name}' starts with the reserved prefix '{prefix}'"));
        }
        if let Some(owner) = first_party_owner(name).filter(|owner| *owner != module) {
            v.warn(format!(
                "'{name}' is a name of the first-party module '{owner}'; a plan mounting both needs a `prefix`"
            ));
        }
    }
    v.finish(n::NAMES_RESERVED, Some(tool), "not reserved")
}

/// `names.unique`, over the whole module.
pub fn unique(specs: &[Value], labels: &[String]) -> CheckResult {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for spec in specs {
        if let Some(name) = name_of(spec) {
            *seen.entry(name).or_default() += 1;
        }
    }
    let mut v = Verdict::new();
    for (name, count) in seen.iter().filter(|(_, c)| **c > 1) {
        v.fail(format!(
            "{count} tools are named '{name}'; the host refuses the module"
        ));
    }
    let list = labels.join(", ");
    v.finish(
        n::NAMES_UNIQUE,
        None,
        format!("{} distinct names: {list}", labels.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::check::Outcome;
    use serde_json::json;

    #[test]
    fn fires() {
        assert_eq!(
            snake_case(&json!({"name": "ReadFile"}), "x").outcome,
            Outcome::Fail
        );
        assert_eq!(
            snake_case(&json!({"name": "read_file"}), "x").outcome,
            Outcome::Pass
        );
        assert_eq!(
            reserved(&json!({"name": "toolhost_x"}), "x", "m").outcome,
            Outcome::Fail
        );
        assert_eq!(
            reserved(&json!({"name": "grep"}), "x", "acme").outcome,
            Outcome::Warn
        );
        assert_eq!(
            reserved(&json!({"name": "grep"}), "x", "filesystem").outcome,
            Outcome::Pass
        );
        let specs = [json!({"name": "a"}), json!({"name": "a"})];
        assert_eq!(unique(&specs, &["a".into(), "a".into()]).outcome, Outcome::Fail);
    }
}
