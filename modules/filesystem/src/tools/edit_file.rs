//! edit_file: exact string replacement, atomic, guarded, with a short diff.

use std::io::Read;

use rustix::fs::{FileType, Mode, OFlags};
use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_core::{AccessMode, Context, Effect, Tool, ToolError, ToolSpec};

use crate::atomic;
use crate::edit;
use crate::guard::hold;
use crate::policy::fd::kind_name;
use crate::state::State;

/// Input of edit_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileInput {
    /// The file to edit: absolute, or relative to the working directory.
    pub file_path: String,
    /// The exact text to replace, copied from the file (without read_file's line-number prefix).
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
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
             shows their line numbers. CRLF files stay CRLF. Read the file with read_file first. \
             The answer shows a short diff.",
        )
        .effect(Effect::InternalMutation)
        .resource_key("/file_path", AccessMode::Write)
        .alias("Edit")
    }

    fn execute(&self, input: EditFileInput, ctx: &Context<'_>) -> Result<String, ToolError> {
        let state = &self.state;
        if input.old_string.is_empty() {
            return Err(ToolError::invalid_input(
                "old_string is empty; give the exact text to replace (use write_file to create a file)",
            ));
        }
        let target = state
            .policy
            .open_write("file_path", &input.file_path, ctx.working_dir(), false)?;
        let display = target.display.clone();
        let lock = state.locks.of(&target.key);
        let _held = hold(&lock);
        let stat = match atomic::inspect(&target)? {
            atomic::Existing::File(stat) => stat,
            atomic::Existing::Missing => {
                return Err(ToolError::not_found(format!(
                "file not found: {display}; edit_file changes existing files (use write_file to create one)"
            )))
            }
        };
        atomic::check_replaceable(&target, &stat, state.config.allow_hard_links)?;
        super::guarded::require_read(state, ctx.session_id(), &target, &stat)?;
        if stat.st_size as u64 > state.config.max_edit_bytes {
            return Err(ToolError::invalid_input(format!(
                "{display} is {} bytes; edit_file loads at most {} (max_edit_bytes)",
                stat.st_size, state.config.max_edit_bytes
            )));
        }
        let fd = rustix::fs::openat(
            &target.dir,
            target.name.as_os_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|e| ToolError::new("io_error", format!("cannot open {display}: {e}")))?;
        let now = rustix::fs::fstat(&fd)
            .map_err(|e| ToolError::new("io_error", format!("cannot stat {display}: {e}")))?;
        let kind = FileType::from_raw_mode(now.st_mode);
        if kind != FileType::RegularFile {
            return Err(ToolError::new(
                "unsupported_file_type",
                format!("{display} is a {}, not a regular file", kind_name(kind)),
            ));
        }
        if now.st_ino != stat.st_ino {
            return Err(ToolError::new(
                "io_error",
                format!("{display} was replaced while it was being edited; read it again and retry"),
            ));
        }
        let mut bytes = Vec::with_capacity(now.st_size.max(0) as usize);
        std::fs::File::from(fd)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::new("io_error", format!("cannot read {display}: {e}")))?;
        let content = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
            ToolError::invalid_input(format!(
                "{display} is not valid UTF-8 (at byte {at}, line {line}); edit_file edits UTF-8 text only — rewrite the file with write_file instead"
            ))
        })?;
        let applied = edit::apply(
            &content,
            &input.old_string,
            &input.new_string,
            input.replace_all,
            &display,
        )?;
        let new_stat = atomic::write(&target, applied.content.as_bytes(), Some(&stat), &state.pending)
            .map_err(|e| atomic::write_error(&display, e))?;
        state.reads.record(ctx.session_id(), &target.key, &new_stat);
        let plural = if applied.count == 1 { "" } else { "s" };
        Ok(format!(
            "edited {display}: {} replacement{plural}\n{}",
            applied.count, applied.diff
        ))
    }
}
