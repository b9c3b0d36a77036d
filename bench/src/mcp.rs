//! MCP server benchmarks, driven as a real client would: spawn
//! `toolhost serve`, speak JSON-RPC lines over its stdin/stdout (a minimal
//! client written here with std), and measure start to initialized, the
//! server's resident memory while serving, and the server's CPU time per
//! small call (from /proc, so client overhead is not counted: the sum of
//! every thread's `schedstat` run time, in nanoseconds, cross-checked
//! against the process's tick-granular `stat` times, which also count
//! threads that have exited).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::report::{Bench, Row, Stats};

const GROUP: &str = "mcp";

/// What every stdio MCP bench (this one and the soak) starts from.
pub struct Setup {
    /// The release `toolhost`, checked to exist.
    pub bin: std::path::PathBuf,
    /// A scratch folder holding `small.txt` (five short lines).
    pub dir: tempfile::TempDir,
    /// The module folder, for a plan's `module_path`.
    pub modules: String,
}

impl Setup {
    /// The binary, the scratch folder and the module folder of `b`.
    pub fn new(b: &Bench) -> anyhow::Result<Setup> {
        let bin = b.target_dir.join("toolhost");
        anyhow::ensure!(
            bin.is_file(),
            "{} is missing (cargo build --release)",
            bin.display()
        );
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("small.txt"), "one\ntwo\nthree\nfour\nfive\n")?;
        let modules = b.target_dir.display().to_string();
        Ok(Setup { bin, dir, modules })
    }
}

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let Setup { bin, dir, modules } = Setup::new(b)?;
    let fixture_plan = dir.path().join("fixture.toml");
    std::fs::write(
        &fixture_plan,
        format!("[host]\nmodule_path = [{modules:?}]\n[[tools]]\nmodule = \"fixture\"\n"),
    )?;

    // Start → initialized, each time a fresh process.
    let mut starts = Vec::new();
    for i in 0..b.n(30) + 2 {
        let started = Instant::now();
        let server = Server::start(&bin, &fixture_plan, dir.path())?;
        let took = started.elapsed();
        server.stop();
        if i >= 2 {
            starts.push(took); // the first two warm the page cache
        }
    }
    b.row(
        GROUP,
        "serve (stdio): spawn → initialized",
        Stats::of(starts),
        Some(Duration::from_millis(20)),
    );

    // Per-call CPU and memory: echo on the fixture, read_file when the
    // filesystem module mounts.
    let mut cases = vec![("echo", fixture_plan.clone(), json!({"message": "hello"}))];
    if b.target_dir.join("libtoolhost_filesystem.so").exists() {
        let fs_plan = dir.path().join("filesystem.toml");
        std::fs::write(
            &fs_plan,
            format!("[host]\nmodule_path = [{modules:?}]\n[[tools]]\nmodule = \"filesystem\"\n"),
        )?;
        cases.push(("read_file", fs_plan, json!({"file_path": "small.txt"})));
    }
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"file_path": "small.txt"}}});
    if let Err(e) = floor(b, &format!("{request}\n")) {
        eprintln!("bench mcp: no floor row: {e:#}");
    }
    for (tool, plan, input) in cases {
        let mut server = match Server::start(&bin, &plan, dir.path()) {
            Ok(server) => server,
            Err(e) => {
                eprintln!("bench mcp: skipping {tool}: {e:#}");
                continue;
            }
        };
        let stdio_trip = per_call(b, &mut server, tool, &input);
        server.stop();
        match stdio_trip {
            // The same small call over HTTP, beside stdio in the same run.
            Ok(median) if tool == "echo" => {
                if let Err(e) = crate::mcp_http::run(b, &bin, &plan, dir.path(), median) {
                    eprintln!("bench mcp: echo over HTTP: {e:#}");
                }
            }
            Ok(_) => {}
            Err(e) => eprintln!("bench mcp: {tool}: {e:#}"),
        }
    }
    let setup = Setup { bin, dir, modules };
    if let Err(e) = crate::mcp_reference::run(b, &setup) {
        eprintln!("bench mcp: no rows beside the reference server: {e:#}");
    }
    Ok(())
}

/// Round trip, server CPU per call, and resident memory after the calls;
/// returns the median round trip.
fn per_call(b: &mut Bench, server: &mut Server, tool: &str, input: &Value) -> anyhow::Result<Duration> {
    let params = json!({"name": tool, "arguments": input});
    // Warm up, and check the call works.
    for _ in 0..50 {
        let response = server.request("tools/call", params.clone())?;
        anyhow::ensure!(
            response["result"]["isError"] == json!(false),
            "{tool} failed: {response}"
        );
    }
    let pid = server.child.id();
    let (cpu, trips) = rounds(b, pid, || server.request("tools/call", params.clone()).map(drop))?;
    let trips = Stats::of(trips);
    let median = trips.median;
    b.row(
        GROUP,
        format!("tools/call {tool}: client round trip"),
        trips,
        None,
    );
    b.row(
        GROUP,
        format!("tools/call {tool}: server CPU per call"),
        Stats::of(cpu),
        Some(Duration::from_micros(50)),
    );
    let rss = server.rss_kib()?;
    let mib = rss as f64 / 1024.0;
    b.rows.push(Row {
        group: GROUP,
        name: format!("resident memory while serving ({tool}): {mib:.1} MiB"),
        stats: Stats::of(vec![Duration::ZERO]),
        // Reported beside the reference server's (see mcp_reference.rs).
        target: None,
        met: None,
        value: None,
    });
    Ok(median)
}

