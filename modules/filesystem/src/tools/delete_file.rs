//! delete_file: removes one file (never a folder), under the write policy.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_core::{AccessMode, Context, Effect, Tool, ToolError, ToolSpec};

use super::guarded::{existing_file, open_locked, remove};
use crate::atomic;
use crate::state::State;

/// Input of delete_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteFileInput {
    /// The file to delete: absolute, or relative to the working directory. Not a folder.
    pub file_path: String,
}

/// Deletes a file.
pub struct DeleteFile {
    /// Shared mount state.
    pub state: State,
}

impl Tool for DeleteFile {
    type Input = DeleteFileInput;
    type Output = String;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "delete_file",
            "Deletes one file (not a folder) in a writable folder. Irreversible: undo_edit cannot \
             bring it back. A symbolic link, a read-only file or a file with several names (hard \
             links) is refused.",
        )
        .effect(Effect::Irreversible)
        .resource_key("/file_path", AccessMode::Write)
    }

    fn execute(&self, input: DeleteFileInput, ctx: &Context<'_>) -> Result<String, ToolError> {
        let state = &self.state;
        let locked = open_locked(state, &input.file_path, ctx, false)?;
        let _held = locked.hold();
        let target = &locked.target;
        let stat = existing_file(target, |display| {
            ToolError::not_found(format!("file not found: {display}; nothing was deleted"))
        })?;
        // The same refusals as replacing it: read-only files and files with
        // another name (maybe denied or outside) stay.
        atomic::check_replaceable(target, &stat, state.config.allow_hard_links)?;
        remove(target, "; nothing was deleted")?;
        crate::records::Records::new(state, ctx).history_forget_file(&target.key);
        Ok(format!("deleted {} ({} bytes)", target.display, stat.st_size))
    }
}
