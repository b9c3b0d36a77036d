//! Structured output of the first-party tools: read_file, list_directory,
//! glob, grep (filesystem), bash, bash_output (bash) and web_fetch (web)
//! declare an `outputSchema` in `tools/list` that is a valid JSON Schema
//! 2020-12 document, and every call answers `structuredContent` beside its
//! text that a strict 2020-12 validator (formats asserted) accepts.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;

use common::serve::{call, client};
use common::Env;
use serde_json::{json, Value};

/// A one-page HTTP server on loopback, for web_fetch.
fn page_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten().take(4) {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<html><head><title>Structured</title></head><body><main><h1>Hello</h1><p>A page.</p></main></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn every_first_party_structured_result_is_valid_under_its_declared_schema() {
    let env = Env::new(
        "[[tools]]\nmodule = \"filesystem\"\n\n[[tools]]\nmodule = \"bash\"\n\n\
         [[tools]]\nmodule = \"web\"\n[tools.config]\nallow_private_networks = [\"127.0.0.0/8\"]\n",
    );
    std::fs::write(env.path().join("a.txt"), "hello\nworld\n").expect("write");
    let url = page_server();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let (client, _) = client(env.command(), ()).await;
        let listed = client.list_all_tools().await.expect("tools/list");
        let schema_of = |name: &str| -> Value {
            let tool = listed
                .iter()
                .find(|t| t.name == name)
                .unwrap_or_else(|| panic!("{name} listed"));
            let schema = tool
                .output_schema
                .as_ref()
                .unwrap_or_else(|| panic!("{name} declares no outputSchema"));
            Value::Object((**schema).clone())
        };
        let started = call(
            &client,
            "bash",
            json!({"command": "echo bg", "run_in_background": true}),
        )
        .await;
        let job = started
            .structured_content
            .clone()
            .expect("a background start is structured");
        let cases = [
            ("read_file", json!({"file_path": "a.txt"})),
            ("list_directory", json!({"path": "."})),
            ("glob", json!({"pattern": "*.txt"})),
            ("grep", json!({"pattern": "hello", "output_mode": "content"})),
            ("bash", json!({"command": "echo hi; echo err >&2"})),
            ("bash_output", json!({"id": job["id"]})),
            ("web_fetch", json!({"url": url})),
        ];
        for (name, input) in cases {
            let schema = schema_of(name);
            assert!(
                jsonschema::draft202012::meta::is_valid(&schema),
                "{name}'s outputSchema is not a valid 2020-12 schema: {schema}"
            );
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .build(&schema)
                .unwrap_or_else(|e| panic!("{name}'s outputSchema does not compile: {e}"));
            let result = call(&client, name, input).await;
            assert_eq!(result.is_error, Some(false), "{name}: {result:?}");
            let data = result
                .structured_content
                .clone()
                .unwrap_or_else(|| panic!("{name} answered no structuredContent: {result:?}"));
            let errors: Vec<String> = validator.iter_errors(&data).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{name}: {data} breaks its schema: {errors:?}");
            let text: String = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            assert!(!text.is_empty(), "{name} answers text beside the data");
        }
        let start_schema = schema_of("bash");
        assert!(jsonschema::draft202012::is_valid(&start_schema, &job), "{job}");
        let read = call(&client, "read_file", json!({"file_path": "a.txt"})).await;
        assert_eq!(
            read.structured_content,
            Some(json!({"file_path": "a.txt", "lines": 2, "bytes": read_len(&read)}))
        );
        client.cancel().await.expect("close");
    });
}

fn read_len(result: &rmcp::model::CallToolResult) -> u64 {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.len() as u64))
        .sum()
}
