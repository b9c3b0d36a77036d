//! delete_file: removes one file (never a folder), under the write policy.

use rustix::fs::AtFlags;
use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_core::{AccessMode, Context, Effect, Tool, ToolError, ToolSpec};

use crate::atomic::{self, Existing};
use crate::guard::hold;
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
        let target = state
            .policy
            .open_write("file_path", &input.file_path, ctx.working_dir(), false)?;
        let display = target.display.clone();
        let lock = state.locks.of(&target.key);
        let _held = hold(&lock);
        let stat = match atomic::inspect(&target)? {
            Existing::File(stat) => stat,
            Existing::Missing => {
                return Err(ToolError::not_found(format!(
                    "file not found: {display}; nothing was deleted"
                )))
            }
        };
        // The same refusals as replacing it: read-only files and files with
        // another name (maybe denied or outside) stay.
        atomic::check_replaceable(&target, &stat, state.config.allow_hard_links)?;
        // Without AT_REMOVEDIR a folder swapped in since the inspection is
        // refused (EISDIR); a symlink swapped in is removed as a name, its
        // target untouched.
        rustix::fs::unlinkat(&target.dir, target.name.as_os_str(), AtFlags::empty()).map_err(|e| {
            ToolError::new(
                "io_error",
                format!("cannot delete {display}: {e}; nothing was deleted"),
            )
        })?;
        let _ = rustix::fs::fsync(&target.dir);
        state.history.forget_file(&target.key);
        Ok(format!("deleted {display} ({} bytes)", stat.st_size))
    }
}
