//! `toolhost serve` beside the reference filesystem MCP server (npm's
//! `@modelcontextprotocol/server-filesystem`, from tests/node), in the same
//! run: spawn → initialized, and the server's CPU, round trip and resident
//! memory for a 4 KiB file read. Starts alternate between the two servers
//! so that a busy machine weighs on both alike.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::{rounds, Server, Setup};
use crate::report::{Bench, Row, Stats};

const GROUP: &str = "mcp";

/// The rows; skipped (with a message) when the filesystem module or the
/// reference server is missing.
pub fn run(b: &mut Bench, setup: &Setup) -> anyhow::Result<()> {
    anyhow::ensure!(
        b.target_dir.join("libtoolhost_filesystem.so").exists(),
        "the filesystem module is not built (cargo build --release -p toolhost-filesystem)"
    );
    let reference = crate::isolation::filesystem_server()?;
    let root = setup.dir.path().join("reference-root");
    std::fs::create_dir_all(&root)?;
    let file = root.join("four_k.txt");
    std::fs::write(&file, "x".repeat(4096))?;
    let plan = root.join("filesystem.toml");
    std::fs::write(
        &plan,
        format!(
            "[host]\nmodule_path = [{:?}]\n[[tools]]\nmodule = \"filesystem\"\n",
            setup.modules
        ),
    )?;
    let ours = || Server::start(&setup.bin, &plan, &root);
    let theirs = || {
        let mut command = Command::new(&reference);
        command.arg(&root).current_dir(&root);
        Server::spawn(command)
    };

    let (mut our_starts, mut their_starts) = (Vec::new(), Vec::new());
    for i in 0..b.n(20) + 2 {
        for (start, into) in [
            (&ours as &dyn Fn() -> anyhow::Result<Server>, &mut our_starts),
            (&theirs, &mut their_starts),
        ] {
            let started = Instant::now();
            let server = start()?;
            let took = started.elapsed();
            server.stop();
            if i >= 2 {
                into.push(took); // the first two warm the page cache
            }
        }
    }
    let ours_start = Stats::of(our_starts);
    let theirs_start = Stats::of(their_starts);
    let start_ratio = ratio(theirs_start.median, ours_start.median);

    let path = file.display().to_string();
    let our_read = read(b, ours()?, "read_file", json!({"file_path": "four_k.txt"}))?;
    let their_read = read(b, theirs()?, "read_text_file", json!({"path": path}))?;
    let cpu_ratio = ratio(their_read.cpu.median, our_read.cpu.median);

    b.row(
        GROUP,
        "reference fs server: spawn → initialized",
        theirs_start,
        None,
    );
    b.row(GROUP, "toolhost fs plan: spawn → initialized", ours_start, None);
    for (who, read) in [("reference fs server", &their_read), ("toolhost", &our_read)] {
        b.row(
            GROUP,
            format!("{who}: 4 KiB read, server CPU per call"),
            read.cpu,
            None,
        );
        b.row(
            GROUP,
            format!("{who}: 4 KiB read, client round trip"),
            read.trip,
            None,
        );
        b.rows.push(note(format!(
            "{who}: resident memory after the reads: {:.1} MiB",
            read.rss_kib as f64 / 1024.0
        )));
    }
    b.rows.push(bound(
        format!("reference / toolhost server CPU per 4 KiB read, same run: {cpu_ratio:.1}×"),
        "≥ 5×",
        cpu_ratio >= 5.0,
    ));
    b.rows.push(bound(
        format!("reference / toolhost spawn → initialized, same run: {start_ratio:.1}×"),
        "≥ 50×",
        start_ratio >= 50.0,
    ));
    Ok(())
}

/// What reading one file over and over cost a server.
struct Reads {
    cpu: Stats,
    trip: Stats,
    rss_kib: u64,
}

fn read(b: &Bench, mut server: Server, tool: &str, arguments: Value) -> anyhow::Result<Reads> {
    let params = json!({"name": tool, "arguments": arguments});
    let measured = (|| {
        for _ in 0..50 {
            let response = server.request("tools/call", params.clone())?;
            anyhow::ensure!(
                response["result"]["isError"] != json!(true) && response.get("result").is_some(),
                "{tool} failed: {response}"
            );
        }
        let pid = server.pid();
        let (cpu, trips) = rounds(b, pid, || server.request("tools/call", params.clone()).map(drop))?;
        Ok(Reads {
            cpu: Stats::of(cpu),
            trip: Stats::of(trips),
            rss_kib: server.rss_kib()?,
        })
    })();
    server.stop();
    measured
}

fn ratio(numerator: Duration, denominator: Duration) -> f64 {
    numerator.as_secs_f64() / denominator.as_secs_f64().max(1e-9)
}

/// A row that only reports a value.
fn note(name: String) -> Row {
    Row {
        group: GROUP,
        name,
        stats: Stats::of(vec![Duration::ZERO]),
        target: None,
        met: None,
        value: None,
    }
}

/// A row holding a same-run ratio to its bound.
fn bound(name: String, target: &str, met: bool) -> Row {
    Row {
        target: Some(target.into()),
        met: Some(met),
        ..note(name)
    }
}
