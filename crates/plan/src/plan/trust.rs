//! Trusted plans: a plan that discovery finds (`./toolhost.toml` or a
//! parent folder's) decides what an agent may do, and anyone who can write
//! a file there (another user, or the agent itself on its last run) could
//! plant one. So such a plan is loaded only when its owner and mode are
//! safe ([`check_owner`]) and the user trusted exactly this content with
//! `toolhost trust`: a record in the user's config folder, keyed by the
//! plan's real path, holding the SHA-256 of the plan and of every file it
//! makes the host run or load ([`super::control_plane::pinned_files`]). A
//! plan named on purpose (`--plan`, `$TOOLHOST_PLAN`) needs no record but
//! still passes the owner check; the built-in plan and plans under the
//! user's config folder are the user's own.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Plan;

/// The hash recorded for a pinned file that could not be read.
pub const MISSING: &str = "missing";

/// What `toolhost trust` stores for one plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    /// The plan's real path.
    pub plan: PathBuf,
    /// SHA-256 of the plan's bytes.
    pub plan_sha256: String,
    /// SHA-256 of each pinned file (or [`MISSING`]).
    pub files: BTreeMap<PathBuf, String>,
}

/// Whether a loaded plan may be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// Named on purpose, built in, or the user's own: no record needed.
    NotNeeded(&'static str),
    /// Trusted with exactly this content.
    Trusted,
    /// New or changed since it was trusted: what differs, one line each.
    Untrusted(Vec<String>),
}

impl TrustState {
    /// One line for `toolhost check`.
    pub fn describe(&self) -> String {
        match self {
            TrustState::NotNeeded(why) => format!("not needed ({why})"),
            TrustState::Trusted => "trusted (this content and its pinned files)".into(),
            TrustState::Untrusted(what) => format!("NOT trusted: {}", what.join("; ")),
        }
    }
}

/// Why a plan's file cannot be used whoever trusted it.
#[derive(Debug, thiserror::Error)]
pub enum OwnerProblem {
    /// Owned by another user (not root).
    #[error("{} is owned by uid {owner}, not by you (uid {me}) or root; another user could have planted it", file.display())]
    Owner {
        /// The plan.
        file: PathBuf,
        /// Its owner.
        owner: u32,
        /// The running user.
        me: u32,
    },
    /// Writable by group or others.
    #[error("{} is writable by {who} (mode {mode:o}); make it writable by its owner only (chmod go-w)", file.display())]
    Mode {
        /// The plan.
        file: PathBuf,
        /// `group`, `others`, or both.
        who: &'static str,
        /// Its permission bits.
        mode: u32,
    },
    /// Its metadata cannot be read.
    #[error("cannot inspect {}: {source}", file.display())]
    Stat {
        /// The plan.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

pub use crate::private_file::current_uid;

/// Whether `file` is owned by this user or root.
pub fn owned_by_us(file: &Path) -> bool {
    std::fs::metadata(file).is_ok_and(|m| m.uid() == current_uid() || m.uid() == 0)
}

/// Checks that `file` (followed if a link) is owned by this user or root
/// and writable by nobody else.
pub fn check_owner(file: &Path) -> Result<(), OwnerProblem> {
    let meta = std::fs::metadata(file).map_err(|source| OwnerProblem::Stat {
        file: file.to_path_buf(),
        source,
    })?;
    let me = current_uid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(OwnerProblem::Owner {
            file: file.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (false, false) => return Ok(()),
        (true, false) => "its group",
        (false, true) => "others",
        (true, true) => "its group and others",
    };
    Err(OwnerProblem::Mode {
        file: file.to_path_buf(),
        who,
        mode,
    })
}

/// Hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256 of a regular file's content. Opened without blocking and
/// checked on the handle first, so a FIFO or a device named as a module
/// or hook is an error, never a hang or an endless read.
pub fn file_sha256(file: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(file)?;
    if !handle.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match handle.read(&mut buf)? {
            0 => break,
            n => hasher.update(&buf[..n]),
        }
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The folder trust records live in: `<user config>/toolhost/trust`.
pub fn trust_dir() -> Option<PathBuf> {
    super::discover::user_config_dir().map(|d| d.join("trust"))
}

/// The record file for the plan at `real` (its real path).
fn record_file(real: &Path) -> Option<PathBuf> {
    Some(trust_dir()?.join(format!("{}.json", super::state_dir::project_id(real))))
}

/// The record the plan would need: its real path, the hash of `text` (the
/// bytes it was parsed from) and its pins.
pub fn expected(plan: &Plan, text: &[u8]) -> Record {
    let abs = std::path::absolute(&plan.file).unwrap_or_else(|_| plan.file.clone());
    Record {
        plan: toolhost_core::protected::real_location(&abs),
        plan_sha256: sha256_hex(text),
        files: plan.pins.clone(),
    }
}

/// Compares the plan with its record.
pub fn state(expected: &Record) -> TrustState {
    let stored = record_file(&expected.plan)
        .and_then(|f| std::fs::read(f).ok())
        .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
        .filter(|r| r.plan == expected.plan);
    let Some(stored) = stored else {
        return TrustState::Untrusted(vec![format!(
            "{} was never trusted by you",
            expected.plan.display()
        )]);
    };
    let mut what = Vec::new();
    if stored.plan_sha256 != expected.plan_sha256 {
        what.push(format!(
            "{} changed since you trusted it",
            expected.plan.display()
        ));
    }
    for (file, hash) in &expected.files {
        match stored.files.get(file) {
            None => what.push(format!(
                "it now runs or loads {}, which you did not trust",
                file.display()
            )),
            Some(old) if old != hash => what.push(format!("{} changed since you trusted it", file.display())),
            Some(_) => {}
        }
    }
    if what.is_empty() {
        TrustState::Trusted
    } else {
        TrustState::Untrusted(what)
    }
}

/// Stores `record` (folders 0700, the file 0600, replaced by rename).
pub fn store(record: &Record) -> std::io::Result<PathBuf> {
    let file = record_file(&record.plan)
        .ok_or_else(|| std::io::Error::other("no config folder: set HOME or XDG_CONFIG_HOME"))?;
    let text = serde_json::to_vec_pretty(record).map_err(std::io::Error::other)?;
    crate::private_file::write_private(&file, &text)?;
    Ok(file)
}

/// The refusal printed for an untrusted plan.
pub fn refusal(plan: &Path, what: &[String]) -> String {
    format!(
        "refusing to load {}: {}. A plan found by discovery decides what tools may do, so it is used \
         only as you trusted it: review it and the files it runs with `toolhost trust --show`, then \
         trust it with `toolhost trust` (or name a plan on purpose with --plan)",
        plan.display(),
        what.join("; ")
    )
}
