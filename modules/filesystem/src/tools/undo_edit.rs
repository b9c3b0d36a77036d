//! undo_edit: puts back the content a file had before this session's last
//! write_file or edit_file of it, from the bounded history in [`crate::history`].

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_core::{AccessMode, Context, Effect, Tool, ToolError, ToolSpec};

use super::guarded::{existing_file, open_locked, remove};
use crate::atomic;
use crate::guard::Seen;
use crate::history::Recorded;
use crate::state::State;

/// Input of undo_edit.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoEditInput {
    /// The file whose last change to revert: absolute, or relative to the working directory.
    pub file_path: String,
}

/// Reverts a session's last change to a file.
pub struct UndoEdit {
    /// Shared mount state.
    pub state: State,
}

/// The line a write's answer carries when its change cannot be undone.
pub(crate) fn not_saved_note(saved: &Recorded) -> String {
    match saved {
        Recorded::Saved => String::new(),
        Recorded::TooLarge => format!(
            "\n[the previous content is larger than {} MiB and was not kept: undo_edit cannot revert this change]",
            crate::history::MAX_BYTES >> 20
        ),
    }
}

impl Tool for UndoEdit {
    type Input = UndoEditInput;
    type Output = String;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "undo_edit",
            "Reverts this session's last write_file or edit_file of a file, restoring the content \
             it had before (a file that write_file created is removed). Called again, it steps one \
             change further back, until nothing is left. Refused if the file changed since that \
             change (by another session or program). The history is bounded: the last 100 changes \
             and 32 MiB of saved content per session.",
        )
        .effect(Effect::InternalMutation)
        .resource_key("/file_path", AccessMode::Write)
    }

    fn execute(&self, input: UndoEditInput, ctx: &Context<'_>) -> Result<String, ToolError> {
        let state = &self.state;
        let records = crate::records::Records::new(state, ctx);
        let locked = open_locked(state, &input.file_path, ctx, false)?;
        let _held = locked.hold();
        let target = &locked.target;
        let display = &target.display;
        let Some(entry) = records.history_last(&target.key)? else {
            return Err(ToolError::new(
                "nothing_to_undo",
                format!(
                    "nothing to undo for {display}: this session has no write_file or edit_file of it left in its history"
                ),
            ));
        };
        let stat = existing_file(target, |display| {
            ToolError::new(
                "changed_since_edit",
                format!("{display} no longer exists; there is nothing to revert it over"),
            )
        })?;
        let unchanged = entry
            .after
            .matches(&stat, || crate::snapshot::read(target, &stat))?;
        if unchanged.is_err() {
            return Err(ToolError::new(
                "changed_since_edit",
                format!(
                    "{display} changed since this session's last change to it (another session or program wrote it); undo would discard that change, so it is refused — read the file and edit it instead"
                ),
            ));
        }
        atomic::check_replaceable(target, &stat, state.config.allow_hard_links)?;
        let Some(before) = entry.before else {
            // The change created the file: undoing it removes the file.
            remove(target, "")?;
            records.history_pop(&target.key, None)?;
            return Ok(format!(
                "removed {display}: this session's write_file created it, so undoing that removes it"
            ));
        };
        let restored = atomic::write(target, &before, Some(&stat), &state.pending)
            .map_err(|e| atomic::write_error(display, e))?;
        let seen = Seen::written(&restored, &before);
        records.record(&target.key, seen);
        let left = records.history_pop(&target.key, Some(seen))?;
        let more = match left {
            0 => "nothing earlier is left to undo".to_string(),
            1 => "1 earlier change can still be undone".to_string(),
            n => format!("{n} earlier changes can still be undone"),
        };
        Ok(format!(
            "restored {display} to its content before this session's last change ({} bytes, {} lines); {more}",
            before.len(),
            before.iter().filter(|b| **b == b'\n').count()
        ))
    }
}
