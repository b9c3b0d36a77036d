//! The web module through the real binary, against HTTP servers the tests
//! start on loopback (127.0.0.1, 127.0.0.2, [::1]) only.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Called, Env};
use serde_json::{json, Value};

// ---------------------------------------------------------------- servers

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Req {
    path: String,
    head: String,
}

impl Req {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

type Handler = dyn Fn(&Req, &mut TcpStream) + Send + Sync;

/// A tiny HTTP server on a loopback address; it stops when dropped, and on
/// its own after a minute at the latest.
struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Req>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(ip: &str, handler: impl Fn(&Req, &mut TcpStream) + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind((ip, 0)).expect("bind a loopback port");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (c, r, s) = (connections.clone(), requests.clone(), stop.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            while !s.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(60) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        c.fetch_add(1, Ordering::SeqCst);
                        let (handler, r) = (handler.clone(), r.clone());
                        std::thread::spawn(move || {
                            let _ = stream.set_nonblocking(false);
                            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                            if let Some(req) = read_head(&mut stream) {
                                r.lock().unwrap().push(req.clone());
                                handler(&req, &mut stream);
                            }
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Server {
            port,
            connections,
            requests,
            stop,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<Req> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn read_head(stream: &mut TcpStream) -> Option<Req> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    Some(Req { path, head })
}

fn reply(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}

/// A server answering every request with one fixed response.
fn fixed(content_type: &'static str, body: Vec<u8>) -> Server {
    Server::start("127.0.0.1", move |_, s| {
        reply(s, "200 OK", &[("Content-Type", content_type)], &body)
    })
}

// ------------------------------------------------------------------ plans

/// A plan mounting the web module with loopback admitted, plus `extra` config.
fn plan(extra: &str) -> String {
    format!(
        "[host]\ndefault_timeout_secs = 30\n\n[[tools]]\nmodule = \"web\"\n[tools.config]\nallow_private_networks = [\"127.0.0.0/8\", \"::1/128\"]\n{extra}"
    )
}

/// A plan with the module's default address policy.
fn default_plan(extra: &str) -> String {
    format!("[host]\ndefault_timeout_secs = 30\n\n[[tools]]\nmodule = \"web\"\n[tools.config]\n{extra}")
}

fn env(plan_text: &str) -> Env {
    common::module_file("toolhost_web");
    Env::new(plan_text)
}

/// Runs several calls in one process (`toolhost batch FILE`).
fn batch(env: &Env, calls: &[Value]) -> Vec<Value> {
    let file = env.path().join("calls.jsonl");
    let text: String = calls.iter().map(|c| format!("{c}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let out = env.run(&["batch", file.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(
        results.len(),
        calls.len(),
        "stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    results
}

fn fetch(url: &str) -> Value {
    json!({"name": "web_fetch", "input": {"url": url}})
}

// ------------------------------------------------------------- content

const ARTICLE: &str = r#"<!doctype html><html><head><title>Ownership &amp; Borrowing</title>
<script>document.write("tracking pixel")</script><style>p { color: red }</style></head>
<body><nav><a href="/">Home</a> <a href="/blog">Blog</a></nav>
<article><h1>Ownership</h1>
<p>Each value in Rust has an <em>owner</em>, and there can only be one owner at a time. When the owner
goes out of scope the value is dropped, which is how Rust manages memory without a garbage collector.</p>
<h2>Borrowing</h2>
<p>A reference lets code <a href="/docs/refs">borrow a value</a> without taking ownership of it, so the
value is not dropped when the reference goes away; the borrow checker makes sure references stay valid.</p>
<ul><li>one mutable reference</li><li>or any number of shared ones</li></ul>
</article><footer>footer text</footer></body></html>"#;

#[test]
fn html_becomes_markdown_with_title_and_untrusted_metadata() {
    let server = fixed("text/html; charset=utf-8", ARTICLE.as_bytes().to_vec());
    let env = env(&plan(""));
    // Through the alias, which must resolve to web_fetch.
    let called = env.call("read_web_page", json!({"url": server.url("/post")}));
    let out = called.assert_success();
    assert_eq!(out["title"], "Ownership & Borrowing");
    assert_eq!(out["format"], "markdown");
    let content = out["content"].as_str().unwrap();
    assert!(content.contains("## Borrowing"), "{content}");
    assert!(
        content.contains("_owner_") || content.contains("*owner*"),
        "{content}"
    );
    let link = format!("[borrow a value](http://127.0.0.1:{}/docs/refs)", server.port);
    assert!(content.contains(&link), "{content}");
    assert!(content.contains("one mutable reference"), "{content}");
    assert!(
        !content.contains("footer text"),
        "main-content extraction drops the footer: {content}"
    );
    assert!(
        !content.contains("tracking pixel") && !content.contains("color: red"),
        "{content}"
    );
    let meta = &called.result["metadata"];
    assert_eq!(meta["trust"], "untrusted");
    assert_eq!(meta["final_url"], server.url("/post"));
    assert_eq!(meta["status"], 200);
}

#[test]
fn spec_declares_retrieve_open_world_and_alias() {
    let env = env(&plan(""));
    let out = env.run(&["describe", "web_fetch"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("retrieve"), "{text}");
    assert!(text.contains("read_web_page"), "{text}");
    assert!(text.contains("open_world"), "{text}");
}

#[test]
fn latin1_charset_from_the_header() {
    let body = b"<html><head><title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e au caf\xe9, na\xefve fa\xe7ade.</p></body></html>".to_vec();
    let server = fixed("text/html; charset=ISO-8859-1", body);
    let env = env(&plan(""));
    let out = env
        .call("web_fetch", json!({"url": server.url("/")}))
        .assert_success()
        .clone();
    assert_eq!(out["title"], "Café");
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .contains("Crème brûlée au café, naïve façade."),
        "{out}"
    );
    assert_eq!(out["charset"], "windows-1252");
}

#[test]
fn charset_from_meta_when_the_header_has_none() {
    let body = b"<html><head><meta charset=\"windows-1252\"><title>Quotes</title></head><body><p>He said \x93hello\x94 \x96 twice.</p></body></html>".to_vec();
    let server = fixed("text/html", body);
    let env = env(&plan(""));
    let out = env
        .call("web_fetch", json!({"url": server.url("/")}))
        .assert_success()
        .clone();
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .contains("He said \u{201c}hello\u{201d} \u{2013} twice."),
        "{out}"
    );
    let sjis = b"<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\"></head><body><p>\x93\xfa\x96\x7b\x8c\xea</p></body></html>".to_vec();
    let server = fixed("text/html", sjis);
    let out = env
        .call("web_fetch", json!({"url": server.url("/")}))
        .assert_success()
        .clone();
    assert!(out["content"].as_str().unwrap().contains("日本語"), "{out}");
    assert_eq!(out["charset"], "Shift_JIS");
}

#[test]
fn json_and_text_pass_through_binary_is_refused() {
    let json_body = br#"{"name":"toolhost","tags":["a","b"]}"#.to_vec();
    let json_server = fixed("application/json", json_body.clone());
    let text_server = fixed(
        "text/plain; charset=utf-8",
        "line one\nline two <b>not html</b>\n".into(),
    );
    let png_server = fixed("image/png", vec![0x89; 2048]);
    let env = env(&plan(""));
    let results = batch(
        &env,
        &[
            fetch(&json_server.url("/data.json")),
            fetch(&text_server.url("/a.txt")),
            fetch(&png_server.url("/i.png")),
        ],
    );
    assert_eq!(
        results[0]["output"]["content"],
        String::from_utf8(json_body).unwrap()
    );
    assert_eq!(results[0]["output"]["format"], "text");
    assert_eq!(
        results[1]["output"]["content"],
        "line one\nline two <b>not html</b>\n"
    );
    assert_eq!(results[2]["status"], "error");
    assert_eq!(results[2]["error"]["code"], "unsupported_content");
    let message = results[2]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("image/png") && message.contains("2048 bytes"),
        "{message}"
    );
}

#[test]
fn http_errors_are_errors_with_the_status() {
    let server = Server::start("127.0.0.1", |_, s| {
        reply(
            s,
            "404 Not Found",
            &[("Content-Type", "text/html")],
            b"<p>no such page</p>",
        )
    });
    let env = env(&plan(""));
    let called = env.call("web_fetch", json!({"url": server.url("/missing")}));
    assert_eq!(called.status(), "error");
    assert_eq!(called.code, 1);
    assert_eq!(called.result["error"]["code"], "http_error");
    assert_eq!(called.result["error"]["details"]["status"], 404);
    called.assert_says("404");
}

// ---------------------------------------------------------------- paging

#[test]
fn paging_says_the_next_offset_and_serves_from_the_cache() {
    let text: String = (0..4500).map(|i| format!("{i:09}\n")).collect();
    assert_eq!(text.len(), 45_000);
    let server = fixed("text/plain", text.clone().into_bytes());
    let env = env(&plan(""));
    let url = server.url("/long.txt");
    let results = batch(
        &env,
        &[
            json!({"name": "web_fetch", "input": {"url": url, "limit": 20000}}),
            json!({"name": "web_fetch", "input": {"url": url, "limit": 20000, "offset": 20000}}),
            json!({"name": "web_fetch", "input": {"url": url, "limit": 20000, "offset": 40000}}),
            json!({"name": "web_fetch", "input": {"url": url, "offset": 45000}}),
        ],
    );
    let first = &results[0]["output"];
    assert_eq!(first["truncated"], true);
    assert_eq!(first["next_offset"], 20000);
    assert_eq!(first["total_chars"], 45000);
    assert!(
        first["note"].as_str().unwrap().contains("offset=20000"),
        "{first}"
    );
    assert_eq!(results[1]["output"]["next_offset"], 40000);
    let last = &results[2]["output"];
    assert_eq!(last["truncated"], false);
    assert!(last.get("next_offset").is_none());
    let joined: String = results[..3]
        .iter()
        .map(|r| r["output"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(joined, text);
    assert_eq!(results[3]["status"], "validation_error");
    assert!(results[3]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("45000 characters"));
    // One download served all four calls. They run in parallel (web_fetch
    // declares no resource keys), so any one of them may be the one that
    // downloaded; the others are served from the cache.
    assert_eq!(server.requests().len(), 1);
    let misses = results
        .iter()
        .filter(|r| r["metadata"]["cache"] == "miss")
        .count();
    let hits = results.iter().filter(|r| r["metadata"]["cache"] == "hit").count();
    assert_eq!((misses, hits), (1, 3), "{results:?}");
}

// ----------------------------------------------------------------- limits

#[test]
fn byte_cap_stops_the_download_and_says_so() {
    let server = fixed("text/plain", vec![b'a'; 4 << 20]);
    let env = env(&plan("max_response_bytes = 65536\n"));
    let called = env.call("web_fetch", json!({"url": server.url("/big"), "limit": 100}));
    let out = called.assert_success();
    assert_eq!(out["total_chars"], 65536);
    let cut = out["download_cut"].as_str().unwrap();
    assert!(cut.contains("max_response_bytes (65536 bytes"), "{cut}");
    assert!(called.result["metadata"]["download_cut"].is_string());
}

/// gzip from the system's gzip tool (the host's tests have no flate2).
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut cmd = Command::new("gzip");
    cmd.arg("-c");
    let out = common::output_with_stdin(cmd, data);
    assert!(out.status.success(), "gzip failed");
    out.stdout
}

#[test]
fn gzip_bodies_decode_and_gzip_bombs_stop_at_the_cap() {
    let page = gzip(ARTICLE.as_bytes());
    let bomb = gzip(&vec![b' '; 128 << 20]);
    assert!(
        bomb.len() < 1 << 20,
        "the bomb is small on the wire: {}",
        bomb.len()
    );
    let bomb_len = bomb.len();
    let server = Server::start("127.0.0.1", move |req, s| {
        let body = if req.path == "/bomb" { &bomb } else { &page };
        let ct = if req.path == "/bomb" {
            "text/plain"
        } else {
            "text/html"
        };
        reply(
            s,
            "200 OK",
            &[("Content-Type", ct), ("Content-Encoding", "gzip")],
            body,
        )
    });
    let env = env(&plan("max_response_bytes = 1048576\n"));
    let results = batch(
        &env,
        &[
            fetch(&server.url("/page")),
            json!({"name": "web_fetch", "input": {"url": server.url("/bomb"), "limit": 10}}),
        ],
    );
    assert_eq!(results[0]["status"], "success", "{}", results[0]);
    assert!(results[0]["output"]["content"]
        .as_str()
        .unwrap()
        .contains("## Borrowing"));
    assert!(server.requests()[0]
        .header("accept-encoding")
        .unwrap()
        .contains("gzip"));
    let bomb_out = &results[1]["output"];
    assert_eq!(results[1]["status"], "success", "{}", results[1]);
    assert_eq!(
        bomb_out["total_chars"],
        1 << 20,
        "the decompressed text stops at the cap"
    );
    let cut = bomb_out["download_cut"].as_str().unwrap();
    assert!(
        cut.contains("after decompression"),
        "{cut} (bomb was {bomb_len} bytes compressed)"
    );
}

#[test]
fn a_server_that_never_answers_times_out() {
    // Reads the request and answers nothing: holds the connection until the
    // client gives up (or its read timeout ends it).
    let server = Server::start("127.0.0.1", |_, s| {
        let _ = std::io::copy(s, &mut std::io::sink());
    });
    let env = env(&plan("timeout_secs = 1\n"));
    let started = Instant::now();
    let called = env.call("web_fetch", json!({"url": server.url("/")}));
    assert_eq!(called.status(), "timeout", "{}", called.result);
    called.assert_says("timeout_secs");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_trickling_server_times_out() {
    let server = Server::start("127.0.0.1", |_, s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n");
        for _ in 0..100 {
            if s.write_all(b"x").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let env = env(&plan("timeout_secs = 1.5\n"));
    let started = Instant::now();
    let called = env.call("web_fetch", json!({"url": server.url("/slow")}));
    assert_eq!(called.status(), "timeout", "{}", called.result);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

// ------------------------------------------------------------ address policy

#[test]
fn every_loopback_spelling_is_refused_by_default() {
    let server = fixed("text/plain", b"secret".to_vec());
    let port = server.port;
    let v6 = TcpListener::bind("[::1]:0").ok();
    let v6_port = v6
        .as_ref()
        .map(|l| l.local_addr().unwrap().port())
        .unwrap_or(port);
    let spellings = [
        (format!("http://127.0.0.1:{port}/"), "127.0.0.1"),
        (format!("http://127.1:{port}/"), "127.0.0.1"),
        (format!("http://2130706433:{port}/"), "127.0.0.1"),
        (format!("http://0x7f000001:{port}/"), "127.0.0.1"),
        (format!("http://0177.0.0.1:{port}/"), "127.0.0.1"),
        (format!("http://[::1]:{v6_port}/"), "::1"),
        (format!("http://[::ffff:127.0.0.1]:{port}/"), "127.0.0.1"),
        (format!("http://[::127.0.0.1]:{port}/"), "127.0.0.1"),
        (
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "169.254.169.254",
        ),
        (format!("http://0.0.0.0:{port}/"), "0.0.0.0"),
        (format!("http://localhost:{port}/"), "localhost resolves to"),
    ];
    let env = env(&default_plan(""));
    let calls: Vec<Value> = spellings.iter().map(|(url, _)| fetch(url)).collect();
    let results = batch(&env, &calls);
    for ((url, names), result) in spellings.iter().zip(&results) {
        assert_eq!(result["status"], "policy_denied", "{url}: {result}");
        let message = result["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{url}: {message}");
        assert!(message.contains("allow_private_networks"), "{url}: {message}");
    }
    // The normalized spelling is shown next to what was written.
    let hex = results[3]["error"]["message"].as_str().unwrap();
    assert!(
        hex.contains("0x7f000001") && hex.contains(&format!("normalizes to http://127.0.0.1:{port}/")),
        "{hex}"
    );
    assert_eq!(server.connections(), 0, "no request reached the server");
    if let Some(l) = v6 {
        l.set_nonblocking(true).unwrap();
        assert!(l.accept().is_err(), "no connection reached [::1]");
    }
}

#[test]
fn a_name_resolving_to_loopback_is_refused_and_never_connected() {
    let server = fixed("text/plain", b"secret".to_vec());
    let env = env(&default_plan(
        "[tools.config.resolve]\n\"rebind.test\" = [\"93.184.216.34\", \"127.0.0.1\"]\n",
    ));
    let called = env.call(
        "web_fetch",
        json!({"url": format!("http://rebind.test:{}/", server.port)}),
    );
    assert_eq!(called.status(), "policy_denied", "{}", called.result);
    assert!(
        called
            .message()
            .contains("rebind.test resolves to 127.0.0.1, a loopback address"),
        "{}",
        called.message()
    );
    assert_eq!(server.connections(), 0);
}

#[test]
fn redirects_are_followed_and_every_hop_is_rechecked() {
    let outside = Server::start("127.0.0.2", |_, s| {
        reply(s, "200 OK", &[("Content-Type", "text/plain")], b"outside")
    });
    let outside_port = outside.port;
    let server = Server::start("127.0.0.1", move |req, s| {
        let to = match req.path.as_str() {
            "/start" => "/next".to_string(),
            "/escape" => format!("http://127.0.0.2:{outside_port}/"),
            "/escape6" => format!("http://[::1]:{outside_port}/"),
            "/escape-name" => format!("http://sneaky.test:{outside_port}/"),
            "/scheme" => "file:///etc/passwd".to_string(),
            p if p.starts_with("/loop/") => format!("/loop/{}", p.len()),
            _ => return reply(s, "200 OK", &[("Content-Type", "text/plain")], b"arrived"),
        };
        reply(s, "302 Found", &[("Location", &to)], b"")
    });
    let env = env(
        "[host]\ndefault_timeout_secs = 30\n\n[[tools]]\nmodule = \"web\"\n[tools.config]\nallow_private_networks = [\"127.0.0.1/32\"]\nmax_redirects = 3\n[tools.config.resolve]\n\"sneaky.test\" = [\"127.0.0.2\"]\n"
    );
    let results = batch(
        &env,
        &[
            fetch(&server.url("/start")),
            fetch(&server.url("/escape")),
            fetch(&server.url("/escape6")),
            fetch(&server.url("/escape-name")),
            fetch(&server.url("/scheme")),
            fetch(&server.url("/loop/")),
        ],
    );
    assert_eq!(results[0]["status"], "success", "{}", results[0]);
    assert_eq!(results[0]["output"]["content"], "arrived");
    assert_eq!(results[0]["output"]["final_url"], server.url("/next"));
    assert_eq!(results[0]["metadata"]["final_url"], server.url("/next"));
    for (i, needle) in [
        (1, "127.0.0.2, a loopback address"),
        (2, "::1, a loopback address"),
        (3, "sneaky.test resolves to 127.0.0.2"),
    ] {
        assert_eq!(results[i]["status"], "policy_denied", "{}", results[i]);
        let message = results[i]["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
        assert!(
            message.contains("127.0.0.1/32"),
            "the message lists the allowed networks: {message}"
        );
    }
    let redirect_message = results[1]["error"]["message"].as_str().unwrap();
    assert!(redirect_message.contains("redirect from"), "{redirect_message}");
    assert_eq!(results[4]["error"]["code"], "bad_redirect", "{}", results[4]);
    assert_eq!(
        results[5]["error"]["code"], "too_many_redirects",
        "{}",
        results[5]
    );
    assert!(results[5]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("max_redirects"));
    assert_eq!(
        outside.connections(),
        0,
        "the disallowed address was never contacted"
    );
}

#[test]
fn domain_lists_match_on_label_boundaries_through_resolution() {
    let server = fixed("text/plain", b"docs".to_vec());
    let port = server.port;
    let env = env(&plan(
        "allowed_domains = [\"example.com\"]\nblocked_domains = [\"private.example.com\"]\n[tools.config.resolve]\n\"docs.example.com\" = [\"127.0.0.1\"]\n\"example.com.evil.net\" = [\"127.0.0.1\"]\n\"notexample.com\" = [\"127.0.0.1\"]\n\"a.private.example.com\" = [\"127.0.0.1\"]\n",
    ));
    let results = batch(
        &env,
        &[
            fetch(&format!("http://docs.example.com:{port}/")),
            fetch(&format!("http://example.com.evil.net:{port}/")),
            fetch(&format!("http://notexample.com:{port}/")),
            fetch(&format!("http://a.private.example.com:{port}/")),
        ],
    );
    assert_eq!(results[0]["status"], "success", "{}", results[0]);
    assert_eq!(results[0]["output"]["content"], "docs");
    for r in &results[1..3] {
        assert_eq!(r["status"], "policy_denied", "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("allowed_domains"),
            "{r}"
        );
    }
    assert_eq!(results[3]["status"], "policy_denied");
    assert!(results[3]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("blocked_domains"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "only the admitted host was contacted");
    assert_eq!(
        requests[0].header("host").unwrap(),
        format!("docs.example.com:{port}")
    );
}

// --------------------------------------------------------- robots, UA, cache

#[test]
fn robots_txt_is_obeyed_when_asked_and_cached_per_host() {
    let server = Server::start("127.0.0.1", |req, s| {
        if req.path == "/robots.txt" {
            reply(
                s,
                "200 OK",
                &[("Content-Type", "text/plain")],
                b"User-agent: *\nDisallow: /private\n",
            )
        } else {
            reply(s, "200 OK", &[("Content-Type", "text/plain")], b"public page")
        }
    });
    let env = env(&plan(
        "respect_robots_txt = true\nuser_agent = \"acme-agent/9.1\"\n",
    ));
    let results = batch(
        &env,
        &[fetch(&server.url("/private/x")), fetch(&server.url("/public"))],
    );
    assert_eq!(results[0]["status"], "policy_denied", "{}", results[0]);
    assert!(results[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("robots.txt"));
    assert_eq!(results[1]["output"]["content"], "public page");
    let requests = server.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/robots.txt", "/public"],
        "robots.txt fetched once, /private never"
    );
    assert!(requests
        .iter()
        .all(|r| r.header("user-agent").as_deref() == Some("acme-agent/9.1")));
}

// ------------------------------------------------------------------ search

fn searxng_server() -> Server {
    Server::start("127.0.0.1", |req, s| {
        if !req.path.starts_with("/search?") || !req.path.contains("format=json") {
            return reply(s, "403 Forbidden", &[], b"json format not enabled");
        }
        let body = json!({
            "query": "rust",
            "number_of_results": 3,
            "results": [
                {"title": "Rust Programming Language", "url": "https://www.rust-lang.org/", "content": "A language empowering <b>everyone</b>", "engine": "ddg"},
                {"title": "The Rust Book", "url": "https://doc.rust-lang.org/book/", "content": "Learn Rust", "engine": "ddg"},
                {"title": "Rust (video game)", "url": "https://rust.facepunch.com/", "content": "Survive", "engine": "ddg"}
            ],
            "answers": [], "suggestions": [], "unresponsive_engines": []
        });
        reply(
            s,
            "200 OK",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
    })
}

#[test]
fn web_search_speaks_searxng_json() {
    let server = searxng_server();
    let env = env(&plan(&format!(
        "[tools.config.search]\nsearxng_url = \"http://127.0.0.1:{}\"\n",
        server.port
    )));
    let called = env.call("web_search", json!({"query": "rust lang", "max_results": 2}));
    let out = called.assert_success();
    assert_eq!(out["backend"], "searxng");
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["title"], "Rust Programming Language");
    assert_eq!(results[0]["url"], "https://www.rust-lang.org/");
    assert_eq!(results[0]["snippet"], "A language empowering everyone");
    assert_eq!(called.result["metadata"]["trust"], "untrusted");
    let path = &server.requests()[0].path;
    assert!(
        path.contains("q=rust+lang") && path.contains("format=json"),
        "{path}"
    );
}

#[test]
fn a_failed_search_is_an_error_not_invented_results() {
    let server = Server::start("127.0.0.1", |_, s| {
        reply(s, "500 Internal Server Error", &[], b"engine crashed")
    });
    let env = env(&plan(&format!(
        "[tools.config.search]\nsearxng_url = \"http://127.0.0.1:{}/\"\n",
        server.port
    )));
    let called = env.call("web_search", json!({"query": "anything"}));
    assert_eq!(called.status(), "error", "{}", called.result);
    assert_eq!(called.code, 1);
    assert_eq!(called.result["error"]["code"], "search_failed");
    called.assert_says("HTTP 500");
    assert!(
        called.result["output"].get("results").is_none(),
        "{}",
        called.result
    );
    // A backend that is down is an error too.
    let port = server.port;
    drop(server);
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    env.set_plan(&plan(&format!(
        "[tools.config.search]\nsearxng_url = \"http://127.0.0.1:{dead_port}/\"\n"
    )));
    let called = env.call("web_search", json!({"query": "anything"}));
    assert_eq!(called.status(), "error", "{} (port {port})", called.result);
    assert_eq!(called.result["error"]["code"], "search_failed");
}

#[test]
fn web_search_speaks_the_brave_api_with_the_key_from_the_environment() {
    let server = Server::start("127.0.0.1", |req, s| {
        if req.header("x-subscription-token").as_deref() != Some("test-key-123") {
            return reply(s, "401 Unauthorized", &[], b"bad key");
        }
        let body = json!({"type": "search", "web": {"results": [
            {"title": "Tokio", "url": "https://tokio.rs/", "description": "An <strong>async</strong> runtime"}
        ]}});
        reply(
            s,
            "200 OK",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
    });
    let env = env(&plan(&format!(
        "[tools.config.search]\nbrave_api_key_env = \"TOOLHOST_TEST_BRAVE_KEY\"\nbrave_endpoint = \"http://127.0.0.1:{}/res/v1/web/search\"\n",
        server.port
    )));
    let out = env
        .command()
        .env("TOOLHOST_TEST_BRAVE_KEY", "test-key-123")
        .args(["call", "web_search", r#"{"query":"async rust"}"#])
        .output()
        .unwrap();
    let called = Called::from_output(out);
    let out = called.assert_success();
    assert_eq!(out["backend"], "brave");
    assert_eq!(out["results"][0]["snippet"], "An async runtime");
    assert!(server.requests()[0].path.contains("count=5"));
    // Without the variable the tool is not mounted, and check says why.
    let check = env
        .command()
        .env_remove("TOOLHOST_TEST_BRAVE_KEY")
        .arg("check")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(stderr.contains("TOOLHOST_TEST_BRAVE_KEY"), "{stderr}");
}

#[test]
fn no_backend_means_no_web_search_tool() {
    let env = env(&default_plan(""));
    let list = env.run(&["list"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{listed}");
    assert!(listed.contains("web_fetch"), "{listed}");
    assert!(!listed.contains("web_search"), "{listed}");
    let check = env.run(&["check"]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(stderr.contains("web_search is not mounted"), "{stderr}");
    assert!(
        stderr.contains("searxng_url") && stderr.contains("brave_api_key_env"),
        "{stderr}"
    );
    let called = env.call("web_search", json!({"query": "x"}));
    assert_ne!(called.status(), "success");
}
