//! Large results by reference: a 5 MiB `bash` output, over `[host]
//! max_output_bytes`, is answered with its head and tail and a
//! `resource_link`; the whole is read back, byte for byte, through MCP
//! `resources/read` (in ranges) and through the `read_output` tool; a
//! handle past its time answers `expired_handle`, and another principal's
//! handle is not readable.

mod common;

use common::serve::{call, client, toolhost_meta};
use common::Env;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{json, Value};

/// 655,360 lines of 8 bytes: exactly 5 MiB, every line different.
const COMMAND: &str = "seq -f '%07g' 1 655360";

fn expected() -> String {
    (1..=655_360).map(|n| format!("{n:07}\n")).collect()
}

fn plan(extra_host: &str) -> String {
    format!(
        "[host]\n{extra_host}\n\n[[tools]]\nmodule = \"bash\"\n[tools.config]\nmax_output_bytes = 8000000\n"
    )
}

/// The `toolhost://output/` link of a result.
fn link_of(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|c| c.as_resource_link().map(|link| link.uri.clone()))
        .unwrap_or_else(|| panic!("no resource_link in {:?}", result.content))
}

fn stdout_of(whole: &str) -> String {
    let output: Value = serde_json::from_str(whole).expect("the kept output is the tool's JSON output");
    output["stdout"].as_str().expect("stdout").to_string()
}

#[test]
fn a_five_mib_output_is_read_back_whole_through_its_reference() {
    let env = Env::new(&plan(""));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let (client, _) = client(env.command(), ()).await;
        let result = call(&client, "bash", json!({"command": COMMAND})).await;
        assert_eq!(result.is_error, Some(false), "{:?}", toolhost_meta(&result));
        assert!(
            toolhost_meta(&result)["truncated"].is_object(),
            "the answer itself is cut"
        );
        let uri = link_of(&result);
        assert!(uri.starts_with("toolhost://output/"), "{uri}");
        let answer = serde_json::to_string(&result).expect("serializes");
        assert!(
            answer.len() < 300_000,
            "the answer is bounded: {} bytes",
            answer.len()
        );

        // resources/read, range by range.
        let mut whole = String::new();
        let mut offset = 0;
        let mut reads = 0;
        loop {
            let read = client
                .read_resource(ReadResourceRequestParams::new(format!("{uri}?offset={offset}")))
                .await
                .expect("resources/read");
            let ResourceContents::TextResourceContents { text, meta, .. } = &read.contents[0] else {
                panic!("text contents expected: {read:?}");
            };
            whole.push_str(text);
            reads += 1;
            let info = &meta.as_ref().expect("_meta").0["toolhost"];
            match info["next_offset"].as_u64() {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert!(reads > 1, "read in ranges");
        assert_eq!(
            stdout_of(&whole),
            expected(),
            "resources/read gives back every byte"
        );

        // read_output, the same way.
        let mut again = String::new();
        let mut offset = json!(0);
        while !offset.is_null() {
            let chunk = call(&client, "read_output", json!({"uri": uri, "offset": offset})).await;
            let chunk = chunk.structured_content.expect("structured");
            again.push_str(chunk["text"].as_str().expect("text"));
            offset = chunk["next_offset"].clone();
        }
        assert_eq!(again, whole);
        client.cancel().await.expect("close");
    });
}

#[test]
fn a_handle_expires_and_belongs_to_its_principal() {
    let env = Env::new(&format!(
        "{}\n[[principals]]\nname = \"other\"\ntoken_env = \"OTHER_TOKEN\"\n",
        plan("output_store_secs = 1")
    ));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (uri, kept) = runtime.block_on(async {
        let (client, _) = client(env.command(), ()).await;
        let result = call(&client, "bash", json!({"command": "seq 1 100000"})).await;
        let uri = link_of(&result);
        let read = call(&client, "read_output", json!({"uri": uri})).await;
        assert_eq!(read.is_error, Some(false), "{read:?}");
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let gone = call(&client, "read_output", json!({"uri": uri})).await;
        assert_eq!(toolhost_meta(&gone)["code"], json!("expired_handle"), "{gone:?}");
        let err = client
            .read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .expect_err("resources/read of an expired handle fails");
        assert!(err.to_string().contains("no longer kept"), "{err}");
        let fresh = call(&client, "bash", json!({"command": "seq 1 100000"})).await;
        client.cancel().await.expect("close");
        (link_of(&fresh), uri)
    });
    assert_ne!(uri, kept);
    // Another principal cannot read it (the CLI runs `--as other`).
    let called = env.call_with(&["--as", "other", "read_output", &json!({"uri": uri}).to_string()]);
    assert_eq!(
        called.result["error"]["code"],
        json!("expired_handle"),
        "{:?}",
        called.result
    );
}
