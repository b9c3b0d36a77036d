//! The operator page that `serve --http` serves at `/ui/` when the plan
//! names operators (`[host.ui] operators`): calls in flight, approvals
//! waiting (approve / deny), and a search over the audit log.
//!
//! Sign-in takes the same bearer tokens as MCP, pasted into a form; the
//! answer is a session cookie holding a random id that the server maps to
//! the principal ([`sessions`]), never the token. The cookie is
//! `HttpOnly`, `SameSite=Strict`, `Path=/ui/`, with a `Max-Age`, and always
//! `Secure`: Chromium keeps such cookies from `http://127.0.0.1` and
//! `http://localhost` (potentially trustworthy origins), and beyond
//! loopback the page belongs behind HTTPS, where a browser keeps them too. Every state-changing request
//! (approve, deny, sign-out) must carry the session's CSRF token in a form
//! field, and a present `Origin` must be the page's own. Everything is
//! rendered on the server ([`html`]); the page runs no script, and its
//! Content-Security-Policy allows none.

pub mod audit_view;
pub mod html;
pub mod sessions;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};

use crate::pipeline::approvals::{DecideError, Decided};
use crate::pipeline::Pipeline;
use sessions::{Session, Sessions};

/// The response body type the HTTP transport speaks.
pub type Body = BoxBody<Bytes, Infallible>;

/// The cookie naming a page session.
pub const COOKIE_NAME: &str = "toolhost_ui";
/// The largest form read.
const MAX_FORM: usize = 16 * 1024;
/// Sent with every answer: no script, no framing, no caching, no referrer
/// to other sites (`same-origin`, not `no-referrer`: under that a browser
/// sends `Origin: null` with the page's own forms).
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

/// The page of one server.
pub struct Ui {
    pipeline: Arc<Pipeline>,
    sessions: Sessions,
    operators: Vec<String>,
}

