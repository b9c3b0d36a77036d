//! The MCP server over streamable HTTP, beside stdio in the same run: a
//! minimal HTTP/1.1 keep-alive client (std only) makes small `tools/call`s
//! one after another, as an agent does, and the median round trip is held
//! to 1.5× the stdio round trip measured just before. The same calls in a
//! 2025-11-25 session and as 2026-07-28 stateless requests (no session;
//! version, client and capabilities in each request's `_meta`, the method
//! and tool named in headers) alternate on one server, so the stateless
//! revision is compared with the session one in the same run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::report::{Bench, Row, Stats};

const GROUP: &str = "mcp";
const TOKEN: &str = "bench-token";
/// The revision of the session client.
const SESSION_VERSION: &str = "2025-11-25";
/// The stateless revision.
const STATELESS_VERSION: &str = "2026-07-28";

/// Round trips of `tools/call echo` over HTTP; adds the HTTP row and the
/// ratio to `stdio_median`.
pub fn run(b: &mut Bench, bin: &Path, plan: &Path, cwd: &Path, stdio_median: Duration) -> anyhow::Result<()> {
    let mut server = HttpServer::start(bin, plan, cwd)?;
    let result = (|| {
        let mut client = Client::connect(&server.addr, SESSION_VERSION)?;
        client.initialize()?;
        let mut stateless = Client::connect(&server.addr, STATELESS_VERSION)?;
        let call = json!({"name": "echo", "arguments": {"message": "hello"}});
        let stateless_call = json!({"name": "echo", "arguments": {"message": "hello"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "toolhost-bench", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}});
        for _ in 0..50 {
            for (client, call) in [(&mut client, &call), (&mut stateless, &stateless_call)] {
                let answer = client.request("tools/call", call.clone())?;
                anyhow::ensure!(
                    answer["result"]["isError"] == json!(false),
                    "echo failed: {answer}"
                );
            }
        }
        let (mut trips, mut stateless_trips) = (Vec::new(), Vec::new());
        for _ in 0..b.n(2000).max(200) {
            let started = Instant::now();
            client.request("tools/call", call.clone())?;
            trips.push(started.elapsed());
            let started = Instant::now();
            stateless.request("tools/call", stateless_call.clone())?;
            stateless_trips.push(started.elapsed());
        }
        let (cpu, _) = crate::mcp::rounds(b, server.child.id(), || {
            client.request("tools/call", call.clone()).map(drop)
        })?;
        let rss = std::fs::read_to_string(format!("/proc/{}/status", server.child.id()))?
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        Ok((Stats::of(trips), Stats::of(stateless_trips), Stats::of(cpu), rss))
    })();
    server.stop();
    let (stats, stateless, cpu, rss_kib) = result?;
    let revisions = stateless.median.as_secs_f64() / stats.median.as_secs_f64().max(1e-9);
    let ratio = stats.median.as_secs_f64() / stdio_median.as_secs_f64().max(1e-9);
    b.row(GROUP, "tools/call echo over HTTP: client round trip", stats, None);
    b.row(
        GROUP,
        "tools/call echo over HTTP, 2026-07-28 stateless: client round trip",
        stateless,
        None,
    );
    b.rows.push(Row {
        group: GROUP,
        name: format!("HTTP 2026-07-28 stateless / 2025-11-25 session round trip, same run: {revisions:.2}×"),
        stats: Stats::of(vec![Duration::ZERO]),
        target: Some("≤ 1.05× (no slower, within noise)".into()),
        met: Some(revisions <= 1.05),
        value: None,
    });
    b.row(GROUP, "tools/call echo over HTTP: server CPU per call", cpu, None);
    b.rows.push(Row {
        group: GROUP,
        name: format!(
            "resident memory while serving HTTP (echo): {:.1} MiB",
            rss_kib as f64 / 1024.0
        ),
        stats: Stats::of(vec![Duration::ZERO]),
        target: None,
        met: None,
        value: None,
    });
    b.rows.push(Row {
        group: GROUP,
        name: format!("HTTP / stdio small-call round trip, same run: {ratio:.2}×"),
        stats: Stats::of(vec![Duration::ZERO]),
        target: Some("≤ 1.5×".into()),
        met: Some(ratio <= 1.5),
        value: None,
    });
    Ok(())
}

