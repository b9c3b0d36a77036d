//! `serve --http` as an OAuth resource server, against a real OpenID
//! provider (npm `oidc-provider`, `tests/node/oidc_provider.mjs`) on
//! loopback minting real JWT access tokens: a valid token calls as the
//! principal its claims match (grants apply, the audit names it), static
//! tokens still work, a token no principal matches is refused 403;
//! expired, wrong-audience and wrong-issuer tokens are refused 401 with
//! `error="invalid_token"`; a rotated key is fetched on its unknown `kid`
//! and the withdrawn one refused; the RFC 9728 metadata and the 401
//! challenge point at each other; an unreachable issuer answers 503.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::serve::{toolhost_meta, HttpServer};
use common::Env;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::{json, Value};

const CAROL: &str = "carol-static-token-0123456789";

/// One `oidc_provider.mjs`, killed when dropped.
struct Idp {
    child: Child,
    port: u16,
}

impl Idp {
    /// Starts the provider on `port` (0: any) signing with the key in
    /// `key` (made when missing). Fails the test when node or the provider
    /// cannot start.
    fn start(key: &Path, port: u16) -> Idp {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/node/oidc_provider.mjs");
        assert!(
            script.with_file_name("node_modules/oidc-provider").is_dir(),
            "oidc-provider is not installed: run `npm ci --prefix tests/node --no-audit --no-fund`"
        );
        let mut child = Command::new("node")
            .arg(&script)
            .args(["--port", &port.to_string(), "--key"])
            .arg(key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node must be installed to run the OpenID provider");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("PORT ") {
                    let _ = tx.send(port.trim().parse::<u16>().expect("port"));
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(port) => Idp { child, port },
            Err(_) => {
                let _ = child.kill();
                let out = child.wait_with_output().expect("provider output");
                panic!(
                    "the OpenID provider did not start: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A client_credentials access token (a JWT) of `client` for `resource`.
    async fn token(&self, client: &str, resource: &str) -> String {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "client_credentials")
            .append_pair("client_id", client)
            .append_pair("client_secret", "secret")
            .append_pair("resource", resource)
            .append_pair("scope", "tools")
            .finish();
        let answer = reqwest::Client::new()
            .post(format!("{}/token", self.issuer()))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("token request")
            .text()
            .await
            .expect("token answer");
        let answer: Value = serde_json::from_str(&answer).expect("token answer is JSON");
        let token = answer["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token: {answer}"));
        assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
        token.to_string()
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free now (the host is started on it so the plan can name its URL
/// as the audience).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn plan(issuer: &str, port: u16) -> String {
    format!(
        r#"[host]
audit_log = "audit.jsonl"
default_timeout_secs = 30

[host.oauth]
issuer = "{issuer}"
audience = "http://127.0.0.1:{port}/mcp"
leeway_secs = 0
jwks_min_refetch_secs = 1

[host.ui]
operators = ["alice"]

[[tools]]
module = "fixture"

[[principals]]
name = "alice"
claims = {{ sub = "alice-app", groups = ["eng"] }}

[[principals]]
name = "ops"
claims = {{ groups = "ops" }}

[[principals]]
name = "carol"
token_env = "OAUTH_TEST_CAROL"

[[grants]]
name = "alice-echo"
principal = "alice"
tools = ["echo"]

[[grants]]
name = "carol-echo"
principal = "carol"
tools = ["echo"]
"#
    )
}

/// `toolhost serve --http 127.0.0.1:PORT` for `issuer`; the server, its
/// MCP URL (the audience), and the Env holding plan and audit log.
fn serve(issuer: &str) -> (HttpServer, String, Env) {
    let port = free_port();
    let env = Env::new(&plan(issuer, port));
    let mut cmd = env.command();
    cmd.args(["serve", "--http", &format!("127.0.0.1:{port}")])
        .env("TOOLHOST_TOKEN", "server-token-oauth-tests")
        .env("OAUTH_TEST_CAROL", CAROL);
    let server = HttpServer::start(cmd);
    let url = format!("http://127.0.0.1:{port}/mcp");
    (server, url, env)
}

async fn connect(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    common::serve::http_client(url, token).await
}

async fn echo(client: &RunningService<RoleClient, ()>) -> CallToolResult {
    let params = CallToolRequestParams::new("echo")
        .with_arguments(json!({"message": "hi"}).as_object().cloned().expect("object"));
    client.call_tool(params).await.expect("tools/call")
}

/// A raw `initialize` POST with `token` (if any): status, WWW-Authenticate,
/// body.
async fn initialize(url: &str, token: Option<&str>) -> (u16, String, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "oauth-test", "version": "1"}}})
            .to_string(),
        );
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = request.send().await.expect("POST");
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().expect("ascii").to_string())
        .unwrap_or_default();
    (status, challenge, response.text().await.unwrap_or_default())
}

