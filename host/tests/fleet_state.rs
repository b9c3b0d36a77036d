//! State without sessions across a fleet: two real `toolhost serve --http`
//! hosts sharing one PostgreSQL (`[host] state_url`), behind a plain
//! round-robin nginx (no affinity), and a real MCP client speaking
//! 2026-07-28 (no session) through nginx. A file read through one host may
//! be written through the other; a write without a read is still refused;
//! an edit is undone through the other host. The audit records, which each
//! host writes under its own host id, prove which host served each call.

mod common;

use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::serve::{all_text, args, toolhost_meta, HttpServer};
use common::{module_file, Env};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{json, Value};
use toolhost_testkit::pg::Cluster;

const TOKEN: &str = "fleet-state-token";
/// The token of a second principal, `other`, where a plan declares it.
const OTHER_TOKEN: &str = "fleet-state-other-token";

fn start_host(env: &Env, state_url: &str) -> HttpServer {
    let mut cmd = env.command();
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .env("TOOLHOST_TOKEN", TOKEN)
        .env("TOOLHOST_TEST_OTHER_TOKEN", OTHER_TOKEN)
        .env("TOOLHOST_TEST_STATE_URL", state_url);
    HttpServer::start(cmd)
}

/// `127.0.0.1:PORT` of an endpoint URL such as `http://127.0.0.1:PORT/mcp`.
fn authority(url: &str) -> &str {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
}