/// Whether a request path is the page's.
pub fn is_page(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

impl Ui {
    /// The page for `pipeline`'s plan, `None` when the plan names no
    /// operators. Approvals are offered to the page from now on.
    pub fn new(pipeline: Arc<Pipeline>) -> Option<Ui> {
        let config = &pipeline.host().plan.host.ui;
        if !config.enabled() {
            return None;
        }
        let sessions = Sessions::new(config.max_sessions, Duration::from_secs(config.session_secs));
        let operators = config.operators.clone();
        pipeline.approvals().serve_page();
        Some(Ui {
            pipeline,
            sessions,
            operators,
        })
    }

    /// The live session a request's cookie names, with its id.
    fn session(&self, headers: &HeaderMap) -> Option<(String, Session)> {
        let id = cookie(headers, COOKIE_NAME)?;
        let session = self.sessions.get(&id)?;
        Some((id, session))
    }

    /// Whether the request comes from a signed-in browser.
    pub fn signed_in(&self, headers: &HeaderMap) -> bool {
        self.session(headers).is_some()
    }

    /// Answers a request under `/ui`. `identify` maps a bearer token to
    /// its principal, exactly as MCP requests are identified (a static
    /// token, or an OAuth access token with `[host.oauth]`).
    pub async fn handle<F: std::future::Future<Output = Option<String>>>(
        &self,
        request: Request<Incoming>,
        identify: impl Fn(String) -> F,
    ) -> Response<Body> {
        let path = request.uri().path().to_string();
        let method = request.method().clone();
        if path == "/ui" {
            return redirect("/ui/", None);
        }
        let (parts, body) = request.into_parts();
        // A form is read whole (bounded) before anything is refused: an
        // unread body would make the server close the connection under
        // the browser's next request.
        let form = if method == Method::POST {
            match read_form(body).await {
                Ok(form) => form,
                Err(refused) => return refused,
            }
        } else {
            Vec::new()
        };
        if method == Method::POST && !same_origin(&parts.headers) {
            return answer(
                StatusCode::FORBIDDEN,
                html::message(
                    "Refused",
                    "a form from another site was refused (its Origin is not this page's)",
                ),
                None,
            );
        }
        let session = self.session(&parts.headers);
        match (method, path.as_str(), session) {
            (Method::GET, "/ui/", Some((_, s))) => self.dashboard(&s, parts.uri.query()),
            (Method::GET, "/ui/", None) => redirect("/ui/login", None),
            (Method::GET, "/ui/login", Some(_)) => redirect("/ui/", None),
            (Method::GET, "/ui/login", None) => answer(StatusCode::OK, html::login(None), None),
            (Method::POST, "/ui/login", _) => self.sign_in(&form, identify).await,
            (Method::POST, _, None) => answer(
                StatusCode::UNAUTHORIZED,
                html::message("Signed out", "your page session has ended: sign in again"),
                None,
            ),
            (Method::POST, path, Some((id, s))) => {
                let csrf = field(&form, "csrf").unwrap_or_default();
                if !crate::governance::principals::same(csrf.as_bytes(), s.csrf.as_bytes()) {
                    return answer(
                        StatusCode::FORBIDDEN,
                        html::message(
                            "Refused",
                            "the form's CSRF token is missing or wrong: reload the page and try again",
                        ),
                        None,
                    );
                }
                if path == "/ui/logout" {
                    self.sessions.close(&id);
                    return redirect("/ui/login", Some(self.cookie("", 0)));
                }
                match path.strip_prefix("/ui/approvals/").and_then(|n| n.parse().ok()) {
                    Some(approval) => self.decide(&s, approval, field(&form, "decision").as_deref()),
                    None => not_found(),
                }
            }
            _ => not_found(),
        }
    }

    fn dashboard(&self, session: &Session, query: Option<&str>) -> Response<Body> {
        let plan = &self.pipeline.host().plan;
        let log = plan
            .host
            .audit_log
            .as_deref()
            .filter(|_| plan.host.state_url.is_none())
            .map(std::path::Path::new);
        let found = audit_view::search(log, audit_view::Query::parse(query));
        let running = self.pipeline.in_flight();
        let waiting = self.pipeline.approvals().list();
        let page = html::dashboard(&html::Dashboard {
            principal: &session.principal,
            csrf: &session.csrf,
            running: &running,
            waiting: &waiting,
            audit: &found,
        });
        answer(StatusCode::OK, page, None)
    }

    async fn sign_in<F: std::future::Future<Output = Option<String>>>(
        &self,
        form: &[(String, String)],
        identify: impl Fn(String) -> F,
    ) -> Response<Body> {
        let token = field(form, "token").unwrap_or_default();
        let Some(principal) = identify(token.trim().to_string()).await else {
            tracing::info!("refused an operator page sign-in with an unknown token");
            return answer(
                StatusCode::UNAUTHORIZED,
                html::login(Some("that token is not known to this server")),
                None,
            );
        };
        if !self.operators.contains(&principal) {
            tracing::info!(%principal, "refused an operator page sign-in: not an operator");
            return answer(
                StatusCode::FORBIDDEN,
                html::message(
                    "Not an operator",
                    &format!(
                        "principal '{principal}' may not use the operator page: the plan's \
                         [host.ui] operators does not name it"
                    ),
                ),
                None,
            );
        }
        let Some((id, _)) = self.sessions.open(&principal) else {
            return answer(
                StatusCode::SERVICE_UNAVAILABLE,
                html::message("Unavailable", "the system gave no random bytes for a session id"),
                None,
            );
        };
        tracing::info!(%principal, "operator signed in to the page");
        let max_age = self.sessions.lifetime().as_secs();
        redirect("/ui/", Some(self.cookie(&id, max_age)))
    }

    fn decide(&self, session: &Session, approval: u64, decision: Option<&str>) -> Response<Body> {
        let approve = match decision {
            Some("approve") => true,
            Some("deny") => false,
            _ => {
                return answer(
                    StatusCode::BAD_REQUEST,
                    html::message("Refused", "the form must say decision=approve or decision=deny"),
                    None,
                )
            }
        };
        let decided = Decided {
            approve,
            by: session.principal.clone(),
        };
        match self.pipeline.approvals().decide(approval, decided) {
            Ok(waiting) => {
                tracing::info!(
                    operator = %session.principal, tool = %waiting.tool, caller = %waiting.principal,
                    call = %waiting.call_id, approve, "an operator answered an approval on the page"
                );
                redirect("/ui/", None)
            }
            Err(e @ DecideError::SamePrincipal(_)) => answer(
                StatusCode::FORBIDDEN,
                html::message("Refused", &e.to_string()),
                None,
            ),
            Err(e @ DecideError::Gone) => answer(
                StatusCode::CONFLICT,
                html::message("Too late", &e.to_string()),
                None,
            ),
        }
    }

    /// The session cookie (`max_age` 0 clears it).
    fn cookie(&self, id: &str, max_age: u64) -> String {
        format!("{COOKIE_NAME}={id}; Path=/ui/; HttpOnly; SameSite=Strict; Max-Age={max_age}; Secure")
    }
}

/// A cookie's value from the request's `Cookie` headers.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// A present `Origin` must name the host the request was sent to.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(hyper::header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(hyper::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let bare = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    !host.is_empty() && bare == Some(host)
}

/// A form body, decoded; a 413 when it is too large.
async fn read_form(body: Incoming) -> Result<Vec<(String, String)>, Response<Body>> {
    let bytes = Limited::new(body, MAX_FORM)
        .collect()
        .await
        .map_err(|e| {
            answer(
                StatusCode::PAYLOAD_TOO_LARGE,
                html::message(
                    "Refused",
                    &format!("the form could not be read (at most {MAX_FORM} bytes): {e}"),
                ),
                None,
            )
        })?
        .to_bytes();
    Ok(form_urlencoded::parse(&bytes).into_owned().collect())
}

fn field(form: &[(String, String)], name: &str) -> Option<String> {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

fn not_found() -> Response<Body> {
    answer(
        StatusCode::NOT_FOUND,
        html::message("Not found", "no such page"),
        None,
    )
}

fn redirect(to: &'static str, cookie: Option<String>) -> Response<Body> {
    let mut response = answer(StatusCode::SEE_OTHER, String::new(), cookie);
    response
        .headers_mut()
        .insert(LOCATION, HeaderValue::from_static(to));
    response
}

/// An HTML answer with the page's security headers.
fn answer(status: StatusCode, html: String, cookie: Option<String>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(html)).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert("content-security-policy", HeaderValue::from_static(CSP));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    headers.insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(value) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        headers.insert(SET_COOKIE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_and_origins_are_read_exactly() {
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_static("a=1; toolhost_ui=abc; b=2"));
        h.insert(hyper::header::HOST, HeaderValue::from_static("127.0.0.1:8"));
        assert_eq!(cookie(&h, COOKIE_NAME).as_deref(), Some("abc"));
        assert!(same_origin(&h));
        h.insert(
            hyper::header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8"),
        );
        assert!(same_origin(&h));
        h.insert(
            hyper::header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&h));
    }
}
