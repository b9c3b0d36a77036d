//! Crash consistency of write_file and edit_file through the real binary:
//! the host killed with SIGKILL at random points of a large write, many
//! times (every file is then its old or its new content, never torn, and
//! the next mount removes the temp files the killed hosts left), and a full
//! disk (a small tmpfs: a clear error, the old content intact, no temp file).
//!
//! The kill test runs 200 rounds (a fixed seed); `TOOLHOST_LONG_TESTS=1`
//! runs 1,000.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Env;
use serde_json::{json, Value};

fn lab() -> Env {
    let env = Env::new(
        "[host]\nworking_dir = \"project\"\ndefault_timeout_secs = 120\n\n[[tools]]\nmodule = \"filesystem\"\n[tools.config]\n",
    );
    std::fs::create_dir_all(env.path().join("project")).unwrap();
    env
}

/// The temp files (`.NAME.toolhost-PID-N.tmp`) under `dir`.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".toolhost-"))
        })
        .collect()
}

/// A small deterministic generator (the seed is fixed, so a failure replays).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// A 1 MiB body of `fill` lines, then a state line.
fn content(fill: char, state: char) -> String {
    let line: String = std::iter::repeat_n(fill, 63).chain(['\n']).collect();
    let mut s = line.repeat(1024 * 1024 / 64);
    s.push_str(&format!("state={state}\n"));
    s
}

/// Starts `toolhost batch -` on `calls` and returns once the host logs
/// the second call's `tool:pre` event (its readiness signal: the change is
/// about to run).
fn start(env: &Env, calls: &[Value]) -> (std::process::Child, Instant) {
    let mut child = env
        .command()
        .env("RUST_LOG", "toolhost::events=debug")
        .env("NO_COLOR", "1")
        .arg("batch")
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input: String = calls.iter().map(|c| format!("{c}\n")).collect();
    // Written from a thread: the content does not fit in the pipe at once.
    std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let n = stderr.read_line(&mut line).unwrap();
        assert!(n > 0, "the host ended before the change started");
        if line.contains("tool:pre") && line.contains("call-2") {
            break;
        }
    }
    let ready = Instant::now();
    // Keep draining so the host never blocks on a full pipe.
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
    });
    (child, ready)
}

fn calls_for(round: u64, current: &str) -> (Vec<Value>, String) {
    let (fill, state) = {
        let mut it = current.chars();
        let fill = it.next().unwrap();
        let state = current.trim_end().chars().last().unwrap();
        (fill, state)
    };
    let read = json!({"name": "read_file", "input": {"file_path": "big.txt", "limit": 1}});
    if round.is_multiple_of(2) {
        let other = if fill == 'a' { 'b' } else { 'a' };
        let new = content(other, state);
        let write = json!({"name": "write_file", "input": {"file_path": "big.txt", "content": new}});
        (vec![read, write], new)
    } else {
        let other = if state == '1' { '2' } else { '1' };
        let edit = json!({"name": "edit_file", "input": {"file_path": "big.txt", "old_string": format!("state={state}"), "new_string": format!("state={other}")}});
        (vec![read, edit], content(fill, other))
    }
}

