//! The fleet backend (issue #17) against a real PostgreSQL started by the
//! test (`toolhost_testkit::pg`): the audit sink directly, and two real
//! `toolhost serve --http` hosts sharing idempotency through it, with the
//! database stopped and restarted mid-run.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::serve::HttpServer;
use common::{module_file, Env};
use rmcp::model::{CallToolRequestParams, JsonObject, MetaObject, RequestMetaObject};
use rmcp::service::RunningService;
use rmcp::RoleClient;
use serde_json::{json, Value};
use toolhost::pipeline::audit_sink::{AuditSink, AuditSinkError};
use toolhost::state::postgres::open_audit_sink;
use toolhost_testkit::pg::Cluster;

#[test]
fn the_postgres_audit_sink_keeps_one_chain_per_host_and_reports_outages() {
    let mut cluster = Cluster::start();
    let url = cluster.url();
    // Two hosts opening at once apply each migration once.
    let opens: Vec<_> = ["host-a", "host-b"]
        .into_iter()
        .map(|id| {
            let url = url.clone();
            std::thread::spawn(move || open_audit_sink(&url, id).expect("open the sink"))
        })
        .collect();
    let mut sinks = opens.into_iter().map(|t| t.join().unwrap());
    let (a, b) = (sinks.next().unwrap(), sinks.next().unwrap());
    assert_eq!(
        cluster
            .psql("SELECT string_agg(version || ':' || name, ',' ORDER BY version) FROM toolhost_migrations"),
        toolhost::state::postgres::migrations::MIGRATIONS
            .iter()
            .map(|(version, name, _)| format!("{version}:{name}"))
            .collect::<Vec<_>>()
            .join(",")
    );

    assert_eq!(a.last().unwrap(), None);
    a.append(r#"{"n":1}"#).unwrap();
    a.append(r#"{"n":2}"#).unwrap();
    b.append(r#"{"b":1}"#).unwrap();
    assert_eq!(a.last().unwrap().as_deref(), Some(r#"{"n":2}"#));
    assert_eq!(b.last().unwrap().as_deref(), Some(r#"{"b":1}"#));
    // A restarted host continues its own chain.
    let a_again = open_audit_sink(&url, "host-a").unwrap();
    assert_eq!(a_again.last().unwrap().as_deref(), Some(r#"{"n":2}"#));
    assert_eq!(
        cluster.psql("SELECT string_agg(host_id || '/' || seq || '/' || line, ' ' ORDER BY host_id, seq) FROM toolhost_audit"),
        r#"host-a/1/{"n":1} host-a/2/{"n":2} host-b/1/{"b":1}"#
    );

    // A second process under host-a's id: the first one's next append is
    // refused instead of forking the chain.
    a_again.append(r#"{"n":"other process"}"#).unwrap();
    match a.append(r#"{"n":"fork"}"#) {
        Err(AuditSinkError::Unavailable(m)) => assert!(m.contains("host_id"), "{m}"),
        other => panic!("a forking append was accepted: {other:?}"),
    }
    assert_eq!(a.last().unwrap().as_deref(), Some(r#"{"n":"other process"}"#));

    // PostgreSQL gone: Unavailable, not success; back: the chain goes on.
    cluster.stop();
    assert!(matches!(
        a.append(r#"{"n":3}"#),
        Err(AuditSinkError::Unavailable(_))
    ));
    assert!(matches!(a.last(), Err(AuditSinkError::Unavailable(_))));
    cluster.resume();
    a.append(r#"{"n":3}"#).unwrap();
    assert_eq!(a.last().unwrap().as_deref(), Some(r#"{"n":3}"#));
    assert_eq!(
        cluster.psql("SELECT max(seq) FROM toolhost_audit WHERE host_id = 'host-a'"),
        "4"
    );

    // A server that is not there at all.
    let nowhere = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    match open_audit_sink(&format!("postgres://postgres@127.0.0.1:{nowhere}/postgres"), "x") {
        Err(AuditSinkError::Unavailable(m)) => assert!(m.contains("127.0.0.1"), "{m}"),
        Err(e) => panic!("expected Unavailable, got {e}"),
        Ok(_) => panic!("a sink opened against a closed port"),
    }
}

const TOKEN: &str = "fleet-test-token";

fn start_host(env: &Env, state_url: &str) -> HttpServer {
    let mut cmd = env.command();
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_TOKEN", TOKEN)
        .env("TOOLHOST_TEST_STATE_URL", state_url);
    HttpServer::start(cmd)
}

type Client = RunningService<RoleClient, ()>;

async fn connect(url: &str) -> Client {
    common::serve::http_client(url, TOKEN).await
}

/// How a keyed call ended.
#[derive(Debug, Clone)]
struct Outcome {
    ok: bool,
    code: Option<String>,
    retryable: bool,
    stdout: String,
}

/// `bash` with `_meta.idempotency_key = key`: appends the key to
/// `effects.txt` (the side effect counted) and prints it.
async fn keyed(client: &Client, key: &str) -> Outcome {
    let mut args = JsonObject::new();
    args.insert(
        "command".into(),
        json!(format!("echo {key} >> effects.txt; echo ran {key}")),
    );
    let mut meta = MetaObject::new();
    meta.0.insert("idempotency_key".into(), json!(key));
    let mut params = CallToolRequestParams::new("bash").with_arguments(args);
    params.meta = Some(RequestMetaObject(meta));
    // A call that never answers fails the test (its callers print the
    // hosts' logs) instead of hanging it.
    let Ok(answered) = tokio::time::timeout(Duration::from_secs(90), client.call_tool(params)).await else {
        return Outcome {
            ok: false,
            code: Some("no answer within 90 s".into()),
            retryable: false,
            stdout: String::new(),
        };
    };
    let result =
        answered.unwrap_or_else(|e| panic!("tools/call failed at the protocol level (did a host die?): {e}"));
    let info = result
        .meta
        .as_ref()
        .and_then(|m| m.0.get("toolhost"))
        .cloned()
        .unwrap_or(Value::Null);
    Outcome {
        ok: result.is_error != Some(true),
        code: info["code"].as_str().map(str::to_string),
        retryable: info["retryable"] == json!(true),
        stdout: result
            .structured_content
            .as_ref()
            .and_then(|s| s["stdout"].as_str())
            .unwrap_or("")
            .to_string(),
    }
}

fn effects(env: &Env) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in std::fs::read_to_string(env.path().join("effects.txt"))
        .unwrap_or_default()
        .lines()
    {
        *counts.entry(line.to_string()).or_insert(0) += 1;
    }
    counts
}

#[test]
fn two_hosts_share_idempotency_through_postgres_across_an_outage() {
    module_file("toolhost_bash");
    let mut cluster = Cluster::start();
    let env = Env::new(
        "[host]\nstate_url = \"${TOOLHOST_TEST_STATE_URL}\"\ndefault_timeout_secs = 30\n\n\
         [[tools]]\nmodule = \"bash\"\n[policy.tools.bash]\ndecision = \"allow\"\n",
    );
    let hosts = [start_host(&env, &cluster.url()), start_host(&env, &cluster.url())];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let clients: Arc<Vec<Client>> =
        Arc::new(rt.block_on(async { vec![connect(&hosts[0].url).await, connect(&hosts[1].url).await] }));
    let logs = || hosts.iter().map(|h| h.log()).collect::<Vec<_>>().join("\n---\n");

    // 200 keyed calls, each sent to one host and at the same time retried on
    // the other: every call answers, every side effect happens once.
    let started = Instant::now();
    let outcomes = rt.block_on(async {
        let limit = Arc::new(tokio::sync::Semaphore::new(8));
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..200usize {
            let (clients, limit) = (clients.clone(), limit.clone());
            tasks.spawn(async move {
                let _permit = limit.acquire_owned().await;
                let key = format!("k{i}");
                let (first, retry) =
                    tokio::join!(keyed(&clients[i % 2], &key), keyed(&clients[(i + 1) % 2], &key));
                (key, first, retry)
            });
        }
        let mut all = Vec::new();
        while let Some(done) = tasks.join_next().await {
            all.push(done.expect("call task"));
        }
        all
    });
    for (key, first, retry) in &outcomes {
        for o in [first, retry] {
            assert!(o.ok, "{key}: {o:?}\n{}", logs());
            assert_eq!(o.stdout.trim(), format!("ran {key}"), "{key}: {o:?}");
        }
    }
    let counts = effects(&env);
    for i in 0..200 {
        assert_eq!(
            counts.get(&format!("k{i}")),
            Some(&1),
            "k{i} ran {:?} times",
            counts.get(&format!("k{i}"))
        );
    }
    eprintln!("400 calls over two hosts in {:?}", started.elapsed());
    assert_eq!(
        cluster.psql("SELECT count(*) FROM toolhost_migrations"),
        toolhost::state::postgres::migrations::MIGRATIONS
            .len()
            .to_string()
    );
    assert_eq!(
        cluster.psql("SELECT count(*) FROM toolhost_idempotency WHERE state = 'done'"),
        "200"
    );

    // PostgreSQL stops mid-run: keyed calls are refused as retryable and do
    // not run; when it is back, the same keys run once each.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let issuer = {
        let clients = clients.clone();
        rt.spawn(async move {
            for i in 0..40usize {
                let key = format!("o{i}");
                let outcome = keyed(&clients[i % 2], &key).await;
                if tx.send((key, outcome)).is_err() {
                    return;
                }
            }
        })
    };
    let mut phase2 = Vec::new();
    for _ in 0..10 {
        phase2.push(rt.block_on(rx.recv()).expect("an outcome"));
    }
    cluster.stop();
    while let Some(next) = rt.block_on(rx.recv()) {
        phase2.push(next);
    }
    rt.block_on(issuer).unwrap();
    let refused: Vec<&String> = phase2
        .iter()
        .filter(|(_, o)| !o.ok)
        .map(|(key, o)| {
            // The key's claim, or (claimed just before the outage) the
            // audit intent, could not be stored.
            assert!(
                matches!(o.code.as_deref(), Some("state_unavailable" | "audit_unavailable")),
                "{key}: {o:?}"
            );
            assert!(o.retryable, "{key}: {o:?}");
            key
        })
        .collect();
    assert!(
        refused.len() >= 25,
        "only {} of 30 calls during the outage were refused: {phase2:?}",
        refused.len()
    );
    let during = effects(&env);
    for key in &refused {
        assert_eq!(during.get(*key), None, "{key} was refused but ran");
    }

    cluster.resume();
    let deadline = Instant::now() + Duration::from_secs(45);
    for (n, (key, _)) in phase2.iter().enumerate() {
        loop {
            let o = rt.block_on(keyed(&clients[n % 2], key));
            if o.ok {
                assert_eq!(o.stdout.trim(), format!("ran {key}"));
                break;
            }
            assert!(o.retryable, "{key} after recovery: {o:?}\n{}", logs());
            assert!(
                Instant::now() < deadline,
                "{key} still refused after recovery: {o:?}\n{}",
                logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let after = effects(&env);
    for (key, _) in &phase2 {
        assert_eq!(after.get(key), Some(&1), "{key} ran {:?} times", after.get(key));
    }
    assert_eq!(
        after.values().sum::<usize>(),
        240,
        "an unkeyed effect appeared: {after:?}"
    );
    drop(clients);

    // The audit records went to PostgreSQL, one chain per host (the default
    // host id is hostname/pid), each passing `toolhost audit verify`.
    let hosts_ids = cluster.psql("SELECT string_agg(DISTINCT host_id, ' ') FROM toolhost_audit");
    let ids: Vec<&str> = hosts_ids.split_whitespace().collect();
    assert_eq!(ids.len(), 2, "expected two hosts' chains, found {ids:?}");
    for id in ids {
        let lines = cluster.psql(&format!(
            "SELECT string_agg(line, E'\\n' ORDER BY seq) FROM toolhost_audit WHERE host_id = '{id}'"
        ));
        let records = lines.lines().count();
        assert!(records >= 100, "{id}: only {records} audit records");
        let file = env
            .dir
            .path()
            .join(format!("chain-{}.jsonl", id.replace('/', "_")));
        std::fs::write(&file, format!("{lines}\n")).unwrap();
        let out = env
            .command()
            .args(["audit", "verify"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{id}: audit verify failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A call refused while PostgreSQL is away, after it claimed its key, must
/// not leave the key pending once the store is back: its release is retried
/// until it lands, so the retry of the same key runs instead of waiting out
/// a lease for a call that never ran.
#[test]
fn a_key_released_during_an_outage_is_free_once_the_store_is_back() {
    use toolhost::state::postgres::IdempotencyStore;
    use toolhost::state::{Claim, Intent, Store};

    let mut cluster = Cluster::start();
    let store = Store::Postgres(IdempotencyStore::open(&cluster.url()).expect("open the store"));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let intent = |owner: &str| Intent {
        key: "5:local:k1".into(),
        tool: "bash".into(),
        digest: "d".into(),
        owner: owner.into(),
        lease: Duration::from_secs(600),
        ttl: Duration::from_secs(600),
    };
    let claimed = rt.block_on(store.claim(&intent("first"))).expect("claim");
    assert!(matches!(claimed, Claim::Owned), "the first claim owns the key");

    cluster.stop();
    store.release("5:local:k1", "first", Instant::now() + Duration::from_secs(600));
    std::thread::sleep(Duration::from_millis(500));
    cluster.resume();

    let until = Instant::now() + Duration::from_secs(30);
    loop {
        match rt.block_on(store.claim(&intent("second"))) {
            Ok(Claim::Owned) => break,
            Ok(Claim::Pending) | Err(_) => {
                assert!(
                    Instant::now() < until,
                    "the key is still held 30 s after the store came back"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(_) => panic!("the key was neither free nor pending"),
        }
    }
}
