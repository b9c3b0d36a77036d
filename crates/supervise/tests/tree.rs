//! Real process trees under the reaper: a command that starts a `setsid`
//! descendant and then exits, is stopped, or loses its host, leaves nothing
//! in the process table.
//!
//! No harness: this binary is also the reaper (`__reaper`, as the host's
//! binary is) and a short-lived host (`__host`), so each case runs real
//! processes end to end.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use toolhost_supervise::{reaper, spawn, Process};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some(reaper::SUBCOMMAND) => {
            // `__reaper --parent PID --what WHAT -- COMMAND…`, as
            // reaper::command builds it.
            let parent = args[3].parse().expect("a parent pid");
            reaper::main(parent, &args[5], &args[7..])
        }
        Some("__host") => {
            // Starts the script under the reaper, waits for its escaped
            // descendant to be up, then dies without stopping anything.
            let process = start(Path::new(&args[2]));
            wait_for_file(Path::new(&args[3]));
            std::mem::forget(process);
            std::process::exit(0)
        }
        _ => {
            let cases: [(&str, fn()); 4] = [
                ("a setsid descendant dies when its command exits", command_exits),
                (
                    "a setsid descendant dies when the reaper is stopped",
                    reaper_stopped,
                ),
                ("a setsid descendant dies when the host dies", host_dies),
                ("a reaped process is never signalled", reaped_is_not_signalled),
            ];
            for (name, case) in cases {
                case();
                println!("ok: {name}");
            }
            ExitCode::SUCCESS
        }
    }
}

/// The script `sh -c` runs: starts `sleep 300` in a new session (out of
/// the command's process group), writes its pid to `pidfile` and, once it
/// is there, `then`.
fn escaping(pidfile: &Path, then: &str) -> String {
    let file = pidfile.display();
    format!(
        "setsid sh -c 'echo $$ > {file}.tmp && mv {file}.tmp {file}; exec sleep 300' & \
         while [ ! -s {file} ]; do sleep 0.01; done; {then}"
    )
}

fn start(script: &Path) -> Process {
    let me = std::env::current_exe().expect("the test binary");
    let script = std::fs::read_to_string(script).expect("the script");
    let command = reaper::command(&me, "script", "sh", ["-c", script.as_str()]);
    Process::new(spawn(command).expect("the reaper starts"))
}

fn wait_for_file(file: &Path) -> u32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < until, "{} never appeared", file.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(')')?.1.split_whitespace().next()?.to_string();
            Some(state != "Z")
        })
        .unwrap_or(false)
}

fn gone_within(pid: u32, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while alive(pid) {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

struct Case {
    _dir: tempfile::TempDir,
    script: PathBuf,
    pidfile: PathBuf,
}

fn case(then: &str) -> Case {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let pidfile = dir.path().join("escaped.pid");
    let script = dir.path().join("script.sh");
    std::fs::write(&script, escaping(&pidfile, then)).expect("the script");
    Case {
        _dir: dir,
        script,
        pidfile,
    }
}

fn command_exits() {
    let case = case("exit 3");
    let process = start(&case.script);
    let status = process.wait().expect("a status");
    let escaped = wait_for_file(&case.pidfile);
    assert_eq!(status.code(), Some(3), "the reaper ends as its command did");
    // Reaped by the reaper before it exited: gone already.
    assert!(!alive(escaped), "the setsid sleep {escaped} outlived its command");
}

fn reaper_stopped() {
    let case = case("sleep 300");
    let process = start(&case.script);
    let escaped = wait_for_file(&case.pidfile);
    assert!(alive(escaped));
    assert!(process.terminate());
    let status = process.wait().expect("a status");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert!(
        !alive(escaped),
        "the setsid sleep {escaped} outlived the stopped reaper"
    );
}

fn host_dies() {
    let case = case("sleep 300");
    let me = std::env::current_exe().expect("the test binary");
    let host = std::process::Command::new(me)
        .arg("__host")
        .arg(&case.script)
        .arg(&case.pidfile)
        .status()
        .expect("the host runs");
    assert!(host.success(), "{host:?}");
    let escaped = wait_for_file(&case.pidfile);
    assert!(
        gone_within(escaped, Duration::from_secs(5)),
        "the setsid sleep {escaped} outlived the host"
    );
}

fn reaped_is_not_signalled() {
    let child = std::process::Command::new("true").spawn().expect("true runs");
    let process = Process::new(child);
    let first = process.wait();
    assert_eq!(first.and_then(|s| s.code()), Some(0));
    assert_eq!(process.wait(), first, "every waiter sees the same status");
    assert!(!process.kill(), "a reaped pid may belong to someone else now");
}
