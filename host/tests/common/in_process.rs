//! The bash module mounted inside the test process, for tests that must
//! reach what a subprocess host would hide: a job's reaper to kill, the
//! mount's state folder to search, the moment the mount ends.

use std::sync::Arc;

use serde_json::{json, Value};
use toolhost::cancel::CancelToken;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

use super::{module_file, target_dir};

/// A host with one bash mount (`config` is its `[tools.config]` body),
/// its pipeline and a runtime to drive it, over a fresh working folder.
pub struct InProcess {
    pub host: Arc<Host>,
    pub pipeline: Pipeline,
    pub runtime: tokio::runtime::Runtime,
    pub dir: tempfile::TempDir,
}

impl InProcess {
    pub fn bash(config: &str) -> InProcess {
        module_file("toolhost_bash");
        let dir = tempfile::tempdir().expect("tempdir");
        let text = format!(
            "[host]\nworking_dir = \".\"\nmodule_path = [{:?}]\n\n[[tools]]\nmodule = \"bash\"\n[tools.config]\n{config}\n",
            target_dir().display().to_string()
        );
        let file = dir.path().join("plan.toml");
        std::fs::write(&file, &text).expect("write plan");
        let host = Arc::new(Host::open(Plan::parse(&text, &file).expect("plan")).expect("host"));
        let pipeline = Pipeline::new(host.clone(), CancelToken::new());
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        InProcess {
            host,
            pipeline,
            runtime,
            dir,
        }
    }

    /// Calls `name` with `input` through the whole pipeline; the result as JSON.
    pub fn call(&self, name: &str, input: Value) -> Value {
        let r = self.runtime.block_on(self.pipeline.call(Call {
            name: name.into(),
            input,
            ..Call::default()
        }));
        serde_json::to_value(r).expect("json")
    }

    /// Runs `command` in the foreground.
    pub fn run(&self, command: &str) -> Value {
        self.call("bash", json!({ "command": command }))
    }
}
