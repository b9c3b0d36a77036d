//! bash output and time limits (issue #14 item 3, issue #18's Claude Code
//! profile): no spill file is left by a call whatever it prints, with the
//! sandbox on or off; `timeout` takes fractional seconds; `bash_output`
//! keeps only lines matching `filter`, and a bad pattern loses nothing.

mod common;

use common::InProcess;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

/// Files under `root` whose bytes hold `needle`.
fn files_holding(root: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file()
                && std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
            {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn a_flood_leaves_no_file_behind_with_the_sandbox_on_or_off() {
    for sandbox in ["off", "workspace-write"] {
        let p = InProcess::bash(&format!("sandbox = \"{sandbox}\"\nmax_output_bytes = 1000"));
        let r = p.call_json(
            "bash",
            json!({"command": "echo \"tmp=$TMPDIR\"; seq 1 200000; seq 1 100000 >&2"}),
        );
        assert_eq!(r["status"], "success", "{sandbox}: {r}");
        let out = &r["output"];
        assert_eq!(out["truncated"], true, "{sandbox}: {r}");
        assert!(
            out["cut_bytes"].as_u64().unwrap_or(0) > 1_000_000,
            "{sandbox}: {r}"
        );
        let note = out["cut_note"].as_str().unwrap_or("");
        assert!(
            note.contains("were dropped") && note.contains("no copy is kept"),
            "{sandbox}: {r}"
        );
        let fields = out.as_object().expect("object");
        assert!(
            !fields.keys().any(|k| k.ends_with("_file")),
            "{sandbox}: a result names a file: {r}"
        );
        // The middle of the stream is nowhere on disk: not in the plan's
        // folder (its state folder included), nor beside the private temp
        // folders of the sandbox.
        let middle = b"\n150000\n";
        let mut roots = vec![p.path().to_path_buf()];
        let tmp = out["stdout"]
            .as_str()
            .unwrap_or("")
            .lines()
            .find_map(|l| l.strip_prefix("tmp="))
            .unwrap_or("")
            .to_string();
        if sandbox != "off" {
            let parent = Path::new(&tmp)
                .parent()
                .unwrap_or_else(|| panic!("no TMPDIR: {r}"));
            roots.push(parent.to_path_buf());
        }
        for root in &roots {
            let left = files_holding(root, middle);
            assert!(left.is_empty(), "{sandbox}: the output was kept in {left:?}");
        }
        p.host.shutdown();
    }
}

#[test]
fn timeout_takes_fractional_seconds_within_todays_bounds() {
    let p = InProcess::bash("sandbox = \"off\"\nkill_grace_ms = 200");
    let start = Instant::now();
    let r = p.call_json("bash", json!({"command": "sleep 30", "timeout": 1.5}));
    let took = start.elapsed();
    assert_eq!(r["status"], "timeout", "{r}");
    assert!(r.to_string().contains("timed out after 1.5 s"), "{r}");
    assert!(
        took >= Duration::from_millis(1500),
        "ended before its timeout: {took:?}"
    );
    assert!(
        took < Duration::from_secs(20),
        "the timeout did not end it: {took:?}"
    );
    // Under the minimum, as before: refused before anything runs.
    let r = p.call_json("bash", json!({"command": "touch ran", "timeout": 0.5}));
    assert_eq!(r["success"], false, "{r}");
    assert!(!p.path().join("ran").exists(), "ran with timeout 0.5: {r}");
    // A whole number is reported as one.
    let r = p.call_json(
        "bash",
        json!({"command": "true", "timeout": 2, "run_in_background": true}),
    );
    assert_eq!(r["output"]["timeout_secs"], json!(2), "{r}");
    p.host.shutdown();
}

#[test]
fn bash_output_filter_keeps_matching_lines_and_a_bad_pattern_loses_nothing() {
    let p = InProcess::bash("sandbox = \"off\"");
    let r = p.call_json(
        "bash",
        json!({
            "command": "for i in $(seq 1 20); do echo line-$i; echo err-$i >&2; done; touch finished.flag",
            "run_in_background": true
        }),
    );
    let id = r["output"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no job id: {r}"))
        .to_string();
    let flag = p.path().join("finished.flag");
    let end = Instant::now() + Duration::from_secs(20);
    while !flag.exists() {
        assert!(Instant::now() < end, "the job never finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    let bad = p.call_json("bash_output", json!({"id": id, "filter": "line-(1"}));
    assert_eq!(bad["success"], false, "{bad}");
    assert_eq!(bad["error"]["code"], "invalid_input", "{bad}");
    assert!(
        bad.to_string().contains("not a valid regular expression"),
        "{bad}"
    );

    let r = p.call_json("bash_output", json!({"id": id, "filter": "^line-1[0-9]?$"}));
    assert_eq!(r["status"], "success", "{r}");
    let lines: Vec<&str> = r["output"]["stdout"].as_str().unwrap_or("").lines().collect();
    let want: Vec<String> = std::iter::once(1)
        .chain(10..=19)
        .map(|i| format!("line-{i}"))
        .collect();
    assert_eq!(
        lines, want,
        "the bad pattern must not have consumed anything: {r}"
    );
    assert_eq!(r["output"]["stderr"], "", "{r}");
    assert_eq!(r["output"]["filtered_out_lines"], json!(9 + 20), "{r}");
    // What did not match is consumed all the same (or the job, over and
    // reported, is forgotten).
    let again = p.call_json("bash_output", json!({"id": id}));
    if again["status"] == "success" {
        assert_eq!(again["output"]["stdout"], "", "{again}");
        assert_eq!(again["output"]["stderr"], "", "{again}");
    } else {
        assert_eq!(again["error"]["code"], "not_found", "{again}");
    }
    p.host.shutdown();
}
