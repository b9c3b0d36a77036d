//! Runs the ```` ```sh ```` blocks of the docs against the built binaries.
//!
//! Each file's blocks run in order in one temporary folder, as a reader
//! following the page would run them (a later block may use what an earlier
//! one wrote), each with `bash -e -o pipefail`. `PATH` starts with the
//! folder of the built `toolhost`, `TOOLHOST_MODULE_PATH` is that folder,
//! and `HOME` and the XDG folders are the temp folder's own, so trust
//! records, state and plans never touch the user's. A block that exits
//! non-zero, or runs longer than [`BLOCK_TIMEOUT`], fails the check with
//! its file, line and output.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::blocks::blocks;
use super::relative;

/// How long one block may run: these are quick commands, and a block that
/// waits (a server started in the foreground) must fail, not hang CI.
pub const BLOCK_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs every `sh` block of `files`; returns how many ran.
pub fn run_all(files: &[PathBuf], bin_dir: &Path) -> anyhow::Result<usize> {
    let toolhost = bin_dir.join("toolhost");
    if !toolhost.is_file() {
        bail!(
            "{} is missing: build the workspace first (`cargo xtask test` does)",
            toolhost.display()
        );
    }
    let mut ran = 0;
    for file in files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        let shell: Vec<_> = blocks(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", relative(file)))?
            .into_iter()
            .filter(|b| b.lang == "sh")
            .collect();
        if shell.is_empty() {
            continue;
        }
        let folder = tempfile::tempdir().context("cannot make a temp folder")?;
        let home = folder.path().join("home");
        let work = folder.path().join("work");
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&work)?;
        for block in shell {
            let place = format!("{}:{}", relative(file), block.line);
            eprintln!("xtask docs: running the sh block at {place}");
            run_one(&block.body, &work, &home, bin_dir)
                .with_context(|| format!("the sh block at {place}"))?;
            ran += 1;
        }
    }
    Ok(ran)
}

fn run_one(script: &str, work: &Path, home: &Path, bin_dir: &Path) -> anyhow::Result<()> {
    let path = match std::env::var_os("PATH") {
        Some(rest) => {
            let mut dirs = vec![bin_dir.to_path_buf()];
            dirs.extend(std::env::split_paths(&rest));
            std::env::join_paths(dirs)?
        }
        None => bin_dir.as_os_str().to_owned(),
    };
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-o", "pipefail", "-c", script])
        .current_dir(work)
        .env("PATH", path)
        .env("TOOLHOST_MODULE_PATH", bin_dir)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("NO_COLOR", "1")
        .env_remove("TOOLHOST_PLAN")
        .env_remove("TOOLHOST_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so a timeout ends whatever the block started.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().context("cannot start bash")?;
    // Read both pipes on threads so a chatty block cannot fill one and stall.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait(&mut child, BLOCK_TIMEOUT);
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    match status? {
        Some(status) if status.success() => Ok(()),
        Some(status) => bail!(
            "exited with {status}\n--- block ---\n{script}--- stdout ---\n{out}--- stderr ---\n{err}"
        ),
        None => bail!(
            "still running after {BLOCK_TIMEOUT:?}: killed\n--- block ---\n{script}--- stdout ---\n{out}--- stderr ---\n{err}"
        ),
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

/// The exit status, or `None` after killing the block's process group at
/// the deadline.
fn wait(child: &mut Child, limit: Duration) -> anyhow::Result<Option<std::process::ExitStatus>> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-s", "KILL", "--", &group]).status();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bin_dir` only needs a `toolhost` file for these: the blocks below
    /// run plain shell.
    fn fake_bin() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("toolhost"), "").unwrap();
        dir
    }

    fn page(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("page.md");
        std::fs::write(&file, text).unwrap();
        (dir, file)
    }

    #[test]
    fn a_page_s_blocks_share_one_folder_in_order() {
        let bin = fake_bin();
        let (_dir, file) =
            page("```sh\necho hi > note\n```\n\n```console\nexit 1\n```\n\n```sh\ngrep -q hi note\n```\n");
        assert_eq!(run_all(&[file], bin.path()).unwrap(), 2);
    }

    #[test]
    fn a_failing_command_fails_with_its_place_and_output() {
        let bin = fake_bin();
        let (_dir, file) = page("# P\n\n```sh\necho before\nfalse\necho after\n```\n");
        let err = format!("{:#}", run_all(&[file], bin.path()).unwrap_err());
        assert!(err.contains("page.md:3"), "{err}");
        assert!(err.contains("exited with"), "{err}");
        assert!(
            err.contains("before") && !err.contains("--- stdout ---\nbefore\nafter"),
            "{err}"
        );
    }

    #[test]
    fn a_failure_inside_a_pipeline_fails_too() {
        let bin = fake_bin();
        let (_dir, file) = page("```sh\nfalse | cat\n```\n");
        assert!(run_all(&[file], bin.path()).is_err());
    }

    #[test]
    fn the_block_sees_its_own_home_and_the_binaries_first() {
        let bin = fake_bin();
        let home = std::env::var("HOME").unwrap_or_default();
        let script = format!(
            "```sh\ntest \"$HOME\" != '{home}'\ncase \"$PATH\" in '{}':*) ;; *) exit 3 ;; esac\n```\n",
            bin.path().display()
        );
        let (_dir, file) = page(&script);
        run_all(&[file], bin.path()).unwrap();
    }

    #[test]
    fn a_block_past_its_time_is_killed_with_what_it_started() {
        let mut cmd = Command::new("bash");
        cmd.args(["-c", "sleep 30 & sleep 30"]);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().unwrap();
        let started = Instant::now();
        assert!(wait(&mut child, Duration::from_millis(200)).unwrap().is_none());
        assert!(started.elapsed() < Duration::from_secs(5));
        // The whole group is gone (an orphan may take a moment to be
        // reaped): signalling it soon finds no process.
        let group = format!("-{}", child.id());
        let gone = (0..100).any(|_| {
            let alive = Command::new("kill")
                .args(["-0", "--", &group])
                .stderr(Stdio::null())
                .status()
                .unwrap();
            std::thread::sleep(Duration::from_millis(20));
            !alive.success()
        });
        assert!(gone, "the block's background job outlived it");
    }

    #[test]
    fn a_missing_binary_is_an_error_not_a_skip() {
        let empty = tempfile::tempdir().unwrap();
        let (_dir, file) = page("```sh\ntrue\n```\n");
        let err = run_all(&[file], empty.path()).unwrap_err().to_string();
        assert!(err.contains("is missing"), "{err}");
    }
}
