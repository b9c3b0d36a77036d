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

/// The paths hidden when the plan names none: credentials, and the sockets
/// of services that would run a command outside every wall (the user's
/// D-Bus and systemd, the system bus, Docker). Landlock up to ABI 6 does not
/// restrict `connect()` to a socket file, so hiding them is what keeps them
/// out of reach. Paths that do not exist are skipped at mount.
pub fn default_hidden_paths() -> Vec<String> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    ["~/.ssh", "~/.aws", "~/.gnupg"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            format!("/run/user/{uid}"),
            "/run/dbus".to_string(),
            "/run/docker.sock".to_string(),
            "/var/run/docker.sock".to_string(),
        ])
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_hidden_paths_cover_the_service_sockets() {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let hidden = super::default_hidden_paths();
        for p in [
            format!("/run/user/{uid}"),
            "/run/dbus".into(),
            "/run/docker.sock".into(),
            "/var/run/docker.sock".into(),
            "~/.ssh".into(),
        ] {
            assert!(hidden.contains(&p), "{p} is not hidden by default: {hidden:?}");
        }
    }
}
