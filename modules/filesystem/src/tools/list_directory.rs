//! list_directory: a folder's entries with kind and size, to a depth.

use std::os::fd::AsFd;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_core::{AccessMode, Context, Effect, Structured, Tool, ToolError, ToolSpec};

use crate::listing::{self, Limits, Origin};
use crate::policy::{fd, ReadHandle};
use crate::state::{Shared, State};

/// Deepest listing accepted.
const MAX_DEPTH: u64 = 10;

/// Input of list_directory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirectoryInput {
    /// The folder to list (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// How many levels to show: 1 is the folder's own entries (default 1, at most 10).
    #[serde(default)]
    pub depth: Option<u64>,
}

/// Lists a folder.
pub struct ListDirectory {
    /// Shared mount state.
    pub state: State,
}

/// list_directory's structured output.
#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirectoryOutput {
    /// The folder listed, as shown.
    pub path: String,
    /// Entries shown.
    pub entries: u64,
    /// Entries left out by the mount's cap.
    pub omitted: u64,
}

impl Tool for ListDirectory {
    type Input = ListDirectoryInput;
    type Output = Structured<ListDirectoryOutput>;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "list_directory",
            "Lists a folder's entries as `kind size path`, sorted, folders before their contents, \
             to `depth` levels (default 1). Symbolic links are shown, never followed. Long \
             listings are capped with a count of what was left out.",
        )
        .effect(Effect::ReadOnly)
        .resource_key("/path", AccessMode::Read)
        .structured_output::<ListDirectoryOutput>()
    }

    fn execute(&self, input: ListDirectoryInput, ctx: &Context<'_>) -> Result<Self::Output, ToolError> {
        let depth = input.depth.unwrap_or(1);
        if depth == 0 || depth > MAX_DEPTH {
            return Err(ToolError::invalid_input(format!(
                "depth must be 1 to {MAX_DEPTH}; got {depth}"
            )));
        }
        let policy = &self.state.policy;
        let handle = policy.open_read("path", input.path.as_deref().unwrap_or("."), ctx.working_dir())?;
        let display = handle.resolved.display.clone();
        if !fd::is_dir(&handle.stat) {
            return Err(ToolError::invalid_input(format!(
                "{display} is a file, not a folder; use read_file to read it"
            )));
        }
        let listing = list_opened(&self.state, &handle, depth as usize, ctx)?;
        let (text, omitted) = (&listing.text, listing.omitted);
        let mut out = format!("{display} (kind, size in bytes, path):\n{text}\n");
        if omitted > 0 {
            out.push_str(&format!(
                "[{omitted} more entries not shown (max_list_entries = {}); list a subfolder or lower depth]\n",
                self.state.config.max_list_entries
            ));
        }
        Ok(Structured::new(
            out,
            ListDirectoryOutput {
                path: display,
                entries: listing.shown as u64,
                omitted: omitted as u64,
            },
        ))
    }
}

/// Lists an opened folder to `depth` levels under the mount's entry cap.
/// Shared with
/// read_file, which answers a folder path with its listing.
pub(crate) fn list_opened(
    state: &Shared,
    handle: &ReadHandle,
    depth: usize,
    ctx: &Context<'_>,
) -> Result<listing::Listing, ToolError> {
    let policy = &state.policy;
    let below_root = policy
        .read_roots()
        .find_real(&handle.real)
        .map(|(_, rel)| rel)
        .unwrap_or_default();
    let origin = Origin {
        policy,
        real: handle.real.clone(),
        below_root,
    };
    let limits = Limits {
        depth,
        max_entries: state.config.max_list_entries,
    };
    listing::list(handle.fd.as_fd(), &origin, &limits, ctx)
}
