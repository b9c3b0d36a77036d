//! The bash module's network allowlist, through the real `toolhost` binary
//! and the real cdylib: commands reach listed names only through the
//! module's proxy (plain HTTP, CONNECT, SOCKS5), with `curl` as the client
//! and loopback origins under test names pinned with `network_resolve`;
//! names off the list, IP literals and names resolving to private addresses
//! are refused with a reason; nothing bypasses the proxy.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{module_file, Called, Env};
use serde_json::{json, Value};

fn plan(config: &str) -> String {
    module_file("toolhost_bash");
    format!("[host]\ndefault_timeout_secs = 60\n\n[[tools]]\nmodule = \"bash\"\n[tools.config]\n{config}\n")
}

/// `allowed.test` on the list, pinned to loopback.
const PINNED: &str = "network = [\"allowed.test\"]\nnetwork_resolve = { \"allowed.test\" = \"127.0.0.1\" }";

/// A plain HTTP origin on loopback answering `origin-ok <path>` and
/// counting the requests that reach it.
struct Origin {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Origin {
    fn start() -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind origin");
        let port = listener.local_addr().expect("addr").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let text = String::from_utf8_lossy(&head);
                let path = text.split_whitespace().nth(1).unwrap_or("?").to_string();
                let body = format!("origin-ok {path}\n");
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Origin { port, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// An HTTPS origin (Python's http.server behind TLS with a certificate for
/// `allowed.test` made by `openssl`), so that curl verifies the name end to
/// end through the CONNECT tunnel.
struct TlsOrigin {
    child: Child,
    port: u16,
    cert: PathBuf,
    _dir: tempfile::TempDir,
}

impl TlsOrigin {
    fn start() -> TlsOrigin {
        let dir = tempfile::tempdir().expect("tls dir");
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        let made = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=allowed.test",
            ])
            .args(["-addext", "subjectAltName=DNS:allowed.test", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("openssl runs (install openssl)");
        assert!(
            made.status.success(),
            "openssl: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        std::fs::write(dir.path().join("index.html"), "tls-origin-ok\n").expect("index");
        let script = "import http.server, ssl, sys\n\
             s = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n\
             c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[1], sys.argv[2])\n\
             s.socket = c.wrap_socket(s.socket, server_side=True)\n\
             print(s.server_address[1], flush=True)\n\
             s.serve_forever()\n";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .arg(&cert)
            .arg(&key)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let mut out = child.stdout.take().expect("stdout");
        let mut byte = [0u8; 1];
        while !line.ends_with('\n') && out.read(&mut byte).map(|n| n == 1).unwrap_or(false) {
            line.push(byte[0] as char);
        }
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TLS origin did not start: {line:?}"));
        TlsOrigin {
            child,
            port,
            cert,
            _dir: dir,
        }
    }
}

impl Drop for TlsOrigin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An origin on loopback that accepts and never answers nor closes; its
/// port.
fn silent_origin() -> u16 {
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    port
}

fn bash(env: &Env, command: &str) -> Called {
    env.call("bash", json!({ "command": command, "timeout": 60 }))
}

fn stdout(r: &Value) -> &str {
    r["output"]["stdout"].as_str().unwrap_or("")
}

fn stderr(r: &Value) -> &str {
    r["output"]["stderr"].as_str().unwrap_or("")
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[test]
fn a_listed_name_is_reached_over_http_proxy_connect_https_and_socks5() {
    let origin = Origin::start();
    let tls = TlsOrigin::start();
    let env = Env::new(&plan(PINNED));
    let p = origin.port;
    let started = Instant::now();
    let r = bash(
        &env,
        &format!(
            "curl -sS -m 20 http://allowed.test:{p}/plain; \
             curl -sS -m 20 --proxytunnel http://allowed.test:{p}/tunnel; \
             curl -sS -m 20 --proxy '' --socks5-hostname 127.0.0.1:3128 http://allowed.test:{p}/socks; \
             curl -sS -m 20 --cacert {} https://allowed.test:{}/; \
             env | grep -ci '^no_proxy=' ; exit 0",
            q(&tls.cert),
            tls.port
        ),
    );
    let out = stdout(&r.result);
    for want in [
        "origin-ok /plain",
        "origin-ok /tunnel",
        "origin-ok /socks",
        "tls-origin-ok",
    ] {
        assert!(
            out.contains(want),
            "{want} missing: {}\nstderr:\n{}",
            r.result,
            r.stderr
        );
    }
    assert!(out.trim_end().ends_with('0'), "NO_PROXY is set: {}", r.result);
    assert_eq!(origin.hits(), 3, "{}", r.result);
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn names_off_the_list_and_ip_literals_are_refused_with_a_reason() {
    let origin = Origin::start();
    let env = Env::new(&plan(PINNED));
    let p = origin.port;
    let r = bash(
        &env,
        &format!(
            "for u in http://evil.test:{p}/ http://127.0.0.1:{p}/ http://2130706433:{p}/ http://0x7f000001:{p}/ \
             'http://[::1]:{p}/'; do curl -sS -m 10 -i \"$u\" | grep -i '^x-toolhost-refused'; done; \
             curl -sS -m 10 --proxytunnel http://evil.test:{p}/ || echo connect-refused=$?; \
             curl -sS -m 10 --proxy '' --socks5-hostname 127.0.0.1:3128 http://evil.test:{p}/ || echo socks-name-refused=$?; \
             curl -sS -m 10 --proxy '' --socks5 127.0.0.1:3128 http://127.0.0.1:{p}/ || echo socks-ip-refused=$?; \
             curl -sS -m 10 http://evil.test:{p}/; exit 0"
        ),
    );
    let out = stdout(&r.result).to_ascii_lowercase();
    let refused: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("x-toolhost-refused: "))
        .map(str::trim)
        .collect();
    assert_eq!(
        refused,
        [
            "not_listed",
            "ip_literal",
            "ip_literal",
            "ip_literal",
            "ip_literal"
        ],
        "{}",
        r.result
    );
    for want in [
        "connect-refused=56",
        "socks-name-refused=97",
        "socks-ip-refused=97",
    ] {
        assert!(out.contains(want), "{want} missing: {}", r.result);
    }
    // The body says what to change.
    assert!(
        out.contains("evil.test:")
            && out.contains("not on the bash module's network list (allowed: allowed.test)"),
        "{}",
        r.result
    );
    assert!(stderr(&r.result).contains("403"), "{}", r.result);
    assert_eq!(
        origin.hits(),
        0,
        "a refused request reached the origin: {}",
        r.result
    );
    // The host's log names each refused host.
    for want in [
        "refused http evil.test",
        "refused http 127.0.0.1",
        "refused connect evil.test",
        "refused socks5 evil.test",
        "refused socks5 127.0.0.1",
    ] {
        assert!(r.stderr.contains(want), "log lacks {want:?}:\n{}", r.stderr);
    }
}

#[test]
fn a_listed_name_resolving_to_loopback_is_refused_unless_pinned() {
    let origin = Origin::start();
    let p = origin.port;
    let command = format!("curl -sS -m 10 -i http://localhost:{p}/rebind; exit 0");
    // `localhost` resolves to a loopback address, as a rebinding DNS answer
    // would.
    let env = Env::new(&plan("network = [\"localhost\"]"));
    let r = bash(&env, &command);
    let out = stdout(&r.result);
    assert!(
        out.to_ascii_lowercase()
            .contains("x-toolhost-refused: private_address"),
        "{}",
        r.result
    );
    assert!(out.contains("pin the name with network_resolve"), "{}", r.result);
    assert_eq!(origin.hits(), 0, "{}", r.result);
    assert!(r.stderr.contains("refused http localhost"), "{}", r.stderr);
    // Pinned explicitly, the same name reaches the same origin.
    env.set_plan(&plan(
        "network = [\"localhost\"]\nnetwork_resolve = { \"localhost\" = \"127.0.0.1\" }",
    ));
    let r = bash(&env, &command);
    assert!(stdout(&r.result).contains("origin-ok /rebind"), "{}", r.result);
    assert_eq!(origin.hits(), 1);
}

#[test]
fn connections_that_bypass_the_proxy_have_no_route() {
    let origin = Origin::start();
    let p = origin.port;
    let command = format!(
        "curl -sS -m 5 --noproxy '*' http://127.0.0.1:{p}/direct && echo curl-direct; \
         (exec 3<>/dev/tcp/127.0.0.1/{p}) && echo bash-direct; \
         (exec 3<>/dev/tcp/192.0.2.1/80) 2>&1 | grep -o 'Network is unreachable'; \
         python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {p}), 2); print(\"py-direct\")'; exit 0"
    );
    let env = Env::new(&plan(PINNED));
    let r = bash(&env, &command);
    let out = stdout(&r.result);
    assert!(!out.contains("direct"), "{}", r.result);
    assert!(out.contains("Network is unreachable"), "{}", r.result);
    assert_eq!(origin.hits(), 0, "reached the origin directly: {}", r.result);
    // With the host's network the same command gets through: the probe is
    // real.
    env.set_plan(&plan("network = true"));
    let r = bash(&env, &command);
    let out = stdout(&r.result);
    for want in ["curl-direct", "bash-direct", "py-direct"] {
        assert!(out.contains(want), "{want} missing: {}", r.result);
    }
}

#[test]
fn the_proxy_bounds_connections_and_request_heads() {
    let env = Env::new(&plan(PINNED));
    // 40 idle connections: the first 32 are held (waiting for a request
    // head), the rest are closed at once; a head over 16 KiB gets 431; a
    // head that never ends is cut at its deadline.
    let script = "import select, socket, time\n\
        held = [socket.create_connection(('127.0.0.1', 3128), 5) for _ in range(40)]\n\
        time.sleep(1)\n\
        readable, _, _ = select.select(held, [], [], 0)\n\
        closed = 0\n\
        for s in readable:\n\
        \x20   try:\n\
        \x20       closed += s.recv(1) == b''\n\
        \x20   except ConnectionResetError:\n\
        \x20       closed += 1\n\
        print('closed', closed)\n\
        for s in held: s.close()\n\
        time.sleep(0.5)\n\
        s = socket.create_connection(('127.0.0.1', 3128), 5)\n\
        s.sendall(b'GET http://allowed.test/ HTTP/1.1\\r\\nX: ' + b'a' * 20000)\n\
        print(s.recv(100).split(b'\\r\\n')[0].decode())\n\
        s = socket.create_connection(('127.0.0.1', 3128), 5)\n\
        start = time.monotonic()\n\
        while time.monotonic() - start < 30:\n\
        \x20   try:\n\
        \x20       s.sendall(b'G')\n\
        \x20   except OSError:\n\
        \x20       break\n\
        \x20   if select.select([s], [], [], 1)[0] and s.recv(1) == b'':\n\
        \x20       break\n\
        print('slow head closed after', round(time.monotonic() - start))\n";
    std::fs::write(env.path().join("flood.py"), script).expect("script");
    let r = bash(&env, "python3 flood.py");
    let out = stdout(&r.result);
    assert!(out.contains("closed 8"), "{}\n{}", r.result, r.stderr);
    assert!(out.contains("HTTP/1.1 431"), "{}", r.result);
    // A head sent a byte a second is cut at the 10 s deadline for the
    // whole head, not kept alive by each byte.
    let slow: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("slow head closed after "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no slow-head line: {}", r.result));
    assert!((9..=14).contains(&slow), "slow head held {slow} s: {}", r.result);
    assert!(r.stderr.contains("too_many_connections"), "{}", r.stderr);
}

#[test]
fn an_idle_tunnel_is_closed_after_network_idle_timeout_secs() {
    let port = silent_origin();
    let env = Env::new(&plan(&format!("{PINNED}\nnetwork_idle_timeout_secs = 2")));
    let script = format!(
        "import select, socket, time\n\
         s = socket.create_connection(('127.0.0.1', 3128), 5)\n\
         s.sendall(b'CONNECT allowed.test:{port} HTTP/1.1\\r\\n\\r\\n')\n\
         print(s.recv(100).split(b'\\r\\n')[0].decode())\n\
         start = time.monotonic()\n\
         while time.monotonic() - start < 20:\n\
         \x20   if select.select([s], [], [], 1)[0] and s.recv(1) == b'':\n\
         \x20       break\n\
         print('idle tunnel closed after', round(time.monotonic() - start))\n"
    );
    std::fs::write(env.path().join("idle.py"), script).expect("script");
    let r = bash(&env, "python3 idle.py");
    let out = stdout(&r.result);
    assert!(out.contains("HTTP/1.1 200"), "{}\n{}", r.result, r.stderr);
    let idle: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("idle tunnel closed after "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no idle line: {}", r.result));
    assert!(
        (1..=5).contains(&idle),
        "the idle tunnel stayed {idle} s: {}",
        r.result
    );
}

#[test]
fn check_reports_the_allowlist_layer() {
    let env = Env::new(&plan(
        "network = [\"allowed.test\", \"*.example.com:443\"]\nnetwork_resolve = { \"allowed.test\" = \"127.0.0.1\" }",
    ));
    let out = env.run(&["check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.lines().any(|l| l.contains("active")
            && l.contains("network allowlist (proxy)")
            && l.contains("allowed.test, *.example.com:443")),
        "allowlist not reported active:\n{text}"
    );
}

#[test]
fn bad_allowlists_fail_the_mount_with_a_message() {
    for (config, want) in [
        ("network = [\"10.0.0.1\"]", "is an IP address"),
        ("network = [\"a.*.test\"]", "not a host name"),
        ("network = [\"a.test:0\"]", "invalid port"),
        (
            "network = [\"a.test\"]\nnetwork_resolve = { \"b.test\" = \"127.0.0.1\" }",
            "not on the network list",
        ),
        (
            "network_resolve = { \"b.test\" = \"127.0.0.1\" }",
            "only with a network allowlist",
        ),
        ("network = [\"a.test\"]\nsandbox = \"off\"", "needs the sandbox"),
        ("network = 3", "list of host names"),
        (
            "network = [\"a.test\"]\nnetwork_idle_timeout_secs = 0",
            "network_idle_timeout_secs",
        ),
    ] {
        let env = Env::new(&plan(config));
        env.assert_refused(&["check"], want, config);
    }
}

/// The proxy's connection threads (`bash-netproxy-conn`, cut to 15 bytes
/// by the kernel) in process `pid`.
fn proxy_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "bash-netproxy-c")
                })
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tunnels_end_with_their_command() {
    let port = silent_origin();
    let env = Env::new(&plan(PINNED));
    // The host under a small fd limit (prlimit execs it: same pid), so
    // that tunnels outliving their command would soon starve it.
    let host = env.command();
    let mut cmd = Command::new("prlimit");
    cmd.arg("--nofile=128:128")
        .arg("--")
        .arg(host.get_program())
        .args(host.get_args())
        .current_dir(env.path())
        .stdin(Stdio::null());
    for (key, value) in host.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    let (client, pid) = common::serve::client(cmd, ()).await;
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    assert!(
        limits
            .lines()
            .any(|l| l.starts_with("Max open files") && l.contains(" 128 ")),
        "{limits}"
    );
    let run = |command: String| {
        let client = &client;
        async move {
            let r = common::serve::call(client, "bash", json!({ "command": command, "timeout": 60 })).await;
            common::serve::all_text(&r)
        }
    };
    // A first call sets up what every call reuses; the baseline follows it.
    run("true".into()).await;
    let before = common::procs::fd_count(pid as i32);
    let script = format!(
        "import socket\n\
         held = []\n\
         for _ in range(16):\n\
         \x20   s = socket.create_connection(('127.0.0.1', 3128), 5)\n\
         \x20   s.sendall(b'CONNECT allowed.test:{port} HTTP/1.1\\r\\n\\r\\n')\n\
         \x20   held.append(s)\n\
         print('tunnels', sum(s.recv(100).startswith(b'HTTP/1.1 200') for s in held))\n"
    );
    std::fs::write(env.path().join("tunnels.py"), script).expect("script");
    // Four commands in a row, each leaving 16 tunnels behind when it
    // exits: 128 fds and more if they stayed.
    for round in 1..=4 {
        let out = run("python3 tunnels.py".into()).await;
        assert!(out.contains("tunnels 16"), "command {round}: {out}");
    }
    // The command is gone: within a couple of seconds its tunnels are too
    // (the silent origin would hold them for the idle timeout).
    let deadline = Instant::now() + Duration::from_secs(3);
    let (mut fds, mut threads) = (usize::MAX, usize::MAX);
    while Instant::now() < deadline {
        fds = common::procs::fd_count(pid as i32);
        threads = proxy_threads(pid);
        if fds <= before && threads == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        fds <= before && threads == 0,
        "after the command ended the host holds {fds} fds (before: {before}) and {threads} proxy threads"
    );
    let out = run("echo next-call-ok".into()).await;
    assert!(out.contains("next-call-ok"), "{out}");
}

#[test]
fn sockets_of_families_the_sandbox_does_not_need_are_refused() {
    // AF_VSOCK reaches the hypervisor's transport and shares its port space
    // with the outside: no network namespace covers it.
    let probe = "python3 -c '\n\
        import socket\n\
        for name, fam, kind in ((\"vsock\", 40, socket.SOCK_STREAM), (\"unix\", socket.AF_UNIX, socket.SOCK_STREAM), (\"inet\", socket.AF_INET, socket.SOCK_STREAM)):\n\
        \x20   try:\n\
        \x20       socket.socket(fam, kind).close(); print(name, \"open\")\n\
        \x20   except OSError as e:\n\
        \x20       print(name, \"refused\", e.errno)\n'";
    // EPERM (1) is the filter's answer; a kernel without vsock would say
    // EAFNOSUPPORT instead.
    for config in ["network = false", PINNED] {
        let env = Env::new(&plan(config));
        let r = bash(&env, probe);
        let out = stdout(&r.result);
        assert!(out.contains("vsock refused 1\n"), "[{config}] {}", r.result);
        assert!(
            out.contains("unix open") && out.contains("inet open"),
            "[{config}] {}",
            r.result
        );
    }
    // With the host's network granted, the filter leaves the family alone.
    let env = Env::new(&plan("network = true"));
    let r = bash(&env, probe);
    assert!(stdout(&r.result).contains("vsock "), "{}", r.result);
    assert!(!stdout(&r.result).contains("vsock refused 1\n"), "{}", r.result);
}

#[test]
fn a_pin_holds_only_through_its_exact_entry_and_port() {
    let allowed = Origin::start();
    let other = Origin::start();
    let (a, o) = (allowed.port, other.port);
    let env = Env::new(&plan(&format!(
        "network = [\"allowed.test:{a}\", \"*.test\"]\nnetwork_resolve = {{ \"allowed.test\" = \"127.0.0.1\" }}"
    )));
    let r = bash(
        &env,
        &format!(
            "curl -sS -m 10 http://allowed.test:{a}/pinned; \
             curl -sS -m 10 -i http://allowed.test:{o}/other | grep -i '^x-toolhost-refused'; exit 0"
        ),
    );
    let out = stdout(&r.result);
    assert!(out.contains("origin-ok /pinned"), "{}", r.result);
    assert_eq!(other.hits(), 0, "the pin held on another port: {}", r.result);
    assert!(
        out.to_ascii_lowercase().contains("x-toolhost-refused:"),
        "{}",
        r.result
    );
}

/// An origin that records everything one connection sends within a second,
/// then answers.
fn recording_origin() -> (u16, Arc<std::sync::Mutex<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = s.read(&mut buf) {
                record
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n");
        }
    });
    (port, seen)
}

#[test]
fn plain_http_carries_one_request_with_the_checked_host() {
    let (port, seen) = recording_origin();
    let env = Env::new(&plan(PINNED));
    // A foreign Host header, a body, and a second request for another host
    // pipelined behind the first.
    let script = format!(
        "import socket\n\
         s = socket.create_connection(('127.0.0.1', 3128), 5)\n\
         s.sendall(b'POST http://allowed.test:{port}/one HTTP/1.1\\r\\nHost: evil.test:8002\\r\\nContent-Length: 4\\r\\n\\r\\nbodyGET http://evil.test/two HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n')\n\
         s.settimeout(10)\n\
         got = b''\n\
         while True:\n\
         \x20   b = s.recv(4096)\n\
         \x20   if not b: break\n\
         \x20   got += b\n\
         print(got.split(b'\\r\\n')[0].decode())\n\
         s = socket.create_connection(('127.0.0.1', 3128), 5)\n\
         s.sendall(b'POST http://allowed.test:{port}/chunked HTTP/1.1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n')\n\
         print('chunked:', s.recv(100).split(b'\\r\\n')[0].decode())\n"
    );
    std::fs::write(env.path().join("pipe.py"), script).expect("script");
    let r = bash(&env, "python3 pipe.py");
    assert!(
        stdout(&r.result).contains("HTTP/1.1 200"),
        "{}\n{}",
        r.result,
        r.stderr
    );
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(&format!("Host: allowed.test:{port}\r\n")), "{seen}");
    assert!(seen.contains("\r\n\r\nbody"), "{seen}");
    assert!(!seen.contains("evil.test"), "the origin saw another host: {seen}");
    // A chunked body's end is not looked for: such a request is refused.
    assert!(
        stdout(&r.result).contains("chunked: HTTP/1.1 400"),
        "{}",
        r.result
    );
    assert!(!seen.contains("/chunked"), "{seen}");
}

#[test]
fn refusals_are_logged_at_a_bounded_rate_with_their_reason() {
    let env = Env::new(&plan(PINNED));
    // User information in a CONNECT target, an empty SOCKS5 domain, then
    // 60 refusals as fast as a loop can make them.
    let script = "import socket\n\
        def ask(data, n):\n\
        \x20   s = socket.create_connection(('127.0.0.1', 3128), 5)\n\
        \x20   s.sendall(data)\n\
        \x20   got = s.recv(n)\n\
        \x20   s.close()\n\
        \x20   return got\n\
        head = ask(b'CONNECT user:pass@allowed.test:443 HTTP/1.1\\r\\n\\r\\n', 4096).decode().lower()\n\
        print([l for l in head.split('\\r\\n') if l.startswith('x-toolhost-refused')])\n\
        s = socket.create_connection(('127.0.0.1', 3128), 5)\n\
        s.sendall(b'\\x05\\x01\\x00'); s.recv(2)\n\
        s.sendall(b'\\x05\\x01\\x00\\x03\\x00\\x00\\x50'); print('socks reply', s.recv(10)[1])\n\
        for _ in range(60):\n\
        \x20   ask(b'CONNECT evil.test:443 HTTP/1.1\\r\\n\\r\\n', 4096)\n\
        print('flood done')\n";
    std::fs::write(env.path().join("refusals.py"), script).expect("script");
    let r = bash(&env, "python3 refusals.py");
    let out = stdout(&r.result);
    assert!(
        out.contains("x-toolhost-refused: bad_name"),
        "{}\n{}",
        r.result,
        r.stderr
    );
    assert!(
        out.contains("socks reply 2") && out.contains("flood done"),
        "{}",
        r.result
    );
    assert!(r.stderr.contains("refused socks5 :80 (bad_name)"), "{}", r.stderr);
    assert!(!r.stderr.contains("refused a connection"), "{}", r.stderr);
    let logged = r.stderr.matches("refused connect evil.test:443").count();
    assert!(
        (1..=30).contains(&logged),
        "{logged} refusals logged:\n{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("more refused connections not logged"),
        "no summary of the refusals left out:\n{}",
        r.stderr
    );
}
