//! The three backends of one tool source, as mount plans: the fixture
//! modules in the host's process, the same modules in worker processes
//! (`isolation = "process"`), and the same modules served by a second
//! `toolhost serve` that the host under test mounts as a `[tools.mcp]`
//! source. Everything else in the plan (policy, grants, limits) is the
//! same for all three, so any difference in an answer is the backend's.

use std::path::Path;

use crate::common::target_dir;

/// Where the host under test gets its tools from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// The modules loaded into the host's own process.
    InProcess,
    /// The same modules, each in a worker process.
    Isolated,
    /// The same modules in a `toolhost serve` mounted as an MCP source.
    Mounted,
}

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; 3] = [Backend::InProcess, Backend::Isolated, Backend::Mounted];

    /// Its name in failures and in `differences.rs`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::InProcess => "in-process",
            Backend::Isolated => "isolated",
            Backend::Mounted => "mounted",
        }
    }

    /// The plan of the host under test. `dir` is its folder: the mounted
    /// server's own plan and state folder are written there.
    pub fn plan(self, dir: &Path) -> String {
        let sources = match self {
            Backend::InProcess => modules(""),
            Backend::Isolated => modules("isolation = \"process\"\n"),
            Backend::Mounted => {
                let inner = dir.join("served.toml");
                std::fs::write(
                    &inner,
                    format!(
                        "[host]\nmodule_path = [{:?}]\ndefault_timeout_secs = 30\n\n{}",
                        target_dir().display().to_string(),
                        modules("")
                    ),
                )
                .expect("write the served plan");
                // A bare command name, found on PATH (the runners put the
                // target folder first): a command given as a path is
                // hashed whenever the plan loads, and hashing a debug
                // build of toolhost (over 100 MB) takes seconds per start.
                format!(
                    "[[tools]]\n[tools.mcp]\ncommand = [\"toolhost\", \"--plan\", {:?}, \"serve\"]\n\
                     env = {{ XDG_STATE_HOME = {:?} }}\n",
                    inner.display().to_string(),
                    dir.join("served-state").display().to_string(),
                )
            }
        };
        format!("{HOST}\n{sources}\n{POLICY}")
    }
}

/// The host under test: an audit log to compare, an output limit the
/// truncation case crosses, a cancel grace that a tool honouring its token
/// never reaches.
const HOST: &str = "[host]
default_timeout_secs = 30
cancel_grace_ms = 1500
max_output_bytes = 4096
audit_log = \"audit.jsonl\"
";

/// The same rules for every backend: a denied tool, a tool to approve, a
/// one-second deadline, and a grant that leaves one tool out (its `e*`
/// covers the misspelt name too, so that the call reaches resolution).
const POLICY: &str = "[policy.tools.launch]
decision = \"deny\"

[policy.tools.greet]
decision = \"ask\"

[policy.tools.write_key]
timeout_secs = 1

[[grants]]
principal = \"local\"
tools = [\"e*\", \"panic\", \"sleep\", \"huge\", \"write_key\", \"shape\", \"greet\", \"launch\", \"old_greet\"]
";

/// The two fixture modules (echo, sleep, huge, … and the governance
/// fixture, whose `old_greet` is past its sunset), each with `extra` keys.
fn modules(extra: &str) -> String {
    format!(
        "[[tools]]\nmodule = \"fixture\"\n{extra}\n\
         [[tools]]\nmodule = \"governed\"\n{extra}[tools.config]\nsunset = \"2020-01-01\"\n"
    )
}
