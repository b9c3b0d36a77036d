//! The sandbox's plan keys.

use serde::Deserialize;

/// `sandbox = "workspace-write" | "read-only" | "off"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
pub enum Mode {
    /// Writes under the working folder, `writable_paths` and a private temp
    /// folder; reads everywhere but `hidden_paths`.
    #[serde(rename = "workspace-write")]
    #[default]
    WorkspaceWrite,
    /// Writes only in the private temp folder.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// No sandbox: only the reaper's supervision (and the policy).
    #[serde(rename = "off")]
    Off,
}

impl Mode {
    /// The plan spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
            Mode::Off => "off",
        }
    }
}

/// The paths hidden when the plan names none.
pub fn default_hidden_paths() -> Vec<String> {
    ["~/.ssh", "~/.aws", "~/.gnupg"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}
