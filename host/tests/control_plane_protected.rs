//! The tools cannot change the control plane (plan, hooks, audit log, state
//! folder) nor read the state folder's secrets, and a plan a command writes
//! does not take effect: run as two real users (root and uid 65534).

mod common;

use std::io::{BufRead, BufReader};

use common::users::{text, Lab, User};
use serde_json::{json, Value};

/// A trusted project of `user`: filesystem and bash (sandboxed), a hook
/// script, an audit log and a state folder the plan keeps in the project.
fn project(lab: &Lab, user: User) {
    lab.folder("proj", user);
    lab.folder("proj/logs", user);
    lab.allow_hook("proj/hooks/review.sh", user);
    lab.file(
        "proj/toolhost.toml",
        "[host]\naudit_log = \"logs/audit.jsonl\"\nstate_dir = \".toolhost\"\n\
         [[tools]]\nmodule = \"filesystem\"\n[[tools]]\nmodule = \"bash\"\n\
         [[hooks]]\nevent = \"tool:pre\"\ntools = \"write_file\"\ncommand = [\"./hooks/review.sh\"]\n",
        user,
    );
    let out = lab.run(user, "proj", &["trust"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// The control-plane files of [`project`] as they are: the plan and the
/// hook whole, the audit log (which the host itself appends to) and the
/// state folder's probe stamp (which it may rewrite) by presence.
struct Snapshot {
    plan: String,
    hook: String,
    log: String,
}

fn snapshot(lab: &Lab) -> Snapshot {
    let read = |rel: &str| {
        std::fs::read_to_string(lab.path(&format!("proj/{rel}")))
            .unwrap_or_else(|e| panic!("control-plane file {rel} is gone: {e}"))
    };
    assert!(
        lab.path("proj/.toolhost/modules/bash/sandbox-probe.stamp")
            .is_file(),
        "the state folder lost its files"
    );
    Snapshot {
        plan: read("toolhost.toml"),
        hook: read("hooks/review.sh"),
        log: read("logs/audit.jsonl"),
    }
}

/// Asserts nothing was changed but records appended to the log.
fn assert_unchanged(before: &Snapshot, lab: &Lab, what: &str) {
    let after = snapshot(lab);
    assert_eq!(after.plan, before.plan, "{what}: the plan changed");
    assert_eq!(after.hook, before.hook, "{what}: the hook changed");
    assert!(
        after.log.starts_with(&before.log),
        "{what}: the audit log was rewritten:\n{}",
        after.log
    );
}

fn refused(r: &Value) -> bool {
    r["status"] != "success"
}

#[test]
fn no_tool_changes_the_control_plane_and_the_next_run_is_as_strict() {
    let lab = Lab::new();
    for user in [User::Root, User::Nobody] {
        let _ = std::fs::remove_dir_all(lab.path("proj"));
        project(&lab, user);
        // A first call makes the audit log and the state folder.
        let (first, stderr) = lab.batch(
            user,
            "proj",
            &[],
            &[("write_file", json!({"file_path": "a.txt", "content": "a"}))],
        );
        assert_eq!(first[0]["status"], "success", "{user:?}: {}\n{stderr}", first[0]);
        let before = snapshot(&lab);

        let loosened = "[[tools]]\nmodule = \"bash\"\n[tools.config]\nsandbox = \"off\"\n";
        let (results, stderr) = lab.batch(
            user,
            "proj",
            &[],
            &[
                ("write_file", json!({"file_path": "toolhost.toml", "content": loosened})),
                ("read_file", json!({"file_path": "toolhost.toml"})),
                ("edit_file", json!({"file_path": "toolhost.toml", "old_string": "module = \"filesystem\"", "new_string": ""})),
                ("write_file", json!({"file_path": "hooks/review.sh", "content": "#!/bin/sh\ntouch PWNED\n"})),
                ("delete_file", json!({"file_path": "logs/audit.jsonl"})),
                ("write_file", json!({"file_path": ".toolhost/modules/bash/sandbox-probe.stamp", "content": ""})),
                ("delete_file", json!({"file_path": ".toolhost/modules/bash/sandbox-probe.stamp"})),
                ("read_file", json!({"file_path": ".toolhost/modules/bash/sandbox-probe.stamp"})),
                ("write_file", json!({"file_path": "toolhost.lock", "content": "x"})),
            ],
        );
        assert_eq!(results.len(), 9, "{user:?}: {stderr}");
        assert_unchanged(&before, &lab, &format!("{user:?}: file tools"));
        let reading_the_plan = &results[1];
        assert_eq!(
            reading_the_plan["status"], "success",
            "{user:?}: the plan stays readable: {reading_the_plan}"
        );
        for (i, r) in results.iter().enumerate().filter(|(i, _)| *i != 1) {
            assert!(refused(r), "{user:?}: call {i} changed the control plane: {r}");
            let message = r["error"]["message"].as_str().unwrap_or("");
            assert!(
                message.contains("control plane") || message.contains("toolhost's state"),
                "{user:?}: call {i}: unclear refusal: {r}"
            );
        }
        // The shell: existing files bound read-only, the state folder hidden.
        let (results, stderr) = lab.batch(
            user,
            "proj",
            &[],
            &[(
                "bash",
                json!({"command": "echo x >> toolhost.toml; echo x >> hooks/review.sh; : > logs/audit.jsonl; \
                                   rm -f toolhost.toml hooks/review.sh logs/audit.jsonl; \
                                   rm -rf .toolhost; echo x > .toolhost/planted; exit 0"}),
            )],
        );
        assert_eq!(results.len(), 1, "{user:?}: {stderr}");
        assert_unchanged(&before, &lab, &format!("{user:?}: {}", results[0]));
        assert!(!lab.path("proj/.toolhost/planted").exists(), "{user:?}");

        // The next run loads the same plan, still trusted, no looser.
        let out = lab.run(user, "proj", &["check"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{user:?}: {}", text(&out));
        assert!(stdout.contains("trust: trusted"), "{user:?}: {stdout}");
        assert!(stdout.contains("filesystem"), "{user:?}: {stdout}");
    }
}

#[test]
fn a_plan_a_sandboxed_command_writes_does_not_take_effect() {
    let lab = Lab::new();
    let user = User::Nobody;
    lab.folder("fresh", user);
    // The built-in plan: bash sandboxed. The command writes a plan that
    // would turn the sandbox off.
    let write = "printf '[[tools]]\\nmodule = \"bash\"\\n[tools.config]\\nsandbox = \"off\"\\n' > toolhost.toml; cat toolhost.toml";
    let out = lab.run(
        user,
        "fresh",
        &["call", "--yes", "bash", &json!({"command": write}).to_string()],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(lab.path("fresh/toolhost.toml").is_file(), "{}", text(&out));
    // The next run finds it and refuses it: nobody trusted it.
    let out = lab.run(
        user,
        "fresh",
        &["call", "--yes", "bash", r#"{"command": "echo loosened"}"#],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "the planted plan took effect: {}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("never trusted"),
        "{}",
        text(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("loosened"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_http_token_file_cannot_be_read_by_any_tool() {
    let lab = Lab::new();
    for user in [User::Root, User::Nobody] {
        let _ = std::fs::remove_dir_all(lab.path("proj"));
        project(&lab, user);
        let mut server = lab
            .command(user, "proj", &["serve", "--http", "127.0.0.1:0"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("serve");
        let mut lines = BufReader::new(server.stderr.take().expect("stderr")).lines();
        let file = loop {
            let line = lines
                .next()
                .expect("serve ended before writing its token")
                .expect("stderr");
            if let Some(rest) = line.split("wrote it to ").nth(1) {
                break rest.split(" (mode").next().expect("path").to_string();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        let token = std::fs::read_to_string(&file).expect("token").trim().to_string();
        assert_eq!(token.len(), 64, "{user:?}: {file}");
        let rel = file
            .strip_prefix(&format!("{}/", lab.path("proj").display()))
            .unwrap_or_else(|| panic!("{user:?}: the token is not in the project's state folder: {file}"))
            .to_string();

        let (results, stderr) = lab.batch(
            user,
            "proj",
            &[],
            &[
                ("read_file", json!({"file_path": rel})),
                ("read_file", json!({"file_path": file})),
                // A pattern matching the token without naming it.
                ("grep", json!({"pattern": "[0-9a-f]{64}", "path": "."})),
                ("glob", json!({"pattern": "**/*.token"})),
                ("list_directory", json!({"path": ".", "depth": 3})),
                ("list_directory", json!({"path": ".toolhost"})),
                ("bash", json!({"command": format!("cat {rel}; cat .toolhost/*.token; grep -rE '[0-9a-f]{{64}}' . ; exit 0")})),
            ],
        );
        let _ = server.kill();
        let _ = server.wait();
        assert_eq!(results.len(), 7, "{user:?}: {stderr}");
        for (i, r) in results.iter().enumerate() {
            assert!(
                !r.to_string().contains(&token),
                "{user:?}: call {i} revealed the token: {r}"
            );
        }
        assert!(
            refused(&results[0]) && refused(&results[1]) && refused(&results[5]),
            "{user:?}: {results:?}"
        );
        let grep = results[2]["output"].as_str().unwrap_or("");
        assert!(
            grep.contains("skipped: toolhost's state"),
            "{user:?}: grep does not say it skipped: {grep}"
        );
        let listing = results[4]["output"].as_str().unwrap_or("");
        assert!(!listing.contains(".toolhost"), "{user:?}: {listing}");
    }
}
