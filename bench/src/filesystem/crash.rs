//! Issue #20's reliability figures for the filesystem module, from the
//! release binary: `kill -9` at random points of 1 MiB writes and edits
//! (torn files, temp files left after the next mount), and grep's peak
//! memory on one 400 MB line. The tests hold the pass/fail line
//! (`host/tests/filesystem_crash.rs`, `filesystem_reliability.rs`); these
//! rows report the figures.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::report::{Bench, Stats};

/// A 1 MiB body of `fill` lines, then a state line.
fn content(fill: char, state: char) -> String {
    let line: String = std::iter::repeat_n(fill, 63).chain(['\n']).collect();
    let mut s = line.repeat(1024 * 1024 / 64);
    s.push_str(&format!("state={state}\n"));
    s
}

fn toolhost(b: &Bench, work: &Path) -> Command {
    let mut cmd = Command::new(b.target_dir.join("toolhost"));
    cmd.arg("--plan")
        .arg(work.join("plan.toml"))
        .current_dir(work)
        .env("TOOLHOST_MODULE_PATH", &b.target_dir)
        .env("NO_COLOR", "1");
    cmd
}

/// `toolhost batch -` on `calls`, returned once the second call's
/// `tool:pre` event is logged (the change is about to run).
fn start(b: &Bench, work: &Path, calls: &[Value]) -> anyhow::Result<(std::process::Child, Instant)> {
    let mut child = toolhost(b, work)
        .env("RUST_LOG", "toolhost::events=debug")
        .args(["batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or_else(|| anyhow::anyhow!("no stdin"))?;
    let input: String = calls.iter().map(|c| format!("{c}\n")).collect();
    std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut stderr = BufReader::new(child.stderr.take().ok_or_else(|| anyhow::anyhow!("no stderr"))?);
    let mut line = String::new();
    loop {
        line.clear();
        if stderr.read_line(&mut line)? == 0 {
            anyhow::bail!("the host ended before the change started");
        }
        if line.contains("tool:pre") && line.contains("call-2") {
            break;
        }
    }
    let ready = Instant::now();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
    });
    Ok((child, ready))
}

fn temp_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().contains(".toolhost-"))
                .count()
        })
        .unwrap_or(0)
}

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let work = dir.path().canonicalize()?;
    let project = work.join("project");
    std::fs::create_dir_all(&project)?;
    std::fs::write(
        work.join("plan.toml"),
        "[host]\nworking_dir = \"project\"\ndefault_timeout_secs = 120\n\n[[tools]]\nmodule = \"filesystem\"\n[tools.config]\n",
    )?;
    kill_rounds(b, &work, &project)?;
    grep_long_line(b, &work, &project)
}

fn kill_rounds(b: &mut Bench, work: &Path, project: &Path) -> anyhow::Result<()> {
    let file = project.join("big.txt");
    std::fs::write(&file, content('a', '1'))?;
    let calls_for = |round: usize, current: &str| -> (Vec<Value>, String) {
        let fill = current.chars().next().unwrap_or('a');
        let state = current.trim_end().chars().last().unwrap_or('1');
        let read = json!({"name": "read_file", "input": {"file_path": "big.txt", "limit": 1}});
        if round.is_multiple_of(2) {
            let new = content(if fill == 'a' { 'b' } else { 'a' }, state);
            let write = json!({"name": "write_file", "input": {"file_path": "big.txt", "content": new}});
            (vec![read, write], new)
        } else {
            let other = if state == '1' { '2' } else { '1' };
            let edit = json!({"name": "edit_file", "input": {"file_path": "big.txt",
                "old_string": format!("state={state}"), "new_string": format!("state={other}")}});
            (vec![read, edit], content(fill, other))
        }
    };
    // The whole change, uninterrupted: its duration aims the kills.
    let (calls, _) = calls_for(0, &std::fs::read_to_string(&file)?);
    let (mut child, ready) = start(b, work, &calls)?;
    child.wait()?;
    let window = ready.elapsed().as_micros().max(1) as u64;
    let mut seed: u64 = 0x5eed_0020_c0ff_ee11;
    let rounds = b.n(200);
    let (mut torn, mut old, mut new_landed, mut temps_seen) = (0, 0, 0, 0);
    let mut times = Vec::new();
    for round in 1..=rounds {
        let current = std::fs::read_to_string(&file).unwrap_or_default();
        let (calls, new) = calls_for(round, &current);
        let (mut child, ready) = start(b, work, &calls)?;
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_micros(seed % window);
        std::thread::sleep(delay.saturating_sub(ready.elapsed()));
        let _ = child.kill();
        child.wait()?;
        times.push(ready.elapsed());
        let after = std::fs::read(&file)?;
        if after == current.as_bytes() {
            old += 1;
        } else if after == new.as_bytes() {
            new_landed += 1;
        } else {
            torn += 1;
            std::fs::write(&file, &current)?;
        }
        temps_seen += temp_files(project);
    }
    let mounted = toolhost(b, work)
        .args(["call", "list_directory", "{}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    anyhow::ensure!(mounted.success(), "the mount after the kills failed");
    let left = temp_files(project);
    b.row(
        "filesystem",
        format!(
            "kill -9 during 1 MiB write_file/edit_file ×{rounds}: {torn} torn ({old} old, {new_landed} new); temp files {temps_seen} after kills, {left} after the next mount (time: change start → killed)"
        ),
        Stats::of(times),
        None,
    );
    Ok(())
}

/// Peak RSS (KiB) of a `toolhost call`, read from wait4.
#[allow(clippy::zombie_processes)] // reaped by wait4, which std's Child cannot see
#[allow(unsafe_code)] // wait4: std has no peak-RSS of a child
fn peak_rss_kib(b: &Bench, work: &Path, tool: &str, input: &Value) -> anyhow::Result<(i64, Duration)> {
    let started = Instant::now();
    let child = toolhost(b, work)
        .args(["call", tool, &input.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child (its pid), with valid out-pointers.
    let waited = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    anyhow::ensure!(waited == child.id() as libc::pid_t, "wait4 failed");
    Ok((usage.ru_maxrss, started.elapsed()))
}

fn grep_long_line(b: &mut Bench, work: &Path, project: &Path) -> anyhow::Result<()> {
    std::fs::write(project.join("small.txt"), "needle here\n")?;
    let input = json!({"pattern": "needle", "output_mode": "content"});
    let (baseline, _) = peak_rss_kib(b, work, "grep", &input)?;
    let big = project.join("minified.js");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&big)?);
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..400 {
            w.write_all(&chunk)?;
        }
        w.write_all(b"\nneedle\n")?;
    }
    let (peak, took) = peak_rss_kib(b, work, "grep", &input)?;
    std::fs::remove_file(&big)?;
    b.row(
        "filesystem",
        format!(
            "grep over one 400 MB line: peak RSS {} MiB (small tree: {} MiB)",
            peak / 1024,
            baseline / 1024
        ),
        Stats::of(vec![took]),
        None,
    );
    Ok(())
}