/// Asserts a 401 `invalid_token` whose description says `why`.
async fn assert_invalid(url: &str, token: &str, why: &str) {
    let (status, challenge, body) = initialize(url, Some(token)).await;
    assert_eq!(status, 401, "{body}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(challenge.contains(why), "'{why}' in {challenge}");
    assert!(body.contains(why), "'{why}' in {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_calls_as_the_principal_its_claims_match() {
    let keys = tempfile::tempdir().expect("temp dir");
    let idp = Idp::start(&keys.path().join("k1.json"), 0);
    let (server, url, env) = serve(&idp.issuer());

    let alice = connect(&url, &idp.token("alice-app", &url).await).await;
    let ok = echo(&alice).await;
    assert_eq!(ok.is_error, Some(false), "{}", toolhost_meta(&ok));

    // bob-app's groups match `ops`, which has no grant: grants apply by name.
    let ops = connect(&url, &idp.token("bob-app", &url).await).await;
    let refused = echo(&ops).await;
    let info = toolhost_meta(&refused);
    assert_eq!(info["code"], "grant_missing", "{info}");
    assert_eq!(info["details"]["principal"], "ops", "{info}");

    // Static tokens keep working beside OAuth.
    let carol = connect(&url, CAROL).await;
    let ok = echo(&carol).await;
    assert_eq!(ok.is_error, Some(false), "{}", toolhost_meta(&ok));

    // Valid, but no principal's claims match: 403, never a fall-through.
    let nobody = idp.token("nobody-app", &url).await;
    let (status, _, body) = initialize(&url, Some(&nobody)).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("no [[principals]] entry's claims match"), "{body}");

    // The operator page signs in with the same tokens: an operator's access
    // token from the IdP opens a page session; one that maps to no
    // principal does not.
    let page = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let login = format!("{}/ui/login", url.trim_end_matches("/mcp"));
    let sign_in = |token: String| {
        page.post(&login)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
    };
    let signed = sign_in(idp.token("alice-app", &url).await).await.expect("POST");
    assert_eq!(signed.status().as_u16(), 303, "{:?}", signed.headers());
    let cookie = signed
        .headers()
        .get("set-cookie")
        .map(|c| c.to_str().expect("ascii").to_string())
        .unwrap_or_default();
    assert!(cookie.starts_with("toolhost_ui="), "{cookie}");
    let refused = sign_in(nobody.clone()).await.expect("POST");
    assert_eq!(refused.status().as_u16(), 401);

    for client in [alice, ops, carol] {
        client.cancel().await.expect("close");
    }
    drop(server);
    let log = std::fs::read_to_string(env.path().join("audit.jsonl")).expect("audit log");
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let by = |principal: &str| {
        records
            .iter()
            .find(|r| r["principal"] == principal && r["tool"] == "echo")
            .unwrap_or_else(|| panic!("no echo record for {principal}: {log}"))
            .clone()
    };
    assert_eq!(by("alice")["status"], "success");
    assert_eq!(by("alice")["grant"], "alice-echo");
    assert_eq!(by("carol")["status"], "success");
    assert_eq!(by("ops")["error_code"], "grant_missing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_and_the_401_challenge_point_at_each_other() {
    let keys = tempfile::tempdir().expect("temp dir");
    let idp = Idp::start(&keys.path().join("k1.json"), 0);
    let (_server, url, env) = serve(&idp.issuer());
    let origin = url.trim_end_matches("/mcp");

    // `check` says OAuth is on, for which issuer and audience.
    let checked = String::from_utf8_lossy(&env.run(&["check"]).stdout).into_owned();
    let said = format!(
        "oauth: serve --http accepts access tokens: issuer {}",
        idp.issuer()
    );
    assert!(checked.contains(&said), "{checked}");
    assert!(checked.contains(&format!("audience {url}")), "{checked}");

    let (status, challenge, _) = initialize(&url, None).await;
    assert_eq!(status, 401);
    let metadata_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(challenge, format!("Bearer resource_metadata=\"{metadata_url}\""));

    for at in [
        metadata_url.clone(),
        format!("{origin}/.well-known/oauth-protected-resource"),
    ] {
        let response = reqwest::get(&at).await.expect("GET metadata");
        assert_eq!(response.status().as_u16(), 200, "{at}");
        let doc: Value = serde_json::from_str(&response.text().await.expect("body")).expect("JSON");
        assert_eq!(doc["resource"], url.as_str(), "{doc}");
        assert_eq!(doc["authorization_servers"], json!([idp.issuer()]), "{doc}");
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{doc}");
    }

    // Only GET is answered without a token.
    let posted = reqwest::Client::new()
        .post(&metadata_url)
        .send()
        .await
        .expect("POST");
    assert_eq!(posted.status().as_u16(), 401);

    // A token that is no JWT of the issuer: invalid_token, and the pointer.
    let (status, challenge, _) = initialize(&url, Some("not.a.jwt")).await;
    assert_eq!(status, 401);
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{challenge}"
    );
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{challenge}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_wrong_audience_and_wrong_issuer_tokens_are_refused() {
    let keys = tempfile::tempdir().expect("temp dir");
    let key = keys.path().join("k1.json");
    let idp = Idp::start(&key, 0);
    // Same key, another issuer: the signature verifies, `iss` does not.
    let other = Idp::start(&key, 0);
    let (_server, url, _env) = serve(&idp.issuer());

    let brief = idp.token("brief-app", &url).await;
    let elsewhere = idp.token("alice-app", "http://127.0.0.1:9/other").await;
    let foreign = other.token("alice-app", &url).await;
    assert_invalid(&url, &elsewhere, "aud does not contain").await;
    assert_invalid(&url, &foreign, "iss is not").await;
    // The brief token lives 1 s (exp is whole seconds, leeway 0): 2.5 s on
    // it is certainly past.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_invalid(&url, &brief, "expired").await;
    // The same client's fresh token is fine: it was the expiry.
    let fresh = idp.token("alice-app", &url).await;
    assert_eq!(initialize(&url, Some(&fresh)).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_and_the_withdrawn_one_refused() {
    let keys = tempfile::tempdir().expect("temp dir");
    let idp = Idp::start(&keys.path().join("k1.json"), 0);
    let port = idp.port;
    let (_server, url, _env) = serve(&idp.issuer());
    let old = idp.token("alice-app", &url).await;
    assert_eq!(initialize(&url, Some(&old)).await.0, 200);

    // The provider comes back on the same issuer with only a new key.
    drop(idp);
    let idp = Idp::start(&keys.path().join("k2.json"), port);
    // Past the refetch floor (1 s) since the host's last fetch.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let new = idp.token("alice-app", &url).await;
    let (status, _, body) = initialize(&url, Some(&new)).await;
    assert_eq!(status, 200, "the new key is fetched on its unknown kid: {body}");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_invalid(&url, &old, "does not publish").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_issuer_answers_503() {
    let keys = tempfile::tempdir().expect("temp dir");
    let idp = Idp::start(&keys.path().join("k1.json"), 0);
    // The host trusts an issuer on a port nobody listens on.
    let (_server, url, _env) = serve(&format!("http://127.0.0.1:{}", free_port()));
    let token = idp.token("alice-app", &url).await;
    let (status, _, body) = initialize(&url, Some(&token)).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("cannot reach"), "{body}");
}
