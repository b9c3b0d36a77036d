//! The audit log is never reached through a link, and a record put before
//! the log's start is found: run as two real users (root and uid 65534).

mod common;

use common::users::{text, Lab, User};
use serde_json::json;

/// A plan of `user` in `proj` (named with --plan): files, a shell with its
/// sandbox off (the weakest plan: a command can touch the log's folder) and
/// an audit log in the project.
fn project(lab: &Lab, user: User) {
    let _ = std::fs::remove_dir_all(lab.path("proj"));
    lab.folder("proj", user);
    lab.folder("proj/logs", user);
    lab.file(
        "proj/plan.toml",
        "[host]\naudit_log = \"logs/audit.jsonl\"\n[[tools]]\nmodule = \"filesystem\"\n\
         [[tools]]\nmodule = \"bash\"\n[tools.config]\nsandbox = \"off\"\n",
        user,
    );
}

#[test]
fn a_symlinked_audit_log_is_not_followed() {
    let lab = Lab::new();
    for user in [User::Root, User::Nobody] {
        project(&lab, user);
        // Outside the project, the user's own file a link would lead to.
        let outside = lab.file(&format!("outside-{}", user.uid()), "", user);
        let swap = format!(
            "rm logs/audit.jsonl && ln -s {} logs/audit.jsonl",
            outside.display()
        );
        let results = lab.serve_calls(
            user,
            "proj",
            &["--plan", "plan.toml"],
            &[
                ("write_file", json!({"file_path": "a.txt", "content": "a"})),
                ("bash", json!({"command": swap})),
                ("write_file", json!({"file_path": "b.txt", "content": "b"})),
                ("read_file", json!({"file_path": "a.txt"})),
            ],
        );
        assert!(!results[0].0, "{user:?}: {results:?}");
        assert!(
            results[2].0,
            "{user:?}: a side-effecting call ran with a swapped log: {results:?}"
        );
        assert!(
            results[2].1.contains("audit")
                && results[2].1.contains("symbolic link")
                && results[2].1.contains("SIGHUP"),
            "{user:?}: the refusal does not say what happened and what to do: {}",
            results[2].1
        );
        assert!(!lab.path("proj/b.txt").exists(), "{user:?}");
        assert!(!results[3].0, "{user:?}: read-only calls still run: {results:?}");
        assert_eq!(
            std::fs::read_to_string(&outside).expect("outside"),
            "",
            "{user:?}: records were written through the link"
        );
        // A new host refuses the linked log at start.
        let out = lab.run(user, "proj", &["--plan", "plan.toml", "check"]);
        assert_eq!(out.status.code(), Some(1), "{user:?}: {}", text(&out));
        assert!(text(&out).contains("symbolic link"), "{user:?}: {}", text(&out));
    }
}

#[test]
fn a_record_prepended_before_the_genesis_is_found() {
    let lab = Lab::new();
    for user in [User::Root, User::Nobody] {
        project(&lab, user);
        for file in ["a.txt", "b.txt"] {
            let input = json!({"file_path": file, "content": "x"}).to_string();
            let out = lab.run(
                user,
                "proj",
                &["--plan", "plan.toml", "call", "write_file", &input],
            );
            assert!(out.status.success(), "{user:?}: {}", text(&out));
        }
        let log = lab.path("proj/logs/audit.jsonl");
        let text_now = std::fs::read_to_string(&log).expect("log");
        let first: serde_json::Value =
            serde_json::from_str(text_now.lines().next().expect("a record")).expect("json");
        assert_eq!(first["seq"], 0, "{text_now}");
        assert!(
            first["genesis"]["host"].is_string(),
            "no genesis naming the host: {first}"
        );
        assert!(first["genesis"]["started_unix_ms"].is_u64(), "no start: {first}");
        let verify = |what: &str| {
            let out = lab.run(user, "proj", &["audit", "verify", "logs/audit.jsonl"]);
            let all = text(&out);
            (out.status.code(), all, what.to_string())
        };
        let (code, all, _) = verify("intact");
        assert_eq!(code, Some(0), "{user:?}: {all}");
        assert!(all.contains("begun by host"), "{user:?}: {all}");

        // A forged record put before the start: the same head, but found.
        let forged = "{\"call_id\":\"forged\",\"tool\":\"delete_file\",\"status\":\"success\"}\n";
        std::fs::write(&log, format!("{forged}{text_now}")).expect("prepend");
        let (code, all, _) = verify("prepended");
        assert_eq!(code, Some(1), "{user:?}: a prepended record passed: {all}");
        assert!(all.contains("before the genesis record"), "{user:?}: {all}");
    }
}
