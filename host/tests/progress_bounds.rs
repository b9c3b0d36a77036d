//! Progress a client does not read fast enough is dropped, not queued
//! without bound: `toolhost serve` runs the crashy fixture's
//! `flood_progress` in-process (as fast as a tool can report) for a client
//! that asked for progress and then reads nothing for the flood's length.
//! The host's memory stays under budget, and once the client reads, the
//! result arrives.

mod common;

use std::time::{Duration, Instant};

use common::raw_stdio::RawServe;
use common::rss::{assert_within_budget, peak_kib};
use common::{module_file, Env};
use serde_json::json;

#[test]
fn a_client_that_does_not_read_costs_dropped_progress_not_memory() {
    let env = Env::new(&format!(
        "[host]\ndefault_timeout_secs = 60\n\n[[tools]]\npath = \"{}\"\nprefix = \"c_\"\n\
         isolation = \"in-process\"\n[tools.config]\nhostile = true\n",
        module_file("toolhost_fixture_crashy").display()
    ));
    let mut served = RawServe::start(&env, "slow-reader");
    let pid = served.pid();
    served.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "c_flood_progress", "arguments": {"ms": 5000},
        "_meta": {"progressToken": "p"}}}),
    );

    // Read nothing while the tool floods; watch the host's memory.
    let flood_end = Instant::now() + Duration::from_millis(5500);
    let mut peak = 0;
    while Instant::now() < flood_end {
        peak = peak.max(peak_kib(pid).expect("the host is running"));
        std::thread::sleep(Duration::from_millis(20));
    }

    // Now read: progress first (some of it), then the result.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut progress = 0u64;
    let result = loop {
        assert!(Instant::now() < deadline, "no result within 60 s");
        let message = served.next();
        if message["method"] == "notifications/progress" {
            progress += 1;
            continue;
        }
        if message["id"] == 2 {
            break message;
        }
    };
    peak = peak.max(peak_kib(pid).unwrap_or(0));
    drop(served);
    let sent = result["result"]["structuredContent"]["sent"]
        .as_u64()
        .expect("sent");
    eprintln!("peak resident set {peak} KiB; {progress} of {sent} progress reports delivered");
    assert_within_budget(peak, "progress flood to a client that does not read");
    assert!(
        sent > progress,
        "every report reached the client ({sent}): the flood proves nothing"
    );
}
