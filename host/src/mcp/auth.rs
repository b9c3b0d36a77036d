//! Who may use the HTTP endpoint: whoever holds the bearer token, on every
//! interface, loopback included (anyone on the machine can reach a
//! loopback port, and the tools run as the server's user). With no token
//! given, one is generated and written to a file only the server's user can
//! read; `--no-auth` turns the check off, on loopback only, with a warning.
//!
//! Principals (issue #16): the server's own token identifies `[host]
//! principal` (default `local`); each `[[principals]]` token identifies its
//! principal. The router puts the [`Principal`] into the request's
//! extensions, where the MCP handler finds it; a client cannot set it.
//!
//! With `[host.oauth]`, a bearer token that no static token matches and
//! that has a JWT's shape is checked as an OAuth access token
//! ([`super::oauth`]) and identifies the principal its claims match.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, AUTHORIZATION, WWW_AUTHENTICATE};
use hyper::{Response, StatusCode};

use crate::governance::principals::same;

/// The response body type the HTTP transport speaks.
pub type Body = BoxBody<Bytes, Infallible>;

/// Why the server has no token to check requests against (it does not start).
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// `--token ""` or an empty `TOOLHOST_TOKEN`.
    #[error("the bearer token is empty: pass a non-empty --token or TOOLHOST_TOKEN")]
    Empty,
    /// `--no-auth` on an address beyond loopback.
    #[error(
        "--no-auth is refused beyond loopback: anyone who can reach the port could run the tools as \
         this user; pass --token or set TOOLHOST_TOKEN"
    )]
    OpenBeyondLoopback,
    /// The OS gave no random bytes.
    #[error("cannot generate a token: {0}")]
    Random(getrandom::Error),
    /// The generated token could not be written to its file.
    #[error("cannot write the token file {}: {source}; fix that or pass --token-file", file.display())]
    Write {
        /// The token file.
        file: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
}

/// How HTTP requests are authenticated.
#[derive(Debug, Clone)]
pub enum Access {
    /// This token (`--token`, `TOOLHOST_TOKEN`).
    Token(String),
    /// A token generated at start, written to this file (or to
    /// `<state_dir>/http-<port>.token` when `None`).
    Generated(Option<PathBuf>),
    /// Nobody is asked for anything (`--no-auth`; loopback only).
    Open,
}

impl Access {
    /// The token requests must carry (`None`: open). Generates and writes
    /// one when asked to, and says where on stderr.
    pub fn token(&self, loopback: bool, state_dir: &Path, port: u16) -> Result<Option<String>, TokenError> {
        match self {
            Access::Token(token) if token.trim().is_empty() => Err(TokenError::Empty),
            Access::Token(token) => Ok(Some(token.clone())),
            Access::Open if !loopback => Err(TokenError::OpenBeyondLoopback),
            Access::Open => {
                eprintln!(
                    "toolhost: WARNING: --no-auth: any local user or process can call these tools as this \
                     user and answer their approval prompts"
                );
                Ok(None)
            }
            Access::Generated(file) => {
                let file = file
                    .clone()
                    .unwrap_or_else(|| state_dir.join(format!("http-{port}.token")));
                let token = generate()?;
                write_private(&file, &token)?;
                eprintln!(
                    "toolhost: no token given: generated one and wrote it to {} (mode 0600); \
                     clients send it as Authorization: Bearer <token>",
                    file.display()
                );
                Ok(Some(token))
            }
        }
    }
}

