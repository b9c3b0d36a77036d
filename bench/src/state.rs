//! Shared-state benchmarks (issue #17): what an idempotency key adds to a
//! side-effecting call, on the embedded store (SQLite) and on PostgreSQL.
//! The PostgreSQL rows use `TOOLHOST_BENCH_STATE_URL` when set, else a
//! throwaway cluster started from the Debian package (as the fleet tests
//! do); with neither, they are skipped with a message (a bench may skip,
//! a test may not).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use serde_json::json;
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

use crate::report::Bench;

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    rows(b, dir.path(), "sqlite", "")?;
    match postgres() {
        Ok((url, server)) => {
            let outcome = rows(b, dir.path(), "postgres", &format!("state_url = {url:?}\n"));
            drop(server);
            outcome?;
        }
        Err(why) => eprintln!("bench state: skipping the PostgreSQL rows: {why}"),
    }
    Ok(())
}

/// Unkeyed, keyed (a new key per call: claim + run + record) and replayed
/// (one key again: claim finds the result) `write_key` calls.
fn rows(b: &mut Bench, dir: &Path, label: &'static str, host_extra: &str) -> anyhow::Result<()> {
    let file = dir.join(format!("{label}.toml"));
    std::fs::write(
        &file,
        format!(
            "[host]\nmodule_path = [{:?}]\nstate_dir = {:?}\n{host_extra}[[tools]]\nmodule = \"fixture\"\n",
            b.target_dir.display().to_string(),
            dir.join(format!("{label}-state")).display().to_string()
        ),
    )?;
    let host = Arc::new(Host::open(Plan::load(&file)?)?);
    let pipeline = Pipeline::new(host.clone(), CancelToken::new());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let call = |key: Option<String>| {
        let result = runtime.block_on(pipeline.call(Call {
            name: "write_key".into(),
            input: json!({"key": "bench"}),
            idempotency_key: key,
            ..Call::default()
        }));
        assert!(result.success, "{result:?}");
    };
    let unkeyed = b.time(20, b.n(500), || call(None));
    let mut n = 0u64;
    let keyed = b.time(20, b.n(500), || {
        n += 1;
        call(Some(format!("{label}-{}-{n}", std::process::id())))
    });
    let replay_key = format!("{label}-{}-replay", std::process::id());
    let replayed = b.time(20, b.n(500), || call(Some(replay_key.clone())));
    b.row(
        "state",
        format!("write_key unkeyed ({label} configured)"),
        unkeyed,
        None,
    );
    b.row(
        "state",
        format!("write_key keyed, new key each call, {label}"),
        keyed,
        None,
    );
    b.row(
        "state",
        format!("write_key keyed, replayed, {label}"),
        replayed,
        None,
    );
    eprintln!(
        "bench state: {label}: a new key adds {:?}, a replay costs {:?} (medians; unkeyed {:?})",
        keyed.median.saturating_sub(unkeyed.median),
        replayed.median,
        unkeyed.median
    );
    host.shutdown();
    Ok(())
}

/// A PostgreSQL to measure against, and the server process to stop after.
fn postgres() -> Result<(String, Option<Server>), String> {
    if let Ok(url) = std::env::var("TOOLHOST_BENCH_STATE_URL") {
        return Ok((url, None));
    }
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| {
            "PostgreSQL is not installed (apt-get install postgresql) and TOOLHOST_BENCH_STATE_URL is unset"
                .to_string()
        })?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .find(|p| p.join("initdb").is_file())
        .ok_or("no /usr/lib/postgresql/*/bin/initdb")?;
    let dir = tempfile::Builder::new()
        .prefix("toolhost-bench-pg-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let chmod = Command::new("chmod").arg("777").arg(dir.path()).status();
    if !chmod.map(|s| s.success()).unwrap_or(false) {
        return Err("cannot open the cluster folder to the server user".into());
    }
    let data = dir.path().join("data");
    let out = server_user(&bin.join("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "--auth=trust", "--no-sync", "--no-instructions"])
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!("initdb failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let mut child = server_user(&bin.join("postgres"))
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", dir.path().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("postgres: {e}"))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("ready to accept connections"));
    std::thread::spawn(move || lines.for_each(drop));
    let server = Server { child, _dir: dir };
    if !ready {
        return Err("postgres exited before accepting connections".into());
    }
    Ok((
        format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        Some(server),
    ))
}

fn server_user(program: &PathBuf) -> Command {
    // initdb refuses root: run the cluster as nobody then.
    // SAFETY: geteuid has no preconditions.
    #[allow(unsafe_code)]
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

/// The throwaway server; stopped (fast shutdown) on drop.
struct Server {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT)
        };
        let _ = self.child.wait();
    }
}