#[test]
fn kill_9_during_writes_and_edits_never_tears_a_file_and_the_next_mount_cleans_up() {
    let rounds: u64 = if std::env::var_os("TOOLHOST_LONG_TESTS").is_some() {
        1000
    } else {
        200
    };
    let env = lab();
    let project = env.path().join("project");
    let file = project.join("big.txt");
    std::fs::write(&file, content('a', '1')).unwrap();

    // Where the write's temp file appears and where the rename lands, after
    // the read's answer, to aim the kills: the median of a few calls. The
    // whole call is no measure: most of it is before the temp file exists
    // (a debug build hashes the old file) and after the rename (the process
    // exits), so kills spread over it rarely land while the temp file exists.
    let mut seen: Vec<(u64, u64)> = (0..5)
        .map(|i| {
            use std::os::unix::fs::MetadataExt;
            let current = std::fs::read_to_string(&file).unwrap();
            let before = std::fs::metadata(&file).unwrap().ino();
            let (calls, new) = calls_for(i, &current);
            let (mut child, ready) = start(&env, &calls);
            let mut temp_at = None;
            let landed_at = loop {
                let at = ready.elapsed().as_micros() as u64;
                assert!(at < 30_000_000, "the write never landed");
                if temp_at.is_none() && !temp_files(&project).is_empty() {
                    temp_at = Some(at);
                }
                if std::fs::metadata(&file).map(|m| m.ino()).unwrap_or(before) != before {
                    break at;
                }
            };
            assert!(child.wait().unwrap().success());
            assert_eq!(std::fs::read_to_string(&file).unwrap(), new);
            (temp_at.unwrap_or(landed_at), landed_at)
        })
        .collect();
    seen.sort_unstable_by_key(|&(_, landed)| landed);
    let (temp_at, landed_at) = seen[seen.len() / 2];
    // Kills fall as often before the temp file, while it exists, and after
    // the rename (each span as long as the temp file lives, at least 0.5 ms).
    let lives = (landed_at - temp_at).max(500);
    let (from, to) = (temp_at.saturating_sub(lives), landed_at + lives);
    // (`from` may move below; `window` stays.)
    let window = to - from;

    let mut rng = Rng(0x5eed_0020_c0ff_ee11);
    let (mut old_kept, mut new_landed, mut temps_left) = (0, 0, 0);
    // The aim follows where the kills land: on a loaded machine the host can
    // run ahead of (or behind) the calibration, so that every kill of a
    // stretch lands on one side of the rename. After each 10 rounds that all
    // landed on one side, the window moves by half its width toward the
    // other side.
    let mut from = from as i64;
    let (mut streak_old, mut streak_new) = (0u32, 0u32);
    let started = Instant::now();
    for round in 1..=rounds {
        let current = std::fs::read_to_string(&file).unwrap();
        let (calls, new) = calls_for(round, &current);
        let (mut child, ready) = start(&env, &calls);
        let delay = Duration::from_micros(from.max(0) as u64 + rng.below(window));
        // Fault injection, not a wait for a state: the kill lands anywhere
        // in the write (before it, in it, after it). A spin, not a sleep:
        // a sleeping thread's wake-up can come milliseconds late under load.
        while ready.elapsed() < delay {
            std::hint::spin_loop();
        }
        let _ = child.kill();
        child.wait().unwrap();
        let after = std::fs::read(&file).unwrap();
        if after == current.as_bytes() {
            old_kept += 1;
            (streak_old, streak_new) = (streak_old + 1, 0);
        } else if after == new.as_bytes() {
            new_landed += 1;
            (streak_old, streak_new) = (0, streak_new + 1);
        } else {
            panic!(
                "round {round}: killed {delay:?} after the change started, the file is torn: {} bytes, neither the old {} nor the new {}",
                after.len(),
                current.len(),
                new.len()
            );
        }
        temps_left += temp_files(&project).len();
        let step = (window / 2).max(1) as i64;
        if streak_new >= 10 {
            (from, streak_new) = (from - step, 0);
        } else if streak_old >= 10 {
            (from, streak_old) = (from + step, 0);
        }
    }
    let elapsed = started.elapsed();
    // The next mount removes what the killed hosts left.
    let listed = env.call("list_directory", json!({}));
    listed.assert_success();
    let left = temp_files(&project);
    let markers = env.state_dir().join("modules/filesystem/pending");
    let markers_left = std::fs::read_dir(&markers).map(|d| d.count()).unwrap_or(0);
    eprintln!(
        "kill -9 x{rounds} in {elapsed:?} (write window {window} µs): old kept {old_kept}, new landed {new_landed}, torn 0; temp files seen after kills {temps_left}, after the next mount {}",
        left.len()
    );
    assert!(
        old_kept > 0 && new_landed > 0,
        "the kills never landed on both sides of the rename"
    );
    assert!(temps_left > 0, "no kill landed while a temp file existed");
    assert!(
        left.is_empty(),
        "temp files remain after the next mount: {left:?}"
    );
    assert_eq!(markers_left, 0, "markers remain in {}", markers.display());
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cannot mount a tmpfs (this test needs root, as in CI): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SmallDisk(at.to_path_buf())
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_a_clear_error_and_changes_nothing() {
    let env = lab();
    let disk_dir = env.path().join("project/small");
    let _disk = SmallDisk::mount(&disk_dir, "1m");
    std::fs::write(disk_dir.join("notes.txt"), "old notes\n").unwrap();
    let big = "x".repeat(3 << 20);
    let (results, _) = env.batch(
        &[
            json!({"name": "read_file", "input": {"file_path": "small/notes.txt"}}),
            json!({"name": "write_file", "input": {"file_path": "small/notes.txt", "content": big}}),
            json!({"name": "edit_file", "input": {"file_path": "small/notes.txt", "old_string": "old", "new_string": big}}),
            json!({"name": "write_file", "input": {"file_path": "small/new.txt", "content": big}}),
            json!({"name": "edit_file", "input": {"file_path": "small/notes.txt", "old_string": "old", "new_string": "new"}}),
        ],
        &[],
    );
    for r in &results[1..4] {
        assert_eq!(
            r["error"]["code"],
            "disk_full",
            "{}",
            &r.to_string()[..r.to_string().len().min(500)]
        );
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("No space left on device") && message.contains("nothing was changed"),
            "{message}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(disk_dir.join("notes.txt")).unwrap(),
        "new notes\n",
        "the small edit after the failures must still work on the intact file"
    );
    assert_eq!(results[4]["status"], "success", "{}", results[4]);
    assert!(!disk_dir.join("new.txt").exists(), "a partial new file was left");
    assert!(temp_files(&disk_dir).is_empty(), "{:?}", temp_files(&disk_dir));
}
