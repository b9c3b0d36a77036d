//! The filesystem module keeps a handle on each allowed folder across calls
//! (one host, the real cdylib, in this process). These tests pin what that
//! must not change: the real location the plan's path had at mount decides
//! which folder is served, so a folder deleted and recreated there after
//! mount is followed, a folder moved away is not served from its new place,
//! a symlink swapped in at that location is never followed, and stale
//! handles are dropped rather than piled up.

mod common;

use std::path::{Path, PathBuf};

use common::InProcess;
use serde_json::json;
use toolhost_core::ToolResult;

/// A host whose filesystem module works in `<tmp>/project`.
struct Lab {
    _dir: tempfile::TempDir,
    root: PathBuf,
    host: InProcess,
}

impl Lab {
    fn new(create_project: bool) -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        if create_project {
            std::fs::create_dir(root.join("project")).unwrap();
        }
        let plan = format!(
            "working_dir = {:?}\n\n[[tools]]\nmodule = \"filesystem\"\n[tools.config]\n",
            root.join("project").display().to_string()
        );
        Lab {
            _dir: dir,
            root,
            host: InProcess::new(&plan),
        }
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn read(&self, path: &str) -> ToolResult {
        self.host.call("read_file", json!({"file_path": path}))
    }

    fn read_text(&self, path: &str) -> String {
        let r = self.read(path);
        assert!(r.success, "{path}: {:?}", r.error);
        r.output.as_str().unwrap_or_default().to_string()
    }
}