/// 32 random bytes from the OS, as hex.
fn generate() -> Result<String, TokenError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(TokenError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `token` to `file`, readable by this user only: a new file
/// created 0600 beside it, then renamed over it (so an existing file with
/// looser permissions, or a symlink planted there, is replaced, never
/// written through).
fn write_private(file: &Path, token: &str) -> Result<(), TokenError> {
    crate::private_file::write_private(file, format!("{token}\n").as_bytes()).map_err(|source| {
        TokenError::Write {
            file: file.to_path_buf(),
            source,
        }
    })
}

/// Whether a bind address is reachable only from this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Whether the request carries `Authorization: Bearer <token>`.
pub fn authorized(headers: &HeaderMap, token: &str) -> bool {
    bearer(headers).is_some_and(|given| same(given.as_bytes(), token.as_bytes()))
}

/// The bearer token of a request, if it carries one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok())?;
    let mut parts = value.trim().splitn(2, ' ');
    let scheme = parts.next().unwrap_or("");
    let given = parts.next().unwrap_or("").trim();
    scheme.eq_ignore_ascii_case("bearer").then_some(given)
}

/// Who an HTTP request was identified as; set by the router in the
/// request's extensions (never taken from a header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

/// The tokens a server accepts and whom each identifies.
pub struct Gate {
    /// The server's own token (`--token`, generated): `[host] principal`.
    server: Option<String>,
    /// `[[principals]]` tokens.
    directory: crate::governance::principals::Directory,
    host_principal: String,
    /// `[host.oauth]`: access tokens from an IdP.
    oauth: Option<std::sync::Arc<super::oauth::OAuth>>,
}

/// Why a request was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token, and one is needed (401).
    Missing,
    /// A token no one is known by, or an access token that is not valid
    /// (401 `invalid_token`; the description when there is one).
    Invalid(Option<String>),
    /// A valid access token no `[[principals]]` entry matches (403).
    NoPrincipal(String),
    /// The IdP's keys cannot be had to check an access token (503).
    Unavailable(String),
}

impl Gate {
    /// A gate for the server token (`None`: `--no-auth`) and the plan's
    /// principals; principals whose `token_env` is unset are named on stderr.
    pub fn new(server: Option<String>, governance: &crate::governance::Governance) -> Gate {
        let (directory, warnings) = crate::governance::principals::Directory::resolve(&governance.principals);
        for warning in warnings {
            eprintln!("toolhost: WARNING: {warning}");
        }
        Gate {
            server,
            directory,
            host_principal: governance.host_principal.clone(),
            oauth: None,
        }
    }

    /// Also accepts OAuth access tokens (`[host.oauth]`).
    pub fn with_oauth(mut self, oauth: Option<std::sync::Arc<super::oauth::OAuth>>) -> Gate {
        self.oauth = oauth;
        self
    }

