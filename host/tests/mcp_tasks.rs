//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, protocol
//! 2026-07-28) against the real `toolhost serve`, over streamable HTTP and
//! stdio, driven by rmcp's client: a call answered with a task handle and
//! polled to its result; cancelled (and audited as cancelled); expired;
//! hidden from other principals; failed as "host restarted" when its host
//! dies; refused when its tool runs only as a task and the client cannot
//! take one; and shared by two hosts on one PostgreSQL.

mod common;

use std::time::{Duration, Instant};

use common::serve::HttpServer;
use common::{module_file, Env};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, Implementation, ProtocolVersion, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{json, Value};
use toolhost_testkit::pg::Cluster;

const SERVER: &str = "tasks-server-token";
const ALICE: &str = "tasks-alice-token";
const BOB: &str = "tasks-bob-token";

type Client = RunningService<RoleClient, ClientConfig>;

/// A plan with bash and the fixture's `echo`, two principals, an audit
/// log, and `extra` (`[host]` keys first, then tables).
fn plan(host_keys: &str, tables: &str) -> String {
    format!(
        "[host]\naudit_log = \"audit.jsonl\"\ndefault_timeout_secs = 60\ncancel_grace_ms = 1000\n{host_keys}\n\
         [[tools]]\nmodule = \"bash\"\n\n[[tools]]\nmodule = \"fixture\"\n\n\
         [policy]\ndefault = \"allow\"\n[policy.tools.bash]\ndecision = \"allow\"\n\n\
         [[principals]]\nname = \"alice\"\ntoken_env = \"TASKS_TEST_ALICE\"\n\n\
         [[principals]]\nname = \"bob\"\ntoken_env = \"TASKS_TEST_BOB\"\n\n{tables}"
    )
}

fn serve_http(env: &Env, state_url: Option<&str>) -> HttpServer {
    module_file("toolhost_bash");
    let mut cmd = env.command();
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_TOKEN", SERVER)
        .env("TASKS_TEST_ALICE", ALICE)
        .env("TASKS_TEST_BOB", BOB);
    if let Some(url) = state_url {
        cmd.env("TOOLHOST_TEST_STATE_URL", url);
    }
    HttpServer::start(cmd)
}

/// The client's configuration: 2026-07-28, with or without the tasks
/// extension in every request's capabilities.
fn config(tasks: bool) -> (ClientConfig, ClientLifecycleMode) {
    let capabilities = if tasks {
        ClientCapabilities::builder().enable_tasks().build()
    } else {
        ClientCapabilities::default()
    };
    (
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "1")),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
}

async fn connect(url: &str, token: &str, tasks: bool) -> Client {
    let (info, lifecycle) = config(tasks);
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    info.serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("server/discover over HTTP")
}

fn params(tool: &str, input: Value) -> CallToolRequestParams {
    let Value::Object(map) = input else {
        panic!("input must be an object")
    };
    CallToolRequestParams::new(tool.to_string()).with_arguments(map)
}

/// `tools/call` that must answer a task handle: its id.
async fn start_task(client: &Client, command: &str) -> String {
    match client
        .call_tool_once(params("bash", json!({ "command": command })))
        .await
        .expect("tools/call")
    {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working, "{created:?}");
            assert!(
                created.task.ttl_ms.is_some() && created.task.poll_interval_ms.is_some(),
                "{created:?}"
            );
            created.task.task_id
        }
        other => panic!("expected a task handle, got {other:?}"),
    }
}

async fn get(client: &Client, id: &str) -> Result<GetTaskResult, ServiceError> {
    client.get_task(GetTaskParams::new(id)).await
}

