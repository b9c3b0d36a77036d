//! Stage 1 checks the principal's grant before stage 2 validates the input
//! (a reviewer's finding on issue #16): a principal without a grant for a
//! tool must not learn its schema from validation errors, and a tool hidden
//! from its listing must be refused exactly like a name that does not exist.
//! Driven through the real binary with the governed fixture and `--as`.

mod common;

use common::{module_file, Called, Env};
use serde_json::{json, Value};

const GRANT: &str = "[[grants]]\nname = \"ci-greet\"\nprincipal = \"ci\"\ntools = [\"greet\", \"g*\"]\n";

fn plan_with(grants: &str) -> String {
    module_file("toolhost_governed");
    format!(
        "[host]\naudit_log = \"audit.jsonl\"\n\n[[tools]]\nmodule = \"fixture\"\n\n[[tools]]\nmodule = \"governed\"\n\n\
         [[principals]]\nname = \"ci\"\ntoken_sha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\n\n{grants}"
    )
}

fn plan() -> String {
    plan_with(GRANT)
}

fn call_as(env: &Env, principal: &str, tool: &str, input: Value) -> Called {
    Called::from_output(env.run(&["call", "--as", principal, tool, &input.to_string()]))
}

/// The error object with the called name replaced, to compare two refusals.
fn error_without(called: &Called, name: &str) -> Value {
    let text = called.result["error"].to_string().replace(name, "NAME");
    serde_json::from_str(&text).expect("error JSON")
}

#[test]
fn an_ungranted_tool_with_invalid_input_gets_the_grant_refusal_not_its_schema() {
    let env = Env::new(&plan());
    // `launch` takes no fields at all: on the old order this answered with
    // a validation error quoting the schema.
    let hidden = call_as(&env, "ci", "launch", json!({"countdown": "ten"}));
    assert_eq!(hidden.status(), "policy_denied", "{}", hidden.result);
    assert_eq!(
        hidden.result["error"]["code"], "grant_missing",
        "{}",
        hidden.result
    );
    assert_eq!(hidden.result["error"]["details"]["reason"], "no_grant");
    assert_eq!(
        hidden.result["error"]["details"]["missing_grant"],
        json!({"principal": "ci", "tools": ["launch"]})
    );
    assert!(
        !hidden.result.to_string().contains("countdown") && !hidden.message().contains("describe"),
        "the refusal must not discuss the input or the schema: {}",
        hidden.result
    );

    // A name that does not exist, outside ci's globs: the very same answer.
    let unknown = call_as(&env, "ci", "lunch", json!({"countdown": "ten"}));
    assert_eq!(
        error_without(&hidden, "launch"),
        error_without(&unknown, "lunch"),
        "an ungranted tool must be indistinguishable from an unknown name:\n{}\n{}",
        hidden.result,
        unknown.result
    );
    assert_eq!(hidden.code, unknown.code);

    // An ungranted tool called with valid input: the same refusal again.
    let valid = call_as(&env, "ci", "launch", json!({}));
    assert_eq!(error_without(&valid, "launch"), error_without(&hidden, "launch"));

    // A granted tool with invalid input still gets its validation error.
    let granted = call_as(&env, "ci", "greet", json!({"nom": "ada"}));
    assert_eq!(granted.status(), "validation_error", "{}", granted.result);
    call_as(&env, "ci", "greet", json!({"name": "ada"})).assert_success();

    // The audit record of the hidden call says grant_denied.
    let log = std::fs::read_to_string(env.path().join("audit.jsonl")).expect("audit log");
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let launch = records
        .iter()
        .find(|r| r["tool"] == "launch")
        .expect("launch's refusal recorded");
    assert_eq!(launch["decision"], "grant_denied", "{launch}");
    assert_eq!(launch["error_code"], "grant_missing", "{launch}");
    let lunch = records
        .iter()
        .find(|r| r["tool"] == "lunch")
        .expect("the unknown name's refusal recorded");
    assert_eq!(lunch["decision"], "grant_denied", "{lunch}");
}

#[test]
fn an_unknown_name_inside_the_grants_suggests_only_visible_tools() {
    let env = Env::new(&plan());
    // "gre" matches ci's glob "g*": an honest unknown_tool, whose suggestions
    // name greet but not old_greet (a close name ci may not see).
    let called = call_as(&env, "ci", "gre", json!({}));
    assert_eq!(
        called.result["error"]["code"], "unknown_tool",
        "{}",
        called.result
    );
    let suggestions = called.result["error"]["details"]["suggestions"].clone();
    assert_eq!(suggestions, json!(["greet"]), "{}", called.result);
    // Without grants in the way (the unfiltered registry) old_greet is close.
    let open = Env::new(&plan_with(""));
    let unfiltered = open.call("gre", json!({}));
    assert!(
        unfiltered.result["error"]["details"]["suggestions"]
            .as_array()
            .is_some_and(|s| s.contains(&json!("old_greet"))),
        "the control must suggest old_greet: {}",
        unfiltered.result
    );
}
