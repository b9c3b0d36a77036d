//! A throwaway PostgreSQL cluster from the Debian package (`.ci/run`
//! installs `postgresql`): `initdb` into a temp folder and `postgres` on a
//! free loopback port, as `nobody` when this process is root (initdb
//! refuses root). The fleet tests start one with [`Cluster::start`], which
//! fails the test when it cannot (there is no skip); the bench uses
//! [`Cluster::try_start`] and skips its PostgreSQL rows with the reason.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rustix::process::{kill_process, Pid, Signal};

/// How long a starting server may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// A running (or stopped) cluster; stopped and removed on drop.
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    durable: bool,
    server: Option<Child>,
}

/// The newest installed PostgreSQL's `bin` folder.
fn bin_dir() -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| {
            "PostgreSQL is not installed (/usr/lib/postgresql is missing): apt-get install -y postgresql (.ci/run does)"
                .to_string()
        })?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").is_file())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found
        .pop()
        .ok_or_else(|| "no /usr/lib/postgresql/*/bin/initdb: apt-get install -y postgresql".to_string())
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

/// A command run as `nobody` when this process is root.
fn as_server_user(program: &Path) -> Command {
    if rustix::process::geteuid().is_root() {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

impl Cluster {
    /// Initializes and starts a cluster; panics (fails the test) if it
    /// cannot, saying why.
    /// Without fsync: the tests measure nothing, and a fleet test's
    /// restarts stay quick.
    pub fn start() -> Cluster {
        Cluster::try_start(false).unwrap_or_else(|why| panic!("{why}"))
    }

    /// Initializes and starts a cluster, or says why it cannot. `durable`
    /// keeps PostgreSQL's fsync on, as a real deployment has it (the bench
    /// measures commits).
    pub fn try_start(durable: bool) -> Result<Cluster, String> {
        let bin = bin_dir()?;
        let dir = tempfile::Builder::new()
            .prefix("toolhost-pg-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .map_err(|e| format!("cannot open the cluster folder to the server user: {e}"))?;
        let out = as_server_user(&bin.join("initdb"))
            .arg("-D")
            .arg(dir.path().join("data"))
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ])
            .env("LC_ALL", "C")
            .output()
            .map_err(|e| format!("cannot run initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "initdb failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let mut cluster = Cluster {
            dir,
            bin,
            port: free_port()?,
            durable,
            server: None,
        };
        cluster.try_resume()?;
        Ok(cluster)
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again) on the same port and data; returns once it
    /// says it accepts connections, and panics when it does not.
    pub fn resume(&mut self) {
        self.try_resume().unwrap_or_else(|why| panic!("{why}"));
    }

    /// Starts the server (again); `Err` with its log when it exits, or
    /// when it is not ready within a minute.
    fn try_resume(&mut self) -> Result<(), String> {
        assert!(self.server.is_none(), "already running");
        let mut child = as_server_user(&self.bin.join("postgres"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-p", &self.port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .args([
                "-c",
                &format!("unix_socket_directories={}", self.dir.path().display()),
            ])
            .args(["-c", if self.durable { "fsync=on" } else { "fsync=off" }])
            .args(["-c", "max_connections=200"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start postgres: {e}"))?;
        let stderr = child.stderr.take().ok_or("postgres has no stderr pipe")?;
        // The readiness signal is the server's own log line; the reader
        // keeps draining the log after it so the server never blocks on it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut log = String::new();
            let mut told = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.push_str(&line);
                log.push('\n');
                if !told && line.contains("database system is ready to accept connections") {
                    told = true;
                    let _ = tx.send(Ok(()));
                }
            }
            if !told {
                let _ = tx.send(Err(log));
            }
        });
        let outcome = match rx.recv_timeout(READY_WITHIN) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(log)) => Err(format!("postgres exited before accepting connections:\n{log}")),
            Err(_) => Err(format!("postgres did not become ready within {READY_WITHIN:?}")),
        };
        match outcome {
            Ok(()) => self.server = Some(child),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        outcome
    }

    /// Stops the server (fast shutdown: sessions are cut) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.server.take() {
            let _ = kill_process(Pid::from_child(&child), Signal::INT);
            let _ = child.wait();
        }
    }

    /// Runs SQL through `psql`, returning its unaligned output; panics
    /// (fails the test) when psql fails.
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.url(),
                "-c",
                sql,
            ])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}