/// Polls `tasks/get` until the task is no longer working (a minute at most).
async fn settled(client: &Client, id: &str) -> GetTaskResult {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let got = get(client, id).await.expect("tasks/get");
        if got.task.status() != TaskStatus::Working {
            return got;
        }
        assert!(
            Instant::now() < until,
            "the task is still working after a minute: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The JSON-RPC error of a failed request.
fn rpc_error<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> rmcp::ErrorData {
    match result {
        Err(ServiceError::McpError(e)) => e,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn wire(got: &GetTaskResult) -> Value {
    serde_json::to_value(got).expect("serialize")
}

/// The audit log's call records (not the `intent` records written as a
/// call starts).
fn audit_records(env: &Env) -> Vec<Value> {
    std::fs::read_to_string(env.path().join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r.get("phase").is_none())
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("runtime")
}

#[test]
fn a_bash_call_runs_as_a_task_polled_to_its_result_and_only_its_owner_sees_it() {
    let env = Env::new(&plan("", ""));
    let server = serve_http(&env, None);
    runtime().block_on(async {
        let alice = connect(&server.url, ALICE, true).await;
        let id = start_task(&alice, "sleep 1; echo from-a-task").await;
        let done = settled(&alice, &id).await;
        let shown = wire(&done);
        assert_eq!(shown["status"], "completed", "{shown}");
        assert_eq!(shown["resultType"], "complete", "{shown}");
        assert_eq!(shown["result"]["isError"], false, "{shown}");
        assert_eq!(
            shown["result"]["structuredContent"]["stdout"], "from-a-task\n",
            "{shown}"
        );

        // Bob can neither see nor cancel it: the same answer as for a task
        // that never existed.
        let bob = connect(&server.url, BOB, true).await;
        for error in [
            rpc_error(get(&bob, &id).await),
            rpc_error(bob.cancel_task(CancelTaskParams::new(&id)).await),
        ] {
            assert_eq!(error.code.0, -32602, "{error:?}");
            assert_eq!(
                error.data.as_ref().unwrap()["code"],
                "expired_handle",
                "{error:?}"
            );
        }
        let never = rpc_error(get(&alice, "no-such-task").await);
        assert_eq!(never.message, rpc_error(get(&bob, "no-such-task").await).message);

        // server/discover advertised the extension; tasks/update (no task
        // here ever asks for input) is acknowledged for the owner only.
        let discovered = alice.peer_info().expect("discovered");
        assert!(discovered.capabilities.supports_tasks(), "{discovered:?}");
        alice
            .update_task(UpdateTaskParams::new(&id, Default::default()))
            .await
            .expect("tasks/update by the owner");
        let error = rpc_error(
            bob.update_task(UpdateTaskParams::new(&id, Default::default()))
                .await,
        );
        assert_eq!(error.code.0, -32602, "{error:?}");

        // A client without the extension, and a tool that does not allow
        // tasks: plain results.
        let plain = connect(&server.url, ALICE, false).await;
        let answer = plain
            .call_tool_once(params("bash", json!({ "command": "echo plain" })))
            .await
            .expect("tools/call");
        assert!(matches!(answer, CallToolResponse::Complete(_)), "{answer:?}");
        let echo = alice
            .call_tool_once(params("echo", json!({ "message": "hi" })))
            .await
            .expect("tools/call");
        assert!(matches!(echo, CallToolResponse::Complete(_)), "{echo:?}");

        // A 2025-11-25 session never gets a task, whatever it declared at
        // `initialize`: the extension is the stateless revision's.
        let capabilities = ClientCapabilities::builder().enable_tasks().build();
        let legacy = ClientConfig::new(capabilities, Implementation::new("tasks-test-legacy", "1"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(ALICE),
        );
        let legacy = legacy
            .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
            .await
            .expect("initialize");
        let answer = legacy
            .call_tool_once(params("bash", json!({ "command": "echo legacy" })))
            .await
            .expect("tools/call");
        assert!(matches!(answer, CallToolResponse::Complete(_)), "{answer:?}");
    });
    let records = audit_records(&env);
    let bash: Vec<_> = records.iter().filter(|r| r["tool"] == "bash").collect();
    assert_eq!(
        bash.len(),
        3,
        "the task and the plain calls each audited once: {records:?}"
    );
    assert!(bash.iter().all(|r| r["status"] == "success"), "{bash:?}");
    assert!(bash.iter().any(|r| r["principal"] == "alice"), "{bash:?}");
}

#[test]
fn a_call_awaiting_approval_asks_first_and_runs_as_a_task_once_approved() {
    let asking = plan("", "").replace(
        "decision = \"allow\"\n\n[[principals]]",
        "decision = \"ask\"\n\n[[principals]]",
    );
    assert!(asking.contains("decision = \"ask\""));
    let env = Env::new(&asking);
    let server = serve_http(&env, None);
    runtime().block_on(async {
        let capabilities: ClientCapabilities = serde_json::from_value(json!({
            "elicitation": { "form": {} },
            "extensions": { "io.modelcontextprotocol/tasks": {} }
        }))
        .expect("capabilities");
        let info = ClientConfig::new(capabilities, Implementation::new("tasks-test", "1"));
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(ALICE),
        );
        let alice = info
            .serve_with_lifecycle(transport, config(true).1)
            .await
            .expect("discover");
        let call = params("bash", json!({ "command": "echo approved" }));
        let asked = match alice.call_tool_once(call.clone()).await.expect("tools/call") {
            CallToolResponse::InputRequired(asked) => asked,
            other => panic!("expected the approval question first, got {other:?}"),
        };
        assert!(
            asked
                .input_requests
                .as_ref()
                .is_some_and(|r| r.contains_key("approval")),
            "{asked:?}"
        );
        let mut retry = call;
        retry.input_responses = Some(
            serde_json::from_value(
                json!({ "approval": { "action": "accept", "content": { "approve": true } } }),
            )
            .expect("responses"),
        );
        retry.request_state = asked.request_state.clone();
        let answer = alice.call_tool_once(retry).await.expect("tools/call");
        let CallToolResponse::Task(created) = answer else {
            panic!("the approved retry must run as a task: {answer:?}");
        };
        let done = settled(&alice, &created.task.task_id).await;
        assert_eq!(wire(&done)["result"]["structuredContent"]["stdout"], "approved\n");
    });
    drop(server);
}

#[test]
fn a_cancelled_task_stops_its_call_and_the_audit_says_cancelled() {
    let env = Env::new(&plan("", ""));
    let server = serve_http(&env, None);
    runtime().block_on(async {
        let alice = connect(&server.url, ALICE, true).await;
        let id = start_task(&alice, "echo started > started.txt; sleep 60").await;
        wait_for_file(&env, "started.txt").await;
        // bash's progress reports ("running for N s; …") become the
        // running task's status message.
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let got = get(&alice, &id).await.expect("tasks/get");
            assert_eq!(got.task.status(), TaskStatus::Working, "{got:?}");
            if got
                .task
                .task
                .status_message
                .as_deref()
                .is_some_and(|m| m.starts_with("running for"))
            {
                break;
            }
            assert!(
                Instant::now() < until,
                "no progress in the status message: {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        alice
            .cancel_task(CancelTaskParams::new(&id))
            .await
            .expect("tasks/cancel");
        let done = settled(&alice, &id).await;
        assert_eq!(done.task.status(), TaskStatus::Cancelled, "{done:?}");
    });
    let records = audit_records(&env);
    let bash: Vec<_> = records.iter().filter(|r| r["tool"] == "bash").collect();
    assert_eq!(bash.len(), 1, "{records:?}");
    assert_eq!(bash[0]["status"], "cancelled", "{:?}", bash[0]);
    drop(server);
}

async fn wait_for_file(env: &Env, name: &str) {
    let until = Instant::now() + Duration::from_secs(60);
    while !env.path().join(name).exists() {
        assert!(Instant::now() < until, "{name} never appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_task_is_gone_after_its_ttl() {
    let env = Env::new(&plan("[host.tasks]\nttl_secs = 2\n", ""));
    let server = serve_http(&env, None);
    runtime().block_on(async {
        let alice = connect(&server.url, ALICE, true).await;
        let id = start_task(&alice, "echo quick").await;
        let done = settled(&alice, &id).await;
        assert_eq!(done.task.status(), TaskStatus::Completed, "{done:?}");
        assert_eq!(done.task.task.ttl_ms, Some(2000));
        let until = Instant::now() + Duration::from_secs(30);
        let error = loop {
            match get(&alice, &id).await {
                Ok(_) => {
                    assert!(Instant::now() < until, "the task outlived its ttl by far");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => break rpc_error::<()>(Err(e)),
            }
        };
        assert_eq!(error.code.0, -32602, "{error:?}");
        assert!(error.message.contains("expired"), "{error:?}");
        assert_eq!(
            error.data.as_ref().unwrap()["code"],
            "expired_handle",
            "{error:?}"
        );
    });
    drop(server);
}

#[test]
fn a_principal_holds_at_most_its_limit_of_running_tasks() {
    let env = Env::new(&plan("[host.tasks]\nmax_per_principal = 2\n", ""));
    holds_at_most_its_limit(serve_http(&env, None));
}

#[test]
fn a_principal_holds_at_most_its_limit_of_running_tasks_in_postgres() {
    let cluster = Cluster::start();
    let env = Env::new(&plan(
        "state_url = \"${TOOLHOST_TEST_STATE_URL}\"\n[host.tasks]\nmax_per_principal = 2\n",
        "",
    ));
    holds_at_most_its_limit(serve_http(&env, Some(&cluster.url())));
}

/// With `max_per_principal = 2`: a finished task makes room, two running
/// ones fill the limit, another principal has its own.
fn holds_at_most_its_limit(server: HttpServer) {
    runtime().block_on(async {
        let alice = connect(&server.url, ALICE, true).await;
        let quick = start_task(&alice, "echo quick").await;
        settled(&alice, &quick).await;
        // The finished task makes room; two running ones fill the limit.
        let first = start_task(&alice, "sleep 60").await;
        let second = start_task(&alice, "sleep 60").await;
        let refused = rpc_error(
            alice
                .call_tool_once(params("bash", json!({ "command": "echo third" })))
                .await,
        );
        assert_eq!(refused.code.0, -32600, "{refused:?}");
        assert!(refused.message.contains("max_per_principal"), "{refused:?}");
        assert_eq!(
            refused.data.as_ref().unwrap()["code"],
            "rate_limited",
            "{refused:?}"
        );
        // The finished task was dropped for the second running one.
        assert_eq!(rpc_error(get(&alice, &quick).await).code.0, -32602);
        // Another principal has its own limit.
        let bob = connect(&server.url, BOB, true).await;
        start_task(&bob, "echo bob").await;
        for id in [first, second] {
            alice
                .cancel_task(CancelTaskParams::new(&id))
                .await
                .expect("tasks/cancel");
        }
    });
    drop(server);
}

#[test]
fn a_task_running_when_its_host_dies_is_failed_as_host_restarted() {
    // A fixed host id: the host, started again, knows the task was its own.
    let env = Env::new(&plan("host_id = \"tasks-restart-host\"\n", ""));
    let server = serve_http(&env, None);
    let rt = runtime();
    let id = rt.block_on(async {
        let alice = connect(&server.url, ALICE, true).await;
        let id = start_task(&alice, "echo started > started.txt; sleep 120").await;
        wait_for_file(&env, "started.txt").await;
        id
    });
    drop(server); // SIGKILL: nothing is recorded on the way out.
    let again = serve_http(&env, None);
    rt.block_on(async {
        let alice = connect(&again.url, ALICE, true).await;
        let got = get(&alice, &id).await.expect("tasks/get after the restart");
        let shown = wire(&got);
        assert_eq!(shown["status"], "failed", "{shown}");
        assert!(
            shown["statusMessage"]
                .as_str()
                .unwrap()
                .starts_with("host restarted"),
            "{shown}"
        );
        assert_eq!(shown["error"]["code"], -32603, "{shown}");
    });
}

#[test]
fn a_tool_that_runs_only_as_a_task_refuses_a_client_that_cannot_take_one() {
    let env = Env::new(&plan("", "[policy.tools.echo]\ntask = \"required\"\n"));
    let server = serve_http(&env, None);
    runtime().block_on(async {
        let plain = connect(&server.url, ALICE, false).await;
        let error = rpc_error(
            plain
                .call_tool_once(params("echo", json!({ "message": "hi" })))
                .await,
        );
        assert_eq!(error.code.0, -32021, "{error:?}");
        assert!(error.message.contains("runs only as a task"), "{error:?}");
        assert!(
            error.message.contains("io.modelcontextprotocol/tasks"),
            "{error:?}"
        );

        let able = connect(&server.url, ALICE, true).await;
        let answer = able
            .call_tool_once(params("echo", json!({ "message": "as a task" })))
            .await
            .expect("tools/call");
        let CallToolResponse::Task(created) = answer else {
            panic!("expected a task: {answer:?}")
        };
        let done = settled(&able, &created.task.task_id).await;
        assert_eq!(wire(&done)["result"]["structuredContent"]["message"], "as a task");
    });
    // Nothing ran for the refused call.
    let echoed = audit_records(&env)
        .into_iter()
        .filter(|r| r["tool"] == "echo")
        .count();
    assert_eq!(echoed, 1);

    // A value the key does not know is a plan error that names it.
    env.set_plan(&plan("", "[policy.tools.echo]\ntask = \"sometimes\"\n"));
    let checked = env.run(&["check"]);
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(!checked.status.success(), "{stderr}");
    assert!(
        stderr.contains("sometimes") && stderr.contains("required"),
        "{stderr}"
    );
    drop(server);
}

#[test]
fn a_task_over_stdio_is_polled_to_its_result() {
    module_file("toolhost_bash");
    let env = Env::new(&plan("", ""));
    runtime().block_on(async {
        let (transport, _) = common::serve::transport(env.command(), std::process::Stdio::null());
        let (info, lifecycle) = config(true);
        let client = info
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .expect("server/discover on stdio");
        let id = start_task(&client, "echo over-stdio").await;
        let done = settled(&client, &id).await;
        assert_eq!(
            wire(&done)["result"]["structuredContent"]["stdout"],
            "over-stdio\n"
        );
    });
}

#[test]
fn two_hosts_on_one_postgres_share_tasks_and_cancel_across_hosts() {
    let cluster = Cluster::start();
    let env = Env::new(&plan("state_url = \"${TOOLHOST_TEST_STATE_URL}\"\n", ""));
    let a = serve_http(&env, Some(&cluster.url()));
    let b = serve_http(&env, Some(&cluster.url()));
    let rt = runtime();
    rt.block_on(async {
        let on_a = connect(&a.url, ALICE, true).await;
        let on_b = connect(&b.url, ALICE, true).await;

        // Created on A, read on B to its result.
        let id = start_task(&on_a, "echo shared").await;
        let done = settled(&on_b, &id).await;
        assert_eq!(wire(&done)["result"]["structuredContent"]["stdout"], "shared\n");

        // Created on A, cancelled through B: A stops the call.
        let id = start_task(&on_a, "echo started > started.txt; sleep 60").await;
        wait_for_file(&env, "started.txt").await;
        assert_eq!(
            get(&on_b, &id).await.expect("tasks/get on B").task.status(),
            TaskStatus::Working
        );
        on_b.cancel_task(CancelTaskParams::new(&id))
            .await
            .expect("tasks/cancel on B");
        let done = settled(&on_b, &id).await;
        assert_eq!(done.task.status(), TaskStatus::Cancelled, "{done:?}");
    });
    // With state_url the audit records go to PostgreSQL.
    let cancelled = cluster.psql(
        "SELECT count(*) FROM toolhost_audit WHERE line::jsonb->>'tool' = 'bash' \
         AND line::jsonb->>'status' = 'cancelled' AND line::jsonb->>'phase' IS NULL",
    );
    assert_eq!(cancelled, "1");

    // A dies with a task running: B, seeing A's lease run out, fails it.
    let id = rt.block_on(async {
        let on_a = connect(&a.url, ALICE, true).await;
        let _ = std::fs::remove_file(env.path().join("started.txt"));
        let id = start_task(&on_a, "echo started > started.txt; sleep 120").await;
        wait_for_file(&env, "started.txt").await;
        id
    });
    drop(a);
    rt.block_on(async {
        let on_b = connect(&b.url, ALICE, true).await;
        let failed = settled(&on_b, &id).await;
        let shown = wire(&failed);
        assert_eq!(shown["status"], "failed", "{shown}");
        assert!(
            shown["statusMessage"]
                .as_str()
                .unwrap()
                .starts_with("host restarted"),
            "{shown}"
        );
    });
    drop(b);
}
