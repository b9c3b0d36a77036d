//! write_file: creates or atomically replaces a file.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_core::{AccessMode, Context, Effect, Tool, ToolError, ToolSpec};

use crate::atomic::{self, Existing};
use crate::state::State;

/// Input of write_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileInput {
    /// The file to write: absolute, or relative to the working directory. Missing folders are created.
    pub file_path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// Writes a whole file atomically.
pub struct WriteFile {
    /// Shared mount state.
    pub state: State,
}

impl Tool for WriteFile {
    type Input = WriteFileInput;
    type Output = String;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "write_file",
            "Writes a file with the given content, creating missing folders; replaces an existing \
             file atomically and keeps its permissions. An existing file must have been read with \
             read_file first (and not changed since). Prefer edit_file for changes to part of a file. \
             undo_edit reverts it.",
        )
        .effect(Effect::InternalMutation)
        .resource_key("/file_path", AccessMode::Write)
        .alias("Write")
        .alias("create_file")
    }

    fn execute(&self, input: WriteFileInput, ctx: &Context<'_>) -> Result<String, ToolError> {
        let state = &self.state;
        let limit = state.config.max_edit_bytes;
        if input.content.len() as u64 > limit {
            return Err(ToolError::invalid_input(format!(
                "content is {} bytes; the limit is {limit} (max_edit_bytes)",
                input.content.len()
            )));
        }
        let locked = super::guarded::open_locked(state, &input.file_path, ctx, true)?;
        let _held = locked.hold();
        let target = &locked.target;
        let existing = atomic::inspect(target)?;
        let (keep, before) = match &existing {
            Existing::File(stat) => {
                atomic::check_replaceable(target, stat, state.config.allow_hard_links)?;
                super::guarded::require_read(state, ctx, target, stat)?;
                // The old content for undo_edit, when the history can hold it.
                let before = if stat.st_size.max(0) as u64 <= crate::history::MAX_BYTES as u64 {
                    Some(crate::snapshot::read(target, stat)?)
                } else {
                    None
                };
                (Some(stat), before)
            }
            Existing::Missing => (None, None),
        };
        let stat = atomic::write(target, input.content.as_bytes(), keep, &state.pending)
            .map_err(|e| atomic::write_error(&target.display, e))?;
        let seen = crate::guard::Seen::written(&stat, input.content.as_bytes());
        let records = crate::records::Records::new(state, ctx);
        records.record(&target.key, seen);
        let saved = match (keep, before) {
            (Some(_), None) => crate::history::Recorded::TooLarge,
            (Some(_), Some(before)) => records.history_record(&target.key, Some(before), seen),
            (None, _) => records.history_record(&target.key, None, seen),
        };
        if saved == crate::history::Recorded::TooLarge {
            records.history_forget_file_in(&target.key);
        }
        let lines = input.content.lines().count();
        let verb = if keep.is_some() { "replaced" } else { "created" };
        Ok(format!(
            "{verb} {} ({} bytes, {lines} lines){}",
            target.display,
            input.content.len(),
            super::undo_edit::not_saved_note(&saved)
        ))
    }
}
