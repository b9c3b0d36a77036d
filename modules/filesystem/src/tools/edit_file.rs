//! edit_file: exact string replacement (one edit, or several applied in
//! order), atomic, guarded, with a short diff.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_core::{AccessMode, Context, Effect, Tool, ToolError, ToolSpec};

use crate::atomic;
use crate::edit;
use crate::state::State;

/// Most edits one call may carry.
pub const MAX_EDITS: usize = 1000;

/// One replacement of a multi-edit.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditSpec {
    /// The exact text to replace, as the file reads after the edits before this one.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// Input of edit_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileInput {
    /// The file to edit: absolute, or relative to the working directory.
    pub file_path: String,
    /// The exact text to replace, copied from the file (without read_file's line-number prefix).
    #[serde(default)]
    pub old_string: Option<String>,
    /// The text to put in its place.
    #[serde(default)]
    pub new_string: Option<String>,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: Option<bool>,
    /// Several edits applied in order, each to the result of the previous one, and written once: all or none. Instead of old_string/new_string.
    #[serde(default)]
    #[schemars(length(min = 1, max = 1000))]
    pub edits: Option<Vec<EditSpec>>,
}

impl EditFileInput {
    /// The edits to apply, from either form; both forms, or neither, is an error.
    fn into_edits(self) -> Result<(String, Vec<EditSpec>, bool), ToolError> {
        let single = self.old_string.is_some() || self.new_string.is_some() || self.replace_all.is_some();
        match (self.edits, single) {
            (Some(_), true) => Err(ToolError::invalid_input(
                "give either old_string/new_string/replace_all or edits, not both",
            )),
            (Some(edits), false) => {
                if edits.is_empty() || edits.len() > MAX_EDITS {
                    return Err(ToolError::invalid_input(format!(
                        "edits must hold 1 to {MAX_EDITS} edits"
                    )));
                }
                Ok((self.file_path, edits, true))
            }
            (None, _) => match (self.old_string, self.new_string) {
                (Some(old_string), Some(new_string)) => Ok((
                    self.file_path,
                    vec![EditSpec {
                        old_string,
                        new_string,
                        replace_all: self.replace_all.unwrap_or(false),
                    }],
                    false,
                )),
                _ => Err(ToolError::invalid_input(
                    "give old_string and new_string (or edits: [{old_string, new_string, replace_all}])",
                )),
            },
        }
    }
}

/// Replaces text in a file.
pub struct EditFile {
    /// Shared mount state.
    pub state: State,
}

impl Tool for EditFile {
    type Input = EditFileInput;
    type Output = String;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "edit_file",
            "Replaces `old_string` with `new_string` in a file. `old_string` must match exactly once \
             (or set `replace_all`); on no match the answer shows the closest lines, on several it \
             shows their line numbers. Or give `edits: [{old_string, new_string, replace_all}]`: \
             applied in order, each to the result of the previous one, and written once — if one \
             fails (named by its index) the file is left untouched. CRLF files stay CRLF. Read the \
             file with read_file first. The answer shows a short diff; undo_edit reverts it.",
        )
        .effect(Effect::InternalMutation)
        .resource_key("/file_path", AccessMode::Write)
        .alias("Edit")
    }

    fn execute(&self, input: EditFileInput, ctx: &Context<'_>) -> Result<String, ToolError> {
        let state = &self.state;
        let (file_path, edits, multi) = input.into_edits()?;
        if let Some(i) = edits.iter().position(|e| e.old_string.is_empty()) {
            let which = if multi {
                format!("edits[{i}]: ")
            } else {
                String::new()
            };
            return Err(ToolError::invalid_input(format!(
                "{which}old_string is empty; give the exact text to replace (use write_file to create a file)"
            )));
        }
        let locked = super::guarded::open_locked(state, &file_path, ctx, false)?;
        let _held = locked.hold();
        let target = &locked.target;
        let display = &target.display;
        let stat = super::guarded::existing_file(target, |display| {
            ToolError::not_found(format!(
                "file not found: {display}; edit_file changes existing files (use write_file to create one)"
            ))
        })?;
        atomic::check_replaceable(target, &stat, state.config.allow_hard_links)?;
        super::guarded::require_read(state, ctx, target, &stat)?;
        if stat.st_size as u64 > state.config.max_edit_bytes {
            return Err(ToolError::invalid_input(format!(
                "{display} is {} bytes; edit_file loads at most {} (max_edit_bytes)",
                stat.st_size, state.config.max_edit_bytes
            )));
        }
        let bytes = crate::snapshot::read(target, &stat)?;
        let content = std::str::from_utf8(&bytes).map_err(|e| {
            let at = e.valid_up_to();
            let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
            ToolError::invalid_input(format!(
                "{display} is not valid UTF-8 (at byte {at}, line {line}); edit_file edits UTF-8 text only — rewrite the file with write_file instead"
            ))
        })?;
        // Every edit in memory first: the file is written once, or not at all.
        let mut current = content.to_string();
        let mut count = 0;
        let mut diffs = String::new();
        for (i, spec) in edits.iter().enumerate() {
            ctx.check_cancelled()?;
            let applied = edit::apply(
                &current,
                &spec.old_string,
                &spec.new_string,
                spec.replace_all,
                display,
            )
            .map_err(|e| {
                if multi {
                    let done = if i == 0 {
                        String::new()
                    } else {
                        format!(" (edits 0-{} applied cleanly, in memory only)", i - 1)
                    };
                    ToolError::invalid_input(format!(
                        "edits[{i}] failed{done}; nothing was written, {display} is unchanged: {}",
                        e.message()
                    ))
                } else {
                    e
                }
            })?;
            if u64::try_from(applied.content.len()).unwrap_or(u64::MAX) > state.config.max_edit_bytes {
                return Err(ToolError::invalid_input(format!(
                    "the edited {display} would be {} bytes; the limit is {} (max_edit_bytes); nothing was written",
                    applied.content.len(),
                    state.config.max_edit_bytes
                )));
            }
            count += applied.count;
            if multi {
                diffs.push_str(&format!("edits[{i}]:\n"));
            }
            diffs.push_str(&applied.diff);
            current = applied.content;
        }
        let new_stat = atomic::write(target, current.as_bytes(), Some(&stat), &state.pending)
            .map_err(|e| atomic::write_error(display, e))?;
        let seen = crate::guard::Seen::written(&new_stat, current.as_bytes());
        let records = crate::records::Records::new(state, ctx);
        records.record(&target.key, seen);
        let saved = records.history_record(&target.key, Some(bytes), seen);
        let plural = if count == 1 { "" } else { "s" };
        let edits_note = if multi {
            format!(" from {} edits", edits.len())
        } else {
            String::new()
        };
        Ok(format!(
            "edited {display}: {count} replacement{plural}{edits_note}\n{diffs}{}",
            super::undo_edit::not_saved_note(&saved)
        ))
    }
}
