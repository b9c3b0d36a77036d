//! A throwaway PostgreSQL cluster for the fleet tests, from the Debian
//! package (`.ci/run` installs `postgresql`): `initdb` into a temp folder and
//! `postgres` on a free loopback port, as `nobody` when the tests run as root
//! (initdb refuses root). Anything that stops it from starting fails the
//! test: there is no skip.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running (or stopped) cluster; stopped and removed on drop.
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    server: Option<Child>,
}

/// The newest installed PostgreSQL's `bin` folder.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is not installed (/usr/lib/postgresql is missing): apt-get install -y postgresql (.ci/run does)")
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
        .expect("no /usr/lib/postgresql/*/bin/initdb: apt-get install -y postgresql")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A command run as `nobody` when this process is root.
fn as_server_user(program: &Path) -> Command {
    if is_root() {
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
    /// cannot.
    pub fn start() -> Cluster {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("toolhost-pg-")
            .tempdir()
            .expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
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
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut cluster = Cluster {
            dir,
            bin,
            port: free_port(),
            server: None,
        };
        cluster.resume();
        cluster
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again) on the same port and data; returns once it
    /// says it accepts connections.
    pub fn resume(&mut self) {
        assert!(self.server.is_none(), "already running");
        let mut child = as_server_user(&self.bin.join("postgres"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-p", &self.port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .args([
                "-c",
                &format!("unix_socket_directories={}", self.dir.path().display()),
            ])
            .args(["-c", "fsync=off", "-c", "max_connections=200"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start postgres");
        let stderr = child.stderr.take().expect("stderr");
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
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(())) => self.server = Some(child),
            Ok(Err(log)) => {
                let _ = child.kill();
                panic!("postgres exited before accepting connections:\n{log}")
            }
            Err(_) => {
                let _ = child.kill();
                panic!("postgres did not become ready within 60 s")
            }
        }
    }

    /// Stops the server (fast shutdown: sessions are cut) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.server.take() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let _ = child.wait();
        }
    }

    /// Runs SQL through `psql`, returning its unaligned output.
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
