//! `[[toolsets]]`: one host serving different surfaces. A toolset selected
//! by `serve --toolset`, by an HTTP client's `?toolset=`, or by a grant
//! limits what is listed and callable; a tool outside it answers
//! `not_in_toolset` (or, for a grant, `grant_missing`), and an unknown
//! toolset is a clear error.

mod common;

use common::serve::{call, toolhost_meta, HttpServer};
use common::Env;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::json;

const TOKEN: &str = "toolsets-test-token";

fn plan(extra: &str) -> String {
    format!(
        "[[tools]]\nmodule = \"filesystem\"\n\n[[tools]]\nmodule = \"bash\"\n\n\
         [[toolsets]]\nname = \"read\"\ntools = [\"read_file\", \"grep\", \"gl*\"]\n\n\
         [[toolsets]]\nname = \"shell\"\ntools = [\"bash*\"]\n{extra}"
    )
}

fn sorted(tools: &[rmcp::model::Tool]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

#[test]
fn serve_toolset_limits_the_list_and_the_calls() {
    let env = Env::new(&plan(""));
    std::fs::write(env.path().join("a.txt"), "hello\n").expect("write");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut cmd = env.command();
        cmd.args(["serve", "--toolset", "read"]);
        let (transport, _) = rmcp::transport::TokioChildProcess::builder(tokio::process::Command::from(cmd))
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn toolhost serve --toolset read");
        let client = ().serve(transport).await.expect("initialize");
        assert_eq!(
            sorted(&client.list_all_tools().await.expect("list")),
            ["glob", "grep", "read_file"]
        );
        let read = call(&client, "read_file", json!({"file_path": "a.txt"})).await;
        assert_eq!(read.is_error, Some(false), "{read:?}");
        let refused = call(&client, "bash", json!({"command": "echo hi"})).await;
        assert_eq!(
            toolhost_meta(&refused)["code"],
            json!("not_in_toolset"),
            "{refused:?}"
        );
        let alias = call(&client, "Bash", json!({"command": "echo hi"})).await;
        assert_eq!(
            toolhost_meta(&alias)["code"],
            json!("not_in_toolset"),
            "{alias:?}"
        );
        client.cancel().await.expect("close");
    });
    let out = env.run(&["serve", "--toolset", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("toolset 'nope'") && stderr.contains("read, shell"),
        "{stderr}"
    );
}

#[test]
fn an_http_client_selects_a_toolset_in_its_url() {
    let env = Env::new(&plan(""));
    let mut cmd = env.command();
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_TOKEN", TOKEN);
    let server = HttpServer::start(cmd);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let connect = |url: String| async move {
            let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN);
            ().serve(StreamableHttpClientTransport::from_config(config))
                .await
                .expect("MCP handshake over HTTP")
        };
        let shell = connect(format!("{}?toolset=shell", server.url)).await;
        assert_eq!(
            sorted(&shell.list_all_tools().await.expect("list")),
            ["bash", "bash_kill", "bash_output"]
        );
        let refused = call(&shell, "read_file", json!({"file_path": "plan.toml"})).await;
        assert_eq!(
            toolhost_meta(&refused)["code"],
            json!("not_in_toolset"),
            "{refused:?}"
        );
        let ran = call(&shell, "bash", json!({"command": "echo hi"})).await;
        assert_eq!(ran.is_error, Some(false), "{ran:?}");
        // Another client of the same server, without a toolset, sees all.
        let all = connect(server.url.clone()).await;
        assert!(all.list_all_tools().await.expect("list").len() > 6);
        let unknown = connect(format!("{}?toolset=nope", server.url)).await;
        let err = unknown
            .list_all_tools()
            .await
            .expect_err("an unknown toolset is an error");
        assert!(err.to_string().contains("toolset 'nope'"), "{err}");
        for c in [shell, all, unknown] {
            let _ = c.cancel().await;
        }
    });
}

#[test]
fn a_grant_can_name_a_toolset() {
    let env = Env::new(&plan("\n[[grants]]\nprincipal = \"local\"\ntoolset = \"read\"\n"));
    std::fs::write(env.path().join("a.txt"), "hello\n").expect("write");
    let (results, _) = env.batch(
        &[
            json!({"name": "read_file", "input": {"file_path": "a.txt"}}),
            json!({"name": "bash", "input": {"command": "true"}}),
        ],
        &[],
    );
    assert_eq!(results[0]["status"], json!("success"), "{}", results[0]);
    assert_eq!(
        results[1]["error"]["code"],
        json!("grant_missing"),
        "{}",
        results[1]
    );
    let bad = Env::new(&plan("\n[[grants]]\nprincipal = \"local\"\ntoolset = \"nope\"\n"));
    let out = bad.run(&["check"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("names toolset 'nope'"), "{said}");
}
