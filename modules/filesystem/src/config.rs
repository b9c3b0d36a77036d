//! The module's config (`[tools.config]` in a mount plan) and its defaults.

use serde::Deserialize;

/// What a plan may set for the filesystem module. Every key is optional.
#[derive(Deserialize, Debug, Clone)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Folder relative input paths resolve against (default: the plan's working dir).
    pub working_dir: Option<String>,
    /// Folders the read tools may see (default: the working dir).
    pub allowed_read_paths: Option<Vec<String>>,
    /// Folders write_file and edit_file may change (default: the working dir).
    pub allowed_write_paths: Option<Vec<String>>,
    /// Paths no tool may touch; deny wins over allow. A rule without `/` names
    /// a file or folder anywhere (`.git`, `.env*`); one with `/` or `~` is a path.
    pub denied_paths: Option<Vec<String>>,
    /// Refuse to overwrite or edit a file not read (or changed since read) in this host process.
    pub require_read_before_write: bool,
    /// Lines read_file returns when no `limit` is given.
    pub max_read_lines: usize,
    /// Characters kept of one line before it is cut with a marker.
    pub max_line_chars: usize,
    /// Bytes of numbered text read_file returns before asking to page on (kept
    /// below the host's max_output_bytes so the paging note is never cut).
    pub max_read_bytes: usize,
    /// Largest file edit_file loads and largest content write_file accepts.
    pub max_edit_bytes: u64,
    /// Entries list_directory shows before it stops and counts the rest.
    pub max_list_entries: usize,
    /// Paths glob returns before it stops and counts the rest.
    pub max_glob_results: usize,
    /// Default `head_limit` of grep (lines or files).
    pub grep_head_limit: usize,
    /// Whether glob and grep honour .gitignore, .ignore and git excludes.
    pub respect_gitignore: bool,
    /// Serve regular files that have more than one name (hard links). Off by
    /// default: another name of the same file may be denied or outside every
    /// allowed folder, and nothing on the file tells which. Turn it on for
    /// hard-linked package stores (pnpm, nix, ccache) whose other names are
    /// as public as this one.
    pub allow_hard_links: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            working_dir: None,
            allowed_read_paths: None,
            allowed_write_paths: None,
            denied_paths: None,
            require_read_before_write: true,
            max_read_lines: 2000,
            max_line_chars: 2000,
            max_read_bytes: 80 * 1024,
            max_edit_bytes: 16 * 1024 * 1024,
            max_list_entries: 1000,
            max_glob_results: 1000,
            grep_head_limit: 500,
            respect_gitignore: true,
            allow_hard_links: false,
        }
    }
}

/// The rules denied when a plan names none: version-control internals,
/// environment secrets and SSH keys.
pub const DEFAULT_DENIED: &[&str] = &[".git", ".env*", "~/.ssh"];