/// A `toolhost serve` process and a line-based JSON-RPC client to it.
pub(crate) struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Server {
    /// Spawns `toolhost serve` and completes the MCP handshake.
    pub(crate) fn start(bin: &Path, plan: &Path, cwd: &Path) -> anyhow::Result<Server> {
        let mut command = Command::new(bin);
        command
            .arg("--plan")
            .arg(plan)
            .arg("serve")
            .current_dir(cwd)
            .env("RUST_LOG", "warn")
            .env_remove("TOOLHOST_MODULE_PATH");
        Server::spawn(command)
    }

    /// Spawns any stdio MCP server and completes the MCP handshake.
    pub(crate) fn spawn(mut command: Command) -> anyhow::Result<Server> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            anyhow::bail!("no pipes to the server");
        };
        let mut server = Server {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            next_id: 1,
            line: String::new(),
        };
        let init = server.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "toolhost-bench", "version": "0"}
            }),
        )?;
        anyhow::ensure!(init.get("result").is_some(), "initialize failed: {init}");
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(server)
    }

    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut text = message.to_string();
        text.push('\n');
        self.stdin.write_all(text.as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Sends a request and returns its response (skipping notifications).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            self.line.clear();
            anyhow::ensure!(
                self.stdout.read_line(&mut self.line)? > 0,
                "the server closed stdout"
            );
            let message: Value = serde_json::from_str(&self.line)?;
            if message.get("id") == Some(&json!(id)) {
                return Ok(message);
            }
        }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// VmRSS in KiB.
    pub(crate) fn rss_kib(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("no VmRSS in /proc/{}/status", self.child.id()))
    }

    /// Closes stdin (the client leaves) and reaps the process.
    pub(crate) fn stop(self) {
        let Server { mut child, stdin, .. } = self;
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A process's CPU time so far, two ways: its user + system time
/// (tick-granular, counts exited threads too) and the sum of its live
/// threads' `schedstat` run times (nanoseconds).
pub(crate) fn cpu_of(pid: u32) -> anyhow::Result<CpuTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at
    // field 3; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    let process = Duration::from_secs_f64((ticks(11) + ticks(12)) as f64 / clock_ticks());
    let mut threads = Duration::ZERO;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Ok(text) = std::fs::read_to_string(task?.path().join("schedstat")) else {
            continue; // the thread ended meanwhile
        };
        let ns = text.split_whitespace().next().and_then(|n| n.parse::<u64>().ok());
        threads += Duration::from_nanos(ns.unwrap_or(0));
    }
    Ok(CpuTime { process, threads })
}

/// The floor under any stdio server on this machine, measured in the same
/// run: `cat` echoing the same request lines costs one wake-up, one read
/// and one write per round trip, and nothing else.
fn floor(b: &mut Bench, line: &str) -> anyhow::Result<()> {
    let mut cat = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let (Some(mut stdin), Some(stdout)) = (cat.stdin.take(), cat.stdout.take()) else {
        anyhow::bail!("no pipes to cat");
    };
    let mut stdout = BufReader::new(stdout);
    let mut echoed = String::new();
    let mut trip = |stdin: &mut ChildStdin| -> anyhow::Result<()> {
        stdin.write_all(line.as_bytes())?;
        stdin.flush()?;
        echoed.clear();
        anyhow::ensure!(stdout.read_line(&mut echoed)? > 0, "cat closed its stdout");
        Ok(())
    };
    for _ in 0..50 {
        trip(&mut stdin)?;
    }
    let (cpu, _) = rounds(b, cat.id(), || trip(&mut stdin))?;
    drop(stdin);
    let _ = cat.wait();
    b.row(
        GROUP,
        "floor: `cat` echoing the same lines, CPU per round trip",
        Stats::of(cpu),
        None,
    );
    Ok(())
}

/// Times `trip` in rounds: per round, the CPU process `pid` used per trip
/// and the wall time per trip. Rounds are long enough that tick-granular
/// CPU times stay meaningful.
pub(crate) fn rounds(
    b: &Bench,
    pid: u32,
    mut trip: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let calls = b.n(2000).max(1000);
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..if b.quick { 3 } else { 7 } {
        let before = cpu_of(pid)?;
        let started = Instant::now();
        for _ in 0..calls {
            trip()?;
        }
        wall.push(started.elapsed() / calls as u32);
        cpu.push(cpu_of(pid)?.since(&before) / calls as u32);
    }
    Ok((cpu, wall))
}

/// A process's CPU time as /proc tells it.
pub(crate) struct CpuTime {
    process: Duration,
    threads: Duration,
}

impl CpuTime {
    /// CPU used since `before`: the nanosecond thread sum, unless threads
    /// that exited meanwhile make the process's own count clearly larger.
    pub(crate) fn since(&self, before: &CpuTime) -> Duration {
        let process = self.process.saturating_sub(before.process);
        let threads = self.threads.saturating_sub(before.threads);
        let tick = Duration::from_secs_f64(1.0 / clock_ticks());
        if process > threads + 2 * tick {
            process
        } else {
            threads
        }
    }
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux in practice).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|t| *t > 0.0)
            .unwrap_or(100.0)
    })
}
