//! Alias-profile benchmarks (#18): stage 2 for a trained `Grep` call
//! (the family's schema, the mapping, the canonical schema) against the
//! canonical call's stage 2, and a whole `Read` call against the same
//! `read_file` call through the pipeline in-process.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{validate_alias, Call, Pipeline};
use toolhost::plan::Plan;

use crate::report::Bench;

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let work = dir.path().canonicalize()?;
    let mut text = String::new();
    while text.len() < 4096 - 64 {
        text.push_str("a line of ordinary source text, about sixty bytes long ok\n");
    }
    std::fs::write(work.join("four_k.txt"), &text)?;
    let plan_file = work.join("plan.toml");
    std::fs::write(
        &plan_file,
        format!(
            "[host]\nworking_dir = {:?}\nmodule_path = [{:?}]\n\n[[tools]]\nmodule = \"filesystem\"\n",
            work.display().to_string(),
            b.target_dir.display().to_string()
        ),
    )?;
    let host = Arc::new(Host::open(Plan::load(&plan_file)?)?);

    // Stage 2 alone.
    let stage2 = |name: &str, input: Value| {
        let resolved = host
            .resolve(name)
            .ok_or_else(|| anyhow::anyhow!("{name} is not mounted"))?;
        let stats = b.time(200, b.n(20_000), || {
            let mapped = validate_alias::call(&resolved, name, "bench", input.clone());
            assert!(mapped.is_ok());
        });
        anyhow::Ok(stats)
    };
    let canonical = stage2(
        "grep",
        json!({"pattern": "x", "case_insensitive": true, "context": 2, "output_mode": "content", "head_limit": 10}),
    )?;
    let trained = stage2(
        "Grep",
        json!({"pattern": "x", "-i": true, "-C": 2, "output_mode": "content", "head_limit": 10}),
    )?;
    b.row(
        "alias",
        "stage 2, canonical grep input (validate)",
        canonical,
        None,
    );
    b.row(
        "alias",
        "stage 2, Claude Code Grep input (validate, map, validate)",
        trained,
        Some(Duration::from_micros(50)),
    );

    // A whole call.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let pipeline = Pipeline::new(host.clone(), CancelToken::new());
    let call = |name: &str| {
        let input = json!({"file_path": "four_k.txt", "offset": 1, "limit": 100});
        b.time(50, b.n(2_000), || {
            let r = runtime.block_on(pipeline.call(Call {
                name: name.into(),
                input: input.clone(),
                ..Call::default()
            }));
            assert!(r.success);
        })
    };
    let base = call("read_file");
    let read = call("Read");
    b.ratio_row(
        "alias",
        "Read 4 KiB via the profile vs read_file",
        read,
        base,
        1.1,
    );
    host.shutdown();
    Ok(())
}
