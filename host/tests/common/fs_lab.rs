//! The filesystem module's test lab, shared by `filesystem` and
//! `filesystem_reliability`: a temp folder whose `project/` is the allowed
//! working dir, with `outside/` beside it, driven through the real binary.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Called, Env};

/// What the secret files hold; no answer may contain it.
pub const SECRET: &str = "TOP-SECRET-CONTENT";

/// `project/` (with `src/`) is the working dir; `outside/` is beside it.
pub struct Lab {
    /// The folder and its plan.
    pub env: Env,
}

impl Lab {
    /// The two folders, empty, and a plan mounting the filesystem module
    /// with the extra `[tools.config]` lines `config`.
    pub fn folders(config: &str) -> Lab {
        let lab = Lab { env: Env::new("") };
        lab.set_config(config);
        std::fs::create_dir_all(lab.project().join("src")).expect("project/src");
        std::fs::create_dir_all(lab.root().join("outside")).expect("outside");
        lab
    }

    /// Rewrites the plan with this config.
    pub fn set_config(&self, config: &str) {
        self.env.set_plan(&format!(
            "[host]\nworking_dir = \"project\"\ndefault_timeout_secs = 60\n\n[[tools]]\nmodule = \"filesystem\"\n[tools.config]\n{config}\n"
        ));
    }

    /// The temp folder holding `project/` and `outside/`.
    pub fn root(&self) -> &Path {
        self.env.path()
    }

    /// The working dir.
    pub fn project(&self) -> PathBuf {
        self.root().join("project")
    }

    /// `toolhost call` in a fresh host process.
    pub fn call(&self, tool: &str, input: Value) -> Called {
        self.env.call(tool, input)
    }

    /// Runs a JSONL batch in one host process (the guard is per process).
    pub fn batch(&self, calls: &[Value]) -> Vec<Value> {
        let (results, _) = self.env.batch(calls, &[]);
        assert_eq!(results.len(), calls.len());
        results
    }
}