    /// The principal a request is for: a static token first (as
    /// [`Gate::identify`]), then, with `[host.oauth]`, a JWT access token.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, Refusal> {
        if let Some(principal) = self.identify(headers) {
            return Ok(principal);
        }
        let Some(given) = bearer(headers) else {
            return Err(Refusal::Missing);
        };
        let Some(oauth) = self
            .oauth
            .as_ref()
            .filter(|_| super::oauth::looks_like_jwt(given))
        else {
            return Err(Refusal::Invalid(None));
        };
        match oauth.identify(given).await {
            super::oauth::Outcome::Principal(name) => Ok(Principal(name)),
            super::oauth::Outcome::Invalid(why) => Err(Refusal::Invalid(Some(why))),
            super::oauth::Outcome::NoPrincipal(why) => Err(Refusal::NoPrincipal(why)),
            super::oauth::Outcome::Unavailable(why) => Err(Refusal::Unavailable(why)),
        }
    }

    /// The answer to a refused request: 401 with a bearer challenge (naming
    /// the protected-resource metadata with `[host.oauth]`), 403, or 503.
    pub fn refuse(&self, refused: &Refusal) -> Response<Body> {
        match refused {
            Refusal::NoPrincipal(why) => refusal_text(StatusCode::FORBIDDEN, why),
            Refusal::Unavailable(why) => {
                let mut r = refusal_text(StatusCode::SERVICE_UNAVAILABLE, why);
                r.headers_mut().insert(
                    hyper::header::RETRY_AFTER,
                    hyper::header::HeaderValue::from_static("5"),
                );
                r
            }
            Refusal::Missing | Refusal::Invalid(_) => {
                let Some(oauth) = &self.oauth else {
                    return unauthorized();
                };
                let why = match refused {
                    Refusal::Invalid(Some(why)) => Some(why.as_str()),
                    Refusal::Invalid(None) => {
                        Some("the token is neither a known token nor a valid access token")
                    }
                    _ => None,
                };
                let text = match why {
                    Some(why) => format!("unauthorized: {why}\n"),
                    None => "unauthorized: send Authorization: Bearer <access token>\n".into(),
                };
                let mut r = refusal(StatusCode::UNAUTHORIZED, text);
                match hyper::header::HeaderValue::from_str(&oauth.metadata.challenge(why)) {
                    Ok(value) => {
                        r.headers_mut().insert(WWW_AUTHENTICATE, value);
                    }
                    Err(_) => return unauthorized(),
                }
                r
            }
        }
    }

    /// The protected-resource metadata, when `path` is where it is served
    /// (a GET answered before any token is asked for).
    pub fn metadata(&self, path: &str) -> Option<Response<Body>> {
        let oauth = self.oauth.as_ref()?;
        oauth.metadata.serves(path).then(|| {
            Response::builder()
                .status(StatusCode::OK)
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .header(hyper::header::CACHE_CONTROL, "max-age=300")
                .body(Full::new(oauth.metadata.document.clone()).boxed())
                .unwrap_or_else(fallback)
        })
    }

    /// Whether requests must carry a token.
    pub fn requires_token(&self) -> bool {
        self.server.is_some()
    }

    /// The principal a request is for, or `None` (401). With `--no-auth` a
    /// request without a token is the host principal's, and a principal's
    /// token still identifies that principal; a wrong token is refused.
    pub fn identify(&self, headers: &HeaderMap) -> Option<Principal> {
        let Some(given) = bearer(headers) else {
            return self
                .server
                .is_none()
                .then(|| Principal(self.host_principal.clone()));
        };
        let server = self
            .server
            .as_deref()
            .is_some_and(|t| same(given.as_bytes(), t.as_bytes()));
        let named = self.directory.identify(given).map(str::to_string);
        match (server, named) {
            (_, Some(name)) => Some(Principal(name)),
            (true, None) => Some(Principal(self.host_principal.clone())),
            (false, None) => None,
        }
    }
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

/// A plain-text refusal (404, 413, 503) saying what to do.
pub fn refusal(status: StatusCode, text: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(text)).boxed())
        .unwrap_or_else(fallback)
}

fn refusal_text(status: StatusCode, why: &str) -> Response<Body> {
    refusal(status, format!("{why}\n"))
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
    fn a_generated_token_is_random_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("toolhost-token-{}", std::process::id()));
        let file = dir.join("t.token");
        let _ = std::fs::remove_dir_all(&dir);
        let first = Access::Generated(Some(file.clone()))
            .token(true, &dir, 1)
            .expect("token")
            .expect("some");
        assert_eq!(first.len(), 64);
        assert_eq!(std::fs::read_to_string(&file).expect("read").trim(), first);
        let mode = std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let second = Access::Generated(Some(file.clone()))
            .token(true, &dir, 1)
            .expect("token");
        assert_ne!(Some(first), second);
        assert!(matches!(
            Access::Open.token(false, &dir, 1),
            Err(TokenError::OpenBeyondLoopback)
        ));
        assert!(matches!(Access::Open.token(true, &dir, 1), Ok(None)));
        assert!(matches!(
            Access::Token(" ".into()).token(true, &dir, 1),
            Err(TokenError::Empty)
        ));
        let unwritable = Access::Generated(Some(PathBuf::from("/proc/toolhost-no/t.token")));
        assert!(matches!(
            unwritable.token(true, &dir, 1),
            Err(TokenError::Write { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn loopback_is_recognised() {
        assert!(is_loopback(&"127.0.0.1:1".parse().expect("addr")));
        assert!(is_loopback(&"[::1]:1".parse().expect("addr")));
        assert!(!is_loopback(&"0.0.0.0:1".parse().expect("addr")));
    }
}
