//! Who may use the HTTP endpoint: anyone on loopback, and a bearer token
//! whenever the server listens beyond it (or whenever a token was given).

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, AUTHORIZATION, WWW_AUTHENTICATE};
use hyper::{Response, StatusCode};

/// The response body type the HTTP transport speaks.
pub type Body = BoxBody<Bytes, Infallible>;

/// Whether a bind address is reachable only from this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Whether the request carries `Authorization: Bearer <token>`.
pub fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mut parts = value.trim().splitn(2, ' ');
    let scheme = parts.next().unwrap_or("");
    let given = parts.next().unwrap_or("").trim();
    scheme.eq_ignore_ascii_case("bearer") && same(given.as_bytes(), token.as_bytes())
}

/// Compares without stopping at the first difference, so response times do
/// not reveal how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// 401 with a bearer challenge; nothing behind it ran.
pub fn unauthorized() -> Response<Body> {
    plain(
        StatusCode::UNAUTHORIZED,
        "unauthorized: send Authorization: Bearer <token>\n",
    )
    .map(|mut r| {
        r.headers_mut().insert(
            WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer realm=\"toolhost\""),
        );
        r
    })
    .unwrap_or_else(fallback)
}

/// A plain-text response, for the server's own refusals (401, 404).
pub fn plain(status: StatusCode, text: &'static str) -> Result<Response<Body>, hyper::http::Error> {
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from_static(text.as_bytes())).boxed())
}

fn fallback(_: hyper::http::Error) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::new()).boxed());
    *r.status_mut() = StatusCode::UNAUTHORIZED;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, value.parse().expect("header"));
        h
    }

    #[test]
    fn bearer_tokens_are_checked_exactly() {
        assert!(authorized(&headers("Bearer s3cret"), "s3cret"));
        assert!(authorized(&headers("bearer s3cret"), "s3cret"));
        assert!(!authorized(&headers("Bearer s3cre"), "s3cret"));
        assert!(!authorized(&headers("Bearer s3cretx"), "s3cret"));
        assert!(!authorized(&headers("Basic s3cret"), "s3cret"));
        assert!(!authorized(&HeaderMap::new(), "s3cret"));
        assert_eq!(unauthorized().status(), StatusCode::UNAUTHORIZED);
    }

    #[test]
    fn loopback_is_recognised() {
        assert!(is_loopback(&"127.0.0.1:1".parse().expect("addr")));
        assert!(is_loopback(&"[::1]:1".parse().expect("addr")));
        assert!(!is_loopback(&"0.0.0.0:1".parse().expect("addr")));
    }
}