/// nginx in the foreground (not a daemon), round-robin over `upstreams`
/// with no affinity, on a loopback port; killed on drop.
struct Nginx {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    fn start(upstreams: &[&str]) -> Nginx {
        let dir = tempfile::tempdir().expect("nginx folder");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let servers: String = upstreams
            .iter()
            .map(|u| format!("        server {u};\n"))
            .collect();
        // As root, nginx's workers would switch to `nobody`; keep them ours.
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let user = if root { "user root;\n" } else { "" };
        let conf = format!(
            "{user}worker_processes 1;\ndaemon off;\npid nginx.pid;\nerror_log error.log info;\n\
             events {{ worker_connections 64; }}\n\
             http {{\n    access_log access.log;\n\
             client_body_temp_path body;\n    proxy_temp_path proxy;\n    fastcgi_temp_path fastcgi;\n\
             uwsgi_temp_path uwsgi;\n    scgi_temp_path scgi;\n\
             upstream fleet {{\n{servers}    }}\n\
             server {{\n        listen 127.0.0.1:{port};\n        location / {{\n\
             proxy_pass http://fleet;\n            proxy_http_version 1.1;\n\
             proxy_set_header Connection \"\";\n            proxy_set_header Host $http_host;\n\
             proxy_buffering off;\n        }}\n    }}\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).expect("write nginx.conf");
        let child = Command::new("nginx")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run nginx (the Debian package `nginx`): {e}"));
        let mut nginx = Nginx { child, port, dir };
        let until = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = nginx.child.try_wait() {
                panic!("nginx exited ({status}):\n{}", nginx.error_log());
            }
            assert!(
                Instant::now() < until,
                "nginx did not listen:\n{}",
                nginx.error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// How many requests nginx proxied (its access log's lines).
    fn requests(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("access.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Client = RunningService<RoleClient, ()>;

async fn connect_2026(url: &str) -> Client {
    connect_2026_as(url, TOKEN).await
}

async fn connect_2026_as(url: &str, token: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover through nginx");
    assert_eq!(
        client.peer_info().map(|i| i.protocol_version.clone()),
        Some(ProtocolVersion::V_2026_07_28),
        "the client must speak the stateless revision"
    );
    client
}

async fn call(client: &Client, tool: &str, input: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(input)))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol error (did a host die?): {e}"))
}

/// The host id that recorded each call of `tool`, in the order stored.
fn served_by(cluster: &Cluster, tool: &str) -> Vec<String> {
    let rows = cluster.psql(&format!(
        "SELECT string_agg(host_id, ' ' ORDER BY stored_at, seq) FROM toolhost_audit \
         WHERE line::jsonb->>'tool' = '{tool}' AND NOT line::jsonb ? 'phase'"
    ));
    rows.split_whitespace().map(str::to_string).collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_principal_reads_on_one_host_and_writes_and_undoes_on_the_other() {
    read_write_undo_across_the_fleet("in-process");
}

/// The same through isolated workers: the worker forwards the module's
/// state requests to its host over the worker protocol.
#[test]
fn isolated_workers_forward_the_state_to_their_hosts() {
    read_write_undo_across_the_fleet("process");
}

fn read_write_undo_across_the_fleet(isolation: &str) {
    module_file("toolhost_filesystem");
    let cluster = Cluster::start();
    let env = Env::new(&format!(
        "[host]\nstate_url = \"${{TOOLHOST_TEST_STATE_URL}}\"\ndefault_timeout_secs = 30\n\n\
         [[tools]]\nmodule = \"filesystem\"\nisolation = \"{isolation}\"\n[tools.config]\n\
         allowed_read_paths = [\".\"]\nallowed_write_paths = [\".\"]\n",
    ));
    let notes = env.path().join("notes.txt");
    let unread = env.path().join("unread.txt");
    std::fs::write(&notes, "first\n").expect("seed notes.txt");
    std::fs::write(&unread, "never read\n").expect("seed unread.txt");
    let hosts = [start_host(&env, &cluster.url()), start_host(&env, &cluster.url())];
    let nginx = Nginx::start(&[authority(&hosts[0].url), authority(&hosts[1].url)]);
    let path = hosts[0].url.splitn(4, '/').nth(3).unwrap_or("mcp");
    let front = format!("http://127.0.0.1:{}/{path}", nginx.port);
    let logs = || {
        format!(
            "{}\n--- host B ---\n{}\n--- nginx ---\n{}",
            hosts[0].log(),
            hosts[1].log(),
            nginx.error_log()
        )
    };

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let client = rt.block_on(connect_2026(&front));

    // Read, then write: consecutive requests, so round-robin sends them to
    // different hosts (checked below from the audit records).
    let r = rt.block_on(call(&client, "read_file", json!({"file_path": "notes.txt"})));
    assert_eq!(r.is_error, Some(false), "{}\n{}", all_text(&r), logs());
    let w = rt.block_on(call(
        &client,
        "write_file",
        json!({"file_path": "notes.txt", "content": "second\n"}),
    ));
    assert_eq!(
        w.is_error,
        Some(false),
        "a write after a read on the other host: {}\n{}",
        all_text(&w),
        logs()
    );
    assert_eq!(read(&notes), "second\n");

    // Undo, served by the first host again: restores what the write replaced.
    let u = rt.block_on(call(&client, "undo_edit", json!({"file_path": "notes.txt"})));
    assert_eq!(
        u.is_error,
        Some(false),
        "undo on the other host: {}\n{}",
        all_text(&u),
        logs()
    );
    assert_eq!(read(&notes), "first\n");

    // A file this principal never read is still refused, on either host.
    for _ in 0..2 {
        let refused = rt.block_on(call(
            &client,
            "write_file",
            json!({"file_path": "unread.txt", "content": "clobbered\n"}),
        ));
        assert_eq!(refused.is_error, Some(true), "{}", all_text(&refused));
        assert_eq!(
            toolhost_meta(&refused)["code"],
            "read_before_write",
            "{refused:?}"
        );
    }
    assert_eq!(read(&unread), "never read\n");
    rt.block_on(client.cancel()).expect("close the client");

    // Which host served what: the read and the write on different hosts,
    // the undo on the one that did not write; both refusals, one per host.
    let reads = served_by(&cluster, "read_file");
    let writes = served_by(&cluster, "write_file");
    let undos = served_by(&cluster, "undo_edit");
    assert_eq!((reads.len(), writes.len(), undos.len()), (1, 3, 1), "{}", logs());
    assert_ne!(
        reads[0], writes[0],
        "round-robin must alternate: {reads:?} {writes:?}"
    );
    assert_ne!(undos[0], writes[0], "{undos:?} {writes:?}");
    assert_ne!(writes[1], writes[2], "{writes:?}");
    assert!(nginx.requests() >= 6, "every call went through nginx");

    // A client in a session (an older revision's `initialize`, straight to
    // one host) keeps its records in that host's memory, not in the store.
    std::fs::write(env.path().join("session.txt"), "s\n").expect("seed session.txt");
    let legacy = rt.block_on(async {
        let config = StreamableHttpClientTransportConfig::with_uri(hosts[0].url.as_str()).auth_header(TOKEN);
        ().serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Initialize,
        )
        .await
        .expect("initialize a session")
    });
    let r = rt.block_on(call(&legacy, "read_file", json!({"file_path": "session.txt"})));
    assert_eq!(r.is_error, Some(false), "{}", all_text(&r));
    rt.block_on(legacy.cancel()).expect("close the session");
    assert_eq!(
        cluster.psql("SELECT count(*) FROM toolhost_principal_kv WHERE key LIKE '%session.txt'"),
        "0",
        "a session's read record went to the shared store"
    );

    // What the store holds is this principal's, under the filesystem mount.
    let owners =
        cluster.psql("SELECT string_agg(DISTINCT owner || '/' || scope, ' ') FROM toolhost_principal_kv");
    assert_eq!(owners, "principal:local/filesystem", "{owners}");
}

/// The store's own bounds, against the real PostgreSQL: keys per owner and
/// scope are capped (the entry written longest ago goes), entries expire,
/// and owners and scopes never see each other's keys.
#[test]
fn the_principal_store_is_bounded_expiring_and_scoped() {
    use toolhost::state::postgres::principal_kv::PrincipalKv;
    use toolhost_core::state::MAX_KEYS;

    let cluster = Cluster::start();
    let kv = PrincipalKv::open(&cluster.url()).expect("open the store");
    for i in 0..MAX_KEYS + 6 {
        kv.put("principal:a", "fs", &format!("k{i}"), "v", None)
            .expect("put");
    }
    let held = |owner: &str| {
        cluster.psql(&format!(
            "SELECT count(*) FROM toolhost_principal_kv WHERE owner = '{owner}'"
        ))
    };
    assert_eq!(held("principal:a"), MAX_KEYS.to_string());
    assert_eq!(
        kv.get("principal:a", "fs", "k0").expect("get"),
        None,
        "the oldest went"
    );
    let newest = format!("k{}", MAX_KEYS + 5);
    assert_eq!(
        kv.get("principal:a", "fs", &newest).expect("get").as_deref(),
        Some("v")
    );

    // Scoped: another owner or another mount sees nothing of a's.
    assert_eq!(kv.get("principal:b", "fs", &newest).expect("get"), None);
    assert_eq!(kv.get("principal:a", "bash", &newest).expect("get"), None);

    // Expiring: an expired entry is never answered, and the owner's next
    // write deletes it.
    kv.put("principal:b", "fs", "short", "v", Some(Duration::from_millis(1)))
        .expect("put");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(kv.get("principal:b", "fs", "short").expect("get"), None);
    kv.put("principal:b", "fs", "other", "v", None).expect("put");
    assert_eq!(held("principal:b"), "1");
    kv.delete("principal:b", "fs", "other").expect("delete");
    assert_eq!(held("principal:b"), "0");
}

/// The JSON a bash tool answered (its structured content).
fn output_of(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .or_else(|| serde_json::from_str(&all_text(result)).ok())
        .unwrap_or(Value::Null)
}

#[test]
fn a_background_job_started_on_one_host_is_read_and_killed_on_the_other() {
    jobs_across_the_fleet("in-process");
}

/// The same through isolated workers: the job's host spools through the
/// coordinator, which the worker forwards to its host.
#[test]
fn isolated_workers_spool_background_jobs_to_the_store() {
    jobs_across_the_fleet("process");
}

fn jobs_across_the_fleet(isolation: &str) {
    module_file("toolhost_bash");
    let cluster = Cluster::start();
    let env = Env::new(&format!(
        "[host]\nstate_url = \"${{TOOLHOST_TEST_STATE_URL}}\"\ndefault_timeout_secs = 30\n\n\
         [[principals]]\nname = \"other\"\ntoken_env = \"TOOLHOST_TEST_OTHER_TOKEN\"\n\n\
         [[tools]]\nmodule = \"bash\"\nisolation = \"{isolation}\"\n[tools.config]\nsandbox = \"off\"\n",
    ));
    let hosts = [start_host(&env, &cluster.url()), start_host(&env, &cluster.url())];
    let nginx = Nginx::start(&[authority(&hosts[0].url), authority(&hosts[1].url)]);
    let path = hosts[0].url.splitn(4, '/').nth(3).unwrap_or("mcp");
    let front = format!("http://127.0.0.1:{}/{path}", nginx.port);
    let logs = || format!("{}\n--- host B ---\n{}", hosts[0].log(), hosts[1].log());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let client = rt.block_on(connect_2026(&front));

    // Through nginx: a job read to its end with reads alternating hosts.
    let handle = start_printer(&rt, &client, &logs);
    let reads = read_to_end(&rt, &[&client], &handle, &logs);
    assert!(reads.1, "no output was read while the job ran");

    // Its end was reported: the handle is gone, on either host.
    for _ in 0..2 {
        let gone = rt.block_on(call(&client, "bash_output", json!({"id": handle})));
        assert_eq!(gone.is_error, Some(true), "{}", all_text(&gone));
        assert_eq!(toolhost_meta(&gone)["code"], "expired_handle", "{gone:?}");
    }

    // Straight to each host: a job started on A and read only on B, so
    // every line B returns came through the store.
    let on_a = rt.block_on(connect_2026(&hosts[0].url));
    let on_b = rt.block_on(connect_2026(&hosts[1].url));
    let handle = start_printer(&rt, &on_a, &logs);
    // Another principal, on either host, knows no job by that handle.
    for url in [&hosts[0].url, &hosts[1].url] {
        let other = rt.block_on(connect_2026_as(url, OTHER_TOKEN));
        for tool in ["bash_output", "bash_kill"] {
            let refused = rt.block_on(call(&other, tool, json!({"id": handle})));
            assert_eq!(refused.is_error, Some(true), "{}", all_text(&refused));
            assert_eq!(
                toolhost_meta(&refused)["code"],
                "expired_handle",
                "{tool}: {refused:?}"
            );
        }
        rt.block_on(other.cancel()).expect("close the client");
    }
    let (_, streamed) = read_to_end(&rt, &[&on_b], &handle, &logs);
    assert!(streamed, "no output reached the other host while the job ran");

    // A job killed through the host that does not run it.
    let sleeper = rt.block_on(call(
        &on_a,
        "bash",
        json!({"command": "echo up; exec sleep 60", "run_in_background": true}),
    ));
    assert_eq!(sleeper.is_error, Some(false), "{}", all_text(&sleeper));
    let sleeper = output_of(&sleeper);
    let (id, pid) = (
        sleeper["id"].as_str().unwrap_or_default(),
        sleeper["pid"].as_i64().unwrap_or(0),
    );
    assert!(pid > 0, "{sleeper}");
    let killed = rt.block_on(call(&on_b, "bash_kill", json!({"id": id})));
    assert_eq!(killed.is_error, Some(false), "{}\n{}", all_text(&killed), logs());
    let killed = output_of(&killed);
    assert_eq!(killed["killed"], json!(true), "{killed}");
    assert_eq!(killed["stopped_by"], json!("bash_kill"), "{killed}");
    assert_eq!(killed["stdout"], json!("up\n"), "{killed}");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the job's process tree is gone"
    );

    // A job whose host shuts down ends with it, and says so to a reader on
    // another host.
    let last = rt.block_on(call(
        &on_a,
        "bash",
        json!({"command": "echo before; exec sleep 60", "run_in_background": true}),
    ));
    assert_eq!(last.is_error, Some(false), "{}", all_text(&last));
    let last = output_of(&last)["id"].as_str().unwrap_or_default().to_string();
    rt.block_on(on_a.cancel()).expect("close the client");
    let mut hosts = hosts;
    assert!(
        hosts[0].terminate(Duration::from_secs(30)),
        "host A did not stop on SIGTERM:\n{}",
        hosts[0].log()
    );
    let r = rt.block_on(call(&on_b, "bash_output", json!({"id": last})));
    assert_eq!(r.is_error, Some(false), "{}\n{}", all_text(&r), hosts[0].log());
    let ended = output_of(&r);
    assert_eq!(ended["running"], json!(false), "{ended}\n{}", hosts[0].log());
    assert_eq!(ended["stopped_by"], json!("shutdown"), "{ended}");
    assert_eq!(ended["stdout"], json!("before\n"), "{ended}");
    for c in [client, on_b] {
        rt.block_on(c.cancel()).expect("close the client");
    }

    // Which host served what: through nginx the job's reads went to both
    // hosts; the direct job ran on A and was read and killed on B.
    let starts = served_by(&cluster, "bash");
    let reads_by = served_by(&cluster, "bash_output");
    let kills = served_by(&cluster, "bash_kill");
    // Two refused kills by the other principal, then the real one.
    assert_eq!((starts.len(), kills.len()), (4, 3));
    assert!(
        reads_by.iter().any(|h| h != &starts[0]),
        "no read of the job was served by the host that does not run it: {starts:?} {reads_by:?}"
    );
    assert_eq!(starts[1], starts[2], "both direct jobs ran on A");
    assert_ne!(kills[2], starts[2], "the kill was served where the job runs");
    assert!(nginx.requests() >= 4, "the first job went through nginx");
    // Every record of both jobs is gone from the store.
    assert_eq!(
        cluster.psql("SELECT count(*) FROM toolhost_principal_kv WHERE scope = 'bash'"),
        "0",
        "{}",
        cluster.psql("SELECT string_agg(key, ' ') FROM toolhost_principal_kv")
    );
}

/// Starts the printing job (six lines on stdout, 0.4 s apart, then one on
/// stderr) and returns its handle.
fn start_printer(rt: &tokio::runtime::Runtime, client: &Client, logs: &dyn Fn() -> String) -> String {
    let started = rt.block_on(call(
        client,
        "bash",
        json!({"command": "for i in 1 2 3 4 5 6; do echo line$i; sleep 0.4; done; echo done >&2",
               "run_in_background": true}),
    ));
    assert_eq!(
        started.is_error,
        Some(false),
        "{}\n{}",
        all_text(&started),
        logs()
    );
    let handle = output_of(&started)["id"].as_str().unwrap_or_default().to_string();
    assert!(
        handle.len() == 20 && handle.starts_with("job-"),
        "a fleet job's handle is unguessable: {handle:?}"
    );
    handle
}

/// Reads the printing job to its end through `clients` in turn; checks
/// every line came once and the exit; returns the number of reads and
/// whether output arrived while the job still ran.
fn read_to_end(
    rt: &tokio::runtime::Runtime,
    clients: &[&Client],
    handle: &str,
    logs: &dyn Fn() -> String,
) -> (usize, bool) {
    let (mut stdout, mut stderr, mut reads, mut streamed) = (String::new(), String::new(), 0, false);
    let end = loop {
        let client = clients[reads % clients.len()];
        reads += 1;
        assert!(reads < 200, "the job never ended:\n{}", logs());
        let r = rt.block_on(call(client, "bash_output", json!({"id": handle})));
        assert_eq!(
            r.is_error,
            Some(false),
            "read {reads}: {}\n{}",
            all_text(&r),
            logs()
        );
        let out = output_of(&r);
        stdout += out["stdout"].as_str().unwrap_or_default();
        stderr += out["stderr"].as_str().unwrap_or_default();
        if out["running"] == json!(false) {
            break out;
        }
        streamed |= !stdout.is_empty();
        std::thread::sleep(Duration::from_millis(150));
    };
    assert_eq!(
        stdout, "line1\nline2\nline3\nline4\nline5\nline6\n",
        "each line once, none lost"
    );
    assert_eq!(stderr, "done\n");
    assert_eq!(end["exit_code"], json!(0), "{end}");
    (reads, streamed)
}
