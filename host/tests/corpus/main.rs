//! The differential call corpus: every case of `cases.rs` runs through
//! every front door (`toolhost call`, `toolhost batch`, MCP over stdio, MCP
//! over streamable HTTP) against every backend (the fixture modules in
//! process, isolated in workers, and served by a `toolhost serve` mounted
//! as an MCP source), and every answer and audit record must equal the
//! reference (`toolhost call`, in process) except where `differences.rs`
//! says, exactly, what differs and why.
//!
//! Only public behaviour is used (the binary, plans, the MCP wire, the
//! audit file), so the test holds whatever shape the host takes inside.

#[path = "../common/mod.rs"]
mod common;

mod backends;
mod cases;
mod compare;
mod differences;
mod doors;
mod observe;

use std::collections::BTreeMap;

use backends::Backend;
use cases::CASES;
use doors::{Door, Runner};
use serde_json::Value;

#[test]
fn every_front_door_and_backend_answer_the_corpus_alike() {
    common::module_file("toolhost_fixture");
    common::module_file("toolhost_governed");
    // One thread per backend (their hosts are separate processes); each
    // runs its front doors one after the other, every case through each.
    let observed: BTreeMap<(Door, Backend), Vec<Value>> = std::thread::scope(|scope| {
        let threads: Vec<_> = Backend::ALL
            .iter()
            .map(|&backend| {
                scope.spawn(move || {
                    Door::ALL
                        .iter()
                        .map(|&door| {
                            let mut runner = Runner::start(door, backend);
                            let answers = CASES
                                .iter()
                                .map(|case| {
                                    let started = std::time::Instant::now();
                                    let answer = runner.run(case);
                                    eprintln!(
                                        "{} / {} / {}: {:?}",
                                        door.name(),
                                        backend.name(),
                                        case.name,
                                        started.elapsed()
                                    );
                                    answer
                                })
                                .collect();
                            ((door, backend), answers)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("a backend's runs panicked"))
            .collect()
    });
    compare::all(&observed);
}