/// Open descriptors of this process that point at `dir` (or at it deleted).
fn handles_on(dir: &Path) -> usize {
    let deleted = format!("{} (deleted)", dir.display());
    std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter(|t| t == dir || t.as_os_str() == deleted.as_str())
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn the_root_handle_is_kept_across_calls() {
    let lab = Lab::new(true);
    std::fs::write(lab.project().join("a.txt"), "one\n").unwrap();
    assert!(lab.read_text("a.txt").contains("one"));
    let held = handles_on(&lab.project());
    assert!(held >= 1, "no handle on the allowed folder is kept between calls");
    for _ in 0..50 {
        assert!(lab.read_text("a.txt").contains("one"));
    }
    assert_eq!(
        handles_on(&lab.project()),
        held,
        "calls must reuse the kept handle"
    );
}

#[test]
fn a_root_deleted_and_recreated_after_mount_is_followed() {
    let lab = Lab::new(true);
    std::fs::write(lab.project().join("a.txt"), "one\n").unwrap();
    assert!(lab.read_text("a.txt").contains("one"));

    std::fs::remove_dir_all(lab.project()).unwrap();
    let gone = lab.read("a.txt");
    assert!(
        !gone.success,
        "a deleted folder still answered: {:?}",
        gone.output
    );

    std::fs::create_dir(lab.project()).unwrap();
    std::fs::write(lab.project().join("a.txt"), "two\n").unwrap();
    assert!(lab.read_text("a.txt").contains("two"));
    // The handle on the deleted folder was let go, not kept beside the new one.
    let deleted = format!("{} (deleted)", lab.project().display());
    let stale = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .any(|t| t.as_os_str() == deleted.as_str());
    assert!(!stale, "a handle on the deleted folder is still open");

    // Writes, edits, listings and searches go through the new folder too.
    let r = lab
        .host
        .call("write_file", json!({"file_path": "b.txt", "content": "bee\n"}));
    assert!(r.success, "{:?}", r.error);
    assert_eq!(
        std::fs::read_to_string(lab.project().join("b.txt")).unwrap(),
        "bee\n"
    );
    let r = lab.host.call(
        "edit_file",
        json!({"file_path": "a.txt", "old_string": "two", "new_string": "deux"}),
    );
    assert!(r.success, "{:?}", r.error);
    assert_eq!(
        std::fs::read_to_string(lab.project().join("a.txt")).unwrap(),
        "deux\n"
    );
    let r = lab.host.call(
        "grep",
        json!({"pattern": "bee", "output_mode": "files_with_matches"}),
    );
    assert!(r.success, "{:?}", r.error);
    assert!(r.output.to_string().contains("b.txt"), "{}", r.output);
    let r = lab.host.call("glob", json!({"pattern": "*.txt"}));
    assert!(r.success, "{:?}", r.error);
    assert!(r.output.to_string().contains("a.txt"), "{}", r.output);
}

#[test]
fn a_root_renamed_away_is_not_served_from_its_new_place() {
    let lab = Lab::new(true);
    std::fs::write(lab.project().join("a.txt"), "original\n").unwrap();
    assert!(lab.read_text("a.txt").contains("original"));

    // Moved away: the kept handle would still reach it, but the plan names
    // the path, and nothing is there now.
    std::fs::rename(lab.project(), lab.root.join("moved")).unwrap();
    let r = lab.read("a.txt");
    assert!(!r.success, "the moved folder was served: {:?}", r.output);
    assert!(!r.output.to_string().contains("original"));
    let r = lab.host.call("list_directory", json!({}));
    assert!(!r.success, "the moved folder was listed: {:?}", r.output);

    // A new folder at the path is the one served.
    std::fs::create_dir(lab.project()).unwrap();
    std::fs::write(lab.project().join("a.txt"), "replacement\n").unwrap();
    let text = lab.read_text("a.txt");
    assert!(
        text.contains("replacement") && !text.contains("original"),
        "{text}"
    );

    // The path swapped for a symlink (here to the moved folder; it could
    // lead anywhere) while the host runs is not followed (issue #20: a root
    // is pinned to the real location it had at mount). Reads, writes,
    // listings and searches all refuse, and nothing lands at the target.
    std::fs::remove_dir_all(lab.project()).unwrap();
    std::os::unix::fs::symlink(lab.root.join("moved"), lab.project()).unwrap();
    let r = lab.read("a.txt");
    assert!(
        !r.success,
        "a root swapped for a symlink was followed: {:?}",
        r.output
    );
    let message = r.error.as_ref().map(|e| e.message.clone()).unwrap_or_default();
    assert!(message.contains("symbolic link"), "{message}");
    assert!(!r.output.to_string().contains("original"));
    let r = lab
        .host
        .call("write_file", json!({"file_path": "planted.txt", "content": "x"}));
    assert!(!r.success, "wrote through a swapped root: {:?}", r.output);
    assert!(!lab.root.join("moved/planted.txt").exists());
    for (tool, input) in [
        ("list_directory", json!({})),
        ("grep", json!({"pattern": "original"})),
        ("glob", json!({"pattern": "*.txt"})),
    ] {
        let r = lab.host.call(tool, input);
        assert!(!r.success, "{tool} followed a swapped root: {:?}", r.output);
    }
    // A real folder put back at the path is served again.
    std::fs::remove_file(lab.project()).unwrap();
    std::fs::create_dir(lab.project()).unwrap();
    std::fs::write(lab.project().join("a.txt"), "back\n").unwrap();
    assert!(lab.read_text("a.txt").contains("back"));
}

#[test]
fn a_root_configured_through_a_symlink_is_pinned_at_mount() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    for (name, text) in [("real", "pinned\n"), ("elsewhere", "elsewhere\n")] {
        std::fs::create_dir(base.join(name)).unwrap();
        std::fs::write(base.join(name).join("a.txt"), text).unwrap();
    }
    std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
    let plan = format!(
        "working_dir = {:?}\n\n[[tools]]\nmodule = \"filesystem\"\n[tools.config]\n",
        base.join("link").display().to_string()
    );
    let host = InProcess::new(&plan);
    let read = |path: &str| host.call("read_file", json!({"file_path": path}));
    let r = read("a.txt");
    assert!(r.output.to_string().contains("pinned"), "{:?}", r.error);
    // The plan's link re-pointed while the host runs: still the folder it led to at mount.
    std::fs::remove_file(base.join("link")).unwrap();
    std::os::unix::fs::symlink(base.join("elsewhere"), base.join("link")).unwrap();
    let r = read("a.txt");
    assert!(r.success, "{:?}", r.error);
    assert!(r.output.to_string().contains("pinned"), "{}", r.output);
    assert!(!r.output.to_string().contains("elsewhere"), "{}", r.output);
}

#[test]
fn a_root_created_after_mount_is_picked_up() {
    let lab = Lab::new(false);
    let r = lab.read("a.txt");
    assert!(!r.success);
    std::fs::create_dir(lab.project()).unwrap();
    std::fs::write(lab.project().join("a.txt"), "late\n").unwrap();
    assert!(lab.read_text("a.txt").contains("late"));
}
