//! Hard links: a regular file with more than one name.
//!
//! A hard link inside an allowed folder may be another name of a file that
//! is denied (`.env`, `.git/hooks/…`) or outside every allowed folder, and
//! nothing on the file says which of its names is the "real" one: the
//! kernel keeps no list of them. So such files are refused by default, for
//! reading, writing and searching alike; `allow_hard_links = true` serves
//! them for trees that are hard-linked on purpose (pnpm, nix, ccache).

use rustix::fs::{FileType, Stat};
use toolhost_core::{Status, ToolError};

/// The config key that lets hard-linked files through.
pub const KEY: &str = "allow_hard_links";

/// Whether `stat` is a regular file with more than one name.
pub fn is_multi_linked(stat: &Stat) -> bool {
    FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && stat.st_nlink > 1
}

/// The refusal for a hard-linked file (`verb` is read, write or edit).
pub fn refusal(verb: &str, display: &str, stat: &Stat) -> ToolError {
    ToolError::with_status(
        Status::PolicyDenied,
        "hard_link",
        format!(
            "{verb} denied: {display} is a hard link (the file has {} names), and another name of it may be denied or outside the allowed folders; hard-linked files are refused unless the mount plan sets {KEY} = true in the filesystem module's [tools.config]",
            stat.st_nlink
        ),
    )
}
