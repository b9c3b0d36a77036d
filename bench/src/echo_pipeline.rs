//! The fixture's echo through the whole pipeline of a host loaded from a
//! small plan: what the benches of one pipeline stage (rate limits,
//! telemetry) compare with and without the stage.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

/// A host mounting the fixture from `modules`, its plan written to
/// `dir/NAME.toml` with `extra` (keys of `[host]`, or whole tables) after
/// the module path, and a pipeline over it.
pub(crate) fn open(
    dir: &Path,
    modules: &Path,
    name: &str,
    extra: &str,
) -> anyhow::Result<(Arc<Host>, Pipeline)> {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            "[host]\nmodule_path = [{:?}]\n{extra}[[tools]]\nmodule = \"fixture\"\n",
            modules.display().to_string()
        ),
    )?;
    let host = Arc::new(Host::open(Plan::load(&file)?)?);
    Ok((host.clone(), Pipeline::new(host, CancelToken::new())))
}

/// One `echo` call through `pipeline`; a failure stops the bench.
pub(crate) fn echo(runtime: &tokio::runtime::Runtime, pipeline: &Pipeline) {
    let result = runtime.block_on(pipeline.call(Call {
        name: "echo".into(),
        input: json!({"message": "hello"}),
        ..Call::default()
    }));
    assert!(result.success, "{result:?}");
}
