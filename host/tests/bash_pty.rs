//! Ptys inside the bash sandbox: the command gets a private `devpts`
//! instance (none of the host's terminals), and Landlock lets it open and
//! use the ptys there, so `script`, `python3 -c 'import pty'` and the like
//! work in the sandbox as they do outside it.

mod common;

use common::{module_file, Env};
use serde_json::{json, Value};

fn bash(env: &Env, command: &str) -> Value {
    env.call("bash", json!({ "command": command })).result
}

fn sandboxed() -> Env {
    module_file("toolhost_bash");
    // The default sandbox (workspace-write, network off), required, so
    // that the test cannot pass with the layers off.
    Env::new("[[tools]]\nmodule = \"bash\"\n[tools.config]\nsandbox_required = true\n")
}

#[test]
fn a_command_in_the_sandbox_can_open_a_pty_of_its_own() {
    let env = sandboxed();
    let r = bash(
        &env,
        "python3 -c 'import pty,os; m,s=pty.openpty(); os.write(m, b\"hi\\n\"); print(os.ttyname(s)); \
         print(os.read(s, 3))' && ls /dev/pts",
    );
    assert_eq!(r["status"], "success", "{r}");
    let out = r["output"]["stdout"].as_str().unwrap_or("");
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("/dev/pts/0"),
        "not the private devpts's first pty: {r}"
    );
    assert_eq!(lines.next(), Some("b'hi\\n'"), "the pty did not carry data: {r}");
    // Only the private instance's entries: the host's terminals are not here.
    let listed: Vec<&str> = lines.collect();
    assert_eq!(listed, ["ptmx"], "{r}");
}

#[test]
fn script_runs_a_command_under_a_pty_in_the_sandbox() {
    let env = sandboxed();
    let r = bash(&env, "script -qec 'tty; exit 3' /dev/null; echo \"status=$?\"");
    assert_eq!(r["status"], "success", "{r}");
    let out = r["output"]["stdout"].as_str().unwrap_or("");
    assert!(out.contains("/dev/pts/0"), "script's command had no pty: {r}");
    assert!(
        out.contains("status=3"),
        "script did not pass its command's status: {r}"
    );
}
