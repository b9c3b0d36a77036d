//! The bash module's reaper program: every command runs under
//! `toolhost-bash-reaper` (started with posix_spawn, never a fork of the
//! host), found beside the module; a module without it refuses to mount.

mod common;

use common::{module_file, target_dir, Called, Env};
use serde_json::{json, Value};

fn plan(config: &str) -> String {
    module_file("toolhost_bash");
    format!("[[tools]]\nmodule = \"bash\"\n[tools.config]\n{config}\n")
}

fn call(env: &Env, command: &str) -> Value {
    let out = env
        .command()
        .env("TOOLHOST_REAPER_TEST_SECRET", "thsecret_reaper_env")
        .args(["call", "bash", &json!({ "command": command }).to_string()])
        .output()
        .expect("run toolhost");
    Called::from_output(out).result
}

#[test]
fn with_the_sandbox_off_the_parent_of_the_shell_is_the_small_reaper_not_the_host() {
    let env = Env::new(&plan("sandbox = \"off\""));
    let r = call(
        &env,
        "readlink /proc/$PPID/exe; echo \"environ=$(tr '\\0' ' ' < /proc/$PPID/environ)\"",
    );
    assert_eq!(r["status"], "success", "{r}");
    let out = r["output"]["stdout"].as_str().unwrap_or("");
    let exe = out.lines().next().unwrap_or("");
    assert!(
        exe.ends_with("/toolhost-bash-reaper"),
        "the shell's parent is {exe:?}: {r}"
    );
    // A fresh program with an empty environment: none of the host's.
    assert!(out.contains("environ=\n") || out.ends_with("environ="), "{r}");
    assert!(
        !out.contains("thsecret_reaper_env"),
        "the host's environment leaked: {r}"
    );
}

#[test]
fn a_module_without_its_reaper_program_refuses_to_mount_and_says_why() {
    let env = Env::new(&plan("sandbox = \"off\""));
    let lib = env.path().join("lib");
    std::fs::create_dir(&lib).expect("lib");
    std::fs::copy(module_file("toolhost_bash"), lib.join("libtoolhost_bash.so")).expect("copy module");
    let out = env
        .command()
        .env("TOOLHOST_MODULE_PATH", &lib)
        .arg("check")
        .output()
        .expect("run toolhost");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "mounted without a reaper: {text}");
    assert!(
        text.contains("toolhost-bash-reaper") && text.contains("cargo build --workspace"),
        "unclear error: {text}"
    );
    // With the program beside it, the same copy mounts and runs commands.
    std::fs::copy(
        target_dir().join("toolhost-bash-reaper"),
        lib.join("toolhost-bash-reaper"),
    )
    .expect("copy reaper");
    let r = call_with(&env, &lib, "echo beside-ok");
    assert!(
        r["output"]["stdout"].as_str().unwrap_or("").contains("beside-ok"),
        "{r}"
    );
}

fn call_with(env: &Env, lib: &std::path::Path, command: &str) -> Value {
    let out = env
        .command()
        .env("TOOLHOST_MODULE_PATH", lib)
        .args(["call", "bash", &json!({ "command": command }).to_string()])
        .output()
        .expect("run toolhost");
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim())
        .unwrap_or_else(|e| panic!("not a ToolResult ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}