struct HttpServer {
    child: Child,
    addr: String,
}

impl HttpServer {
    fn start(bin: &Path, plan: &Path, cwd: &Path) -> anyhow::Result<HttpServer> {
        let mut child = Command::new(bin)
            .arg("--plan")
            .arg(plan)
            .args(["serve", "--http", "127.0.0.1:0"])
            .current_dir(cwd)
            .env("RUST_LOG", "warn")
            .env("TOOLHOST_TOKEN", TOKEN)
            .env_remove("TOOLHOST_MODULE_PATH")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let Some(stderr) = child.stderr.take() else {
            anyhow::bail!("no pipe from the server");
        };
        let mut lines = BufReader::new(stderr).lines();
        let addr = loop {
            let Some(line) = lines.next().transpose()? else {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!("the HTTP server exited before listening");
            };
            if let Some(rest) = line.split("at http://").nth(1) {
                break rest.split('/').next().unwrap_or_default().to_string();
            }
        };
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(HttpServer { child, addr })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One keep-alive connection speaking MCP's streamable HTTP.
struct Client {
    stream: BufReader<TcpStream>,
    addr: String,
    version: &'static str,
    session: Option<String>,
    next_id: u64,
}

impl Client {
    fn connect(addr: &str, version: &'static str) -> anyhow::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Client {
            stream: BufReader::new(stream),
            addr: addr.to_string(),
            version,
            session: None,
            next_id: 1,
        })
    }

    fn initialize(&mut self) -> anyhow::Result<()> {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": self.version, "capabilities": {},
                   "clientInfo": {"name": "toolhost-bench", "version": "0"}}),
        )?;
        anyhow::ensure!(init.get("result").is_some(), "initialize failed: {init}");
        self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(())
    }

    fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let body = self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let text = String::from_utf8(body)?;
        // One JSON body (the server's fast path for plain calls), or SSE.
        if let Ok(message) = serde_json::from_str::<Value>(&text) {
            if message.get("id") == Some(&json!(id)) {
                return Ok(message);
            }
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id") == Some(&json!(id)))
            .ok_or_else(|| anyhow::anyhow!("no answer to request {id} in: {text}"))
    }

    /// POSTs one message; returns the response body (read whole).
    fn post(&mut self, message: &Value) -> anyhow::Result<Vec<u8>> {
        let body = message.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: {}\r\nContent-Length: {}\r\n",
            self.addr,
            self.version,
            body.len()
        );
        if self.version == STATELESS_VERSION {
            // The stateless revision names the method and tool in headers
            // that must match the body.
            if let Some(method) = message["method"].as_str() {
                head.push_str(&format!("Mcp-Method: {method}\r\n"));
            }
            if let Some(name) = message["params"]["name"].as_str() {
                head.push_str(&format!("Mcp-Name: {name}\r\n"));
            }
        }
        if let Some(session) = &self.session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        head.push_str("\r\n");
        head.push_str(&body);
        self.stream.get_mut().write_all(head.as_bytes())?;

        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        let status = line.split_whitespace().nth(1).unwrap_or_default().to_string();
        anyhow::ensure!(status.starts_with('2'), "HTTP {status}");
        let (mut length, mut chunked) = (None, false);
        loop {
            line.clear();
            self.stream.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "mcp-session-id" => self.session = Some(value.to_string()),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.stream.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim(), 16)?;
                let mut chunk = vec![0; size + 2];
                self.stream.read_exact(&mut chunk)?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            self.stream.read_exact(&mut body)?;
        }
        Ok(body)
    }
}
