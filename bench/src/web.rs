//! Web benchmarks: fetching a 4 KiB HTML page from a loopback server through
//! the pipeline, in process (cache off, so every call downloads, extracts and
//! converts), and the same call served from the module's cache.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

use crate::report::Bench;

/// A 4 KiB article-like HTML page.
fn page() -> Vec<u8> {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Bench page</title></head><body>\
         <nav><a href=\"/\">Home</a></nav><article><h1>Benchmark article</h1>",
    );
    let mut i = 0;
    let closing = "</article></body></html>";
    while html.len() + closing.len() < 4096 {
        html.push_str(&format!(
            "<p>Paragraph {i} of the benchmark article, with <em>some emphasis</em> and \
             <a href=\"/p/{i}\">a link</a> so the converter has work to do.</p>"
        ));
        i += 1;
    }
    html.push_str(closing);
    html.into_bytes()
}

/// Serves `body` on 127.0.0.1 with keep-alive until `stop` is set.
fn serve(body: Vec<u8>, stop: Arc<AtomicBool>) -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let body = Arc::new(body);
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((stream, _)) => {
                    let (body, stop) = (body.clone(), stop.clone());
                    std::thread::spawn(move || connection(stream, &body, &stop));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    });
    Ok(port)
}

fn connection(mut stream: TcpStream, body: &[u8], stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut response = head.into_bytes();
    response.extend_from_slice(body);
    let mut buf = [0u8; 8192];
    let mut pending = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                pending.extend_from_slice(&buf[..n]);
                while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                    pending.drain(..end + 4);
                    if stream.write_all(&response).is_err() {
                        return;
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// Runs the web rows.
pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    if !b.target_dir.join("libtoolhost_web.so").exists() {
        anyhow::bail!("libtoolhost_web.so is not built in {}", b.target_dir.display());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let port = serve(page(), stop.clone())?;
    let dir = tempfile::tempdir()?;
    let modules = b.target_dir.display().to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let url = format!("http://127.0.0.1:{port}/article");
    for (cache_ttl, name, limit) in [
        (
            0,
            "web_fetch 4 KiB page, loopback, pipeline (cache off)",
            Some(Duration::from_millis(2)),
        ),
        (300, "web_fetch 4 KiB page, served from the module's cache", None),
    ] {
        let file = dir.path().join(format!("web{cache_ttl}.toml"));
        std::fs::write(
            &file,
            format!(
                "[host]\nmodule_path = [{modules:?}]\n[[tools]]\nmodule = \"web\"\n[tools.config]\n\
                 allow_private_networks = [\"127.0.0.1/32\"]\ncache_ttl_secs = {cache_ttl}\n"
            ),
        )?;
        let host = Arc::new(Host::open(Plan::load(&file)?)?);
        let pipeline = Pipeline::new(host.clone(), CancelToken::new());
        let mut failure = None;
        let stats = b.time(20, b.n(500), || {
            let result = runtime.block_on(pipeline.call(Call {
                name: "web_fetch".into(),
                input: json!({ "url": url }),
                ..Call::default()
            }));
            if !result.success && failure.is_none() {
                failure = Some(result.message().to_string());
            }
        });
        host.shutdown();
        if let Some(message) = failure {
            stop.store(true, Ordering::SeqCst);
            anyhow::bail!("web_fetch failed during the bench: {message}");
        }
        b.row("web", name, stats, limit);
    }
    stop.store(true, Ordering::SeqCst);
    Ok(())
}
