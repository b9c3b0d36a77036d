//! Two writers under one host id racing for the same audit sequence number
//! in PostgreSQL (issue #19 item 5): the loser's append is refused with a
//! message that names the cause and the fix. The sink recognises the race
//! from the constraint the driver reports, not from the error's text.
//! A real PostgreSQL (`toolhost_testkit::pg`) and a second, real client that holds
//! the competing insert open until the sink is seen waiting on it.

use std::time::{Duration, Instant};

use toolhost::pipeline::audit_sink::{AuditSink, AuditSinkError};
use toolhost::state::postgres::open_audit_sink;
use toolhost_testkit::pg;

#[test]
fn an_append_that_loses_the_race_for_its_sequence_number_names_the_cause() {
    let cluster = pg::Cluster::start();
    let url = cluster.url();
    let sink = open_audit_sink(&url, "host-a").expect("open the sink");
    sink.append(r#"{"n":1}"#).expect("first append");

    // Another writer under the same host id inserts seq 2 and holds its
    // transaction open.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let (other, connection) = rt
        .block_on(tokio_postgres::connect(&url, tokio_postgres::NoTls))
        .expect("connect the other writer");
    rt.spawn(connection);
    rt.block_on(other.batch_execute(
        "BEGIN; INSERT INTO toolhost_audit (host_id, seq, line) VALUES ('host-a', 2, '{\"other\":1}')",
    ))
    .expect("the other writer's insert");

    // The sink computes seq 2 too, and waits on the other's row lock.
    let appending = std::thread::spawn(move || sink.append(r#"{"n":2}"#));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let waiting = cluster.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%toolhost_audit%'",
        );
        if waiting == "1" {
            break;
        }
        assert!(
            !appending.is_finished(),
            "the append returned before the other writer committed: {:?}",
            appending.join()
        );
        assert!(
            Instant::now() < deadline,
            "the append never waited on the other writer"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    rt.block_on(other.batch_execute("COMMIT")).expect("commit");

    match appending.join().expect("the append thread") {
        Err(AuditSinkError::Unavailable(message)) => {
            assert!(
                message.contains(
                    "two processes append audit records as host 'host-a' at once; give each host its own [host] host_id"
                ),
                "{message}"
            );
            assert!(message.contains("toolhost_audit_pkey"), "{message}");
        }
        other => panic!("the losing append was not refused as a collision: {other:?}"),
    }
    assert_eq!(
        cluster
            .psql("SELECT string_agg(line, ' ' ORDER BY seq) FROM toolhost_audit WHERE host_id = 'host-a'"),
        r#"{"n":1} {"other":1}"#
    );
}
