//! The HTTP side of the proxy: `CONNECT host:port` tunnels and plain
//! `http://` requests in absolute form. The request head is parsed with
//! `httparse` (bounded: [`MAX_HEAD_BYTES`], [`MAX_HEADERS`]); a plain
//! request is forwarded in origin form with `Host` set to the checked
//! authority and `Connection: close`, followed by exactly its
//! `Content-Length` bytes of body (chunked request bodies are refused):
//! nothing the client sends after its one request reaches the origin, so
//! one proxy connection never carries a second request (which could name
//! another host) past the check.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::BorrowedFd;
use std::time::Instant;

use super::deadline::Deadline;
use super::{Proxy, Refusal, HEAD_TIMEOUT, MAX_HEADERS, MAX_HEAD_BYTES};

/// Headers meant for the proxy (or this hop), not the origin, and `host`,
/// which the proxy sets to the authority it checked.
const HOP_HEADERS: [&str; 6] = [
    "connection",
    "proxy-connection",
    "proxy-authorization",
    "keep-alive",
    "te",
    "host",
];

/// Serves one HTTP proxy connection.
pub fn serve(proxy: &Proxy, mut client: TcpStream, stop: BorrowedFd<'_>) {
    let (buf, head_len) = match read_head(&mut client) {
        Ok(h) => h,
        Err(Some((status, why))) => {
            respond(
                &mut client,
                status,
                "bad_request",
                &format!("bad proxy request: {why}\n"),
            );
            return;
        }
        Err(None) => return,
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    if !matches!(req.parse(&buf[..head_len]), Ok(httparse::Status::Complete(_))) {
        return; // read_head parsed it already
    }
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return;
    };
    let rest = &buf[head_len..];
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_authority(target, None) else {
            bad(&mut client, "CONNECT needs host:port");
            return;
        };
        let mut upstream = match proxy.open("connect", host, port) {
            Ok(u) => u,
            Err(r) => return refuse(proxy, &mut client, host, port, &r),
        };
        if client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .is_err()
        {
            return;
        }
        super::relay::pump(&mut client, &mut upstream, rest, proxy.idle(), stop, None);
        return;
    }
    let Some(after) = strip_prefix_ci(target, "http://") else {
        bad(
            &mut client,
            "only CONNECT and absolute http:// URLs are proxied (use HTTPS_PROXY for https)",
        );
        return;
    };
    let split = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, path) = after.split_at(split);
    if authority.contains('@') {
        bad(&mut client, "user information in the URL is not proxied");
        return;
    }
    let Some((host, port)) = split_authority(authority, Some(80)) else {
        bad(&mut client, "the URL has no valid host and port");
        return;
    };
    let path = match path {
        "" => "/",
        p if p.starts_with('/') => p,
        p => return bad(&mut client, &format!("unsupported request target `{p}`")),
    };
    let body_len = match body_length(req.headers) {
        Ok(n) => n,
        Err(why) => return bad(&mut client, why),
    };
    let mut head = format!("{method} {path} HTTP/1.{version}\r\n").into_bytes();
    head.extend_from_slice(b"Host: ");
    head.extend_from_slice(host.as_bytes());
    if port != 80 {
        head.extend_from_slice(format!(":{port}").as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    for h in req.headers.iter() {
        if HOP_HEADERS.iter().any(|n| h.name.eq_ignore_ascii_case(n)) {
            continue;
        }
        head.extend_from_slice(h.name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(h.value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    let sent = rest.len().min(usize::try_from(body_len).unwrap_or(usize::MAX));
    head.extend_from_slice(&rest[..sent]);
    let budget = body_len - sent as u64;
    let mut upstream = match proxy.open("http", host, port) {
        Ok(u) => u,
        Err(r) => return refuse(proxy, &mut client, host, port, &r),
    };
    super::relay::pump(
        &mut client,
        &mut upstream,
        &head,
        proxy.idle(),
        stop,
        Some(budget),
    );
}

/// The request body's length: its `Content-Length`, or 0 without one.
/// A chunked (or otherwise transfer-encoded) body is refused: its end
/// cannot be found without decoding it, and bytes past it could be a
/// second request.
fn body_length(headers: &[httparse::Header<'_>]) -> Result<u64, &'static str> {
    let mut length = None;
    for h in headers {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err("transfer-encoded (chunked) request bodies are not proxied; send Content-Length");
        }
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: u64 = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or("invalid Content-Length")?;
            if length.is_some_and(|l| l != n) {
                return Err("conflicting Content-Length headers");
            }
            length = Some(n);
        }
    }
    Ok(length.unwrap_or(0))
}

/// A status to answer and why, or `None` when the client went away or was
/// too slow (nothing to answer).
type HeadError = Option<(u16, String)>;

/// Reads until a complete head: the bytes and the head's length.
fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, usize), HeadError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut reader = Deadline::new(client, Instant::now() + HEAD_TIMEOUT);
    loop {
        let n = reader.read(&mut chunk).map_err(|_| None)?;
        if n == 0 {
            return Err(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => return Ok((buf, len)),
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD_BYTES => {}
            Ok(httparse::Status::Partial) => {
                return Err(Some((
                    431,
                    format!("the request head exceeds {MAX_HEAD_BYTES} bytes"),
                )))
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(Some((431, format!("more than {MAX_HEADERS} header fields"))))
            }
            Err(e) => return Err(Some((400, e.to_string()))),
        }
    }
}

/// `host:port` (or `host` with `default`); `[v6]` forms keep their
/// brackets, so that the allowlist sees (and refuses) an address.
fn split_authority(authority: &str, default: Option<u16>) -> Option<(&str, u16)> {
    if authority.is_empty() {
        return None;
    }
    let bracket_end = authority.rfind(']');
    match authority.rfind(':') {
        Some(i) if bracket_end.is_none_or(|b| i > b) => {
            let port: u16 = authority[i + 1..].parse().ok().filter(|p| *p != 0)?;
            Some((&authority[..i], port))
        }
        _ => Some((authority, default?)),
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

fn bad(client: &mut TcpStream, why: &str) {
    respond(client, 400, "bad_request", &format!("bad proxy request: {why}\n"));
}

fn refuse(proxy: &Proxy, client: &mut TcpStream, host: &str, port: u16, refusal: &Refusal) {
    let status = if refusal.is_policy() { 403 } else { 502 };
    let body = format!(
        "toolhost bash network allowlist: refused {host}:{port} ({}): {}\n",
        refusal.code(),
        refusal.explain(host, port, proxy.list())
    );
    respond(client, status, refusal.code(), &body);
}

fn respond(client: &mut TcpStream, status: u16, code: &str, body: &str) {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    let msg = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Toolhost-Refused: {code}\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(msg.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::split_authority;

    #[test]
    fn authorities() {
        assert_eq!(split_authority("a.test:8080", None), Some(("a.test", 8080)));
        assert_eq!(split_authority("a.test", Some(80)), Some(("a.test", 80)));
        assert_eq!(split_authority("a.test", None), None);
        assert_eq!(split_authority("[::1]:443", None), Some(("[::1]", 443)));
        assert_eq!(split_authority("[::1]", Some(80)), Some(("[::1]", 80)));
        assert_eq!(split_authority("a.test:0", None), None);
        assert_eq!(split_authority("a.test:x", None), None);
    }
}
