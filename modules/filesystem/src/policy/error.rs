//! Why the filesystem module refuses its config at mount, as a kind; each
//! message names the key and the entry at fault.

/// A `working_dir`, `allowed_*_paths` or `denied_paths` entry the policy
/// cannot use.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// `working_dir` cannot be made absolute (`~` without a home).
    #[error("working_dir: {0}")]
    WorkingDir(String),
    /// An allowed root cannot be made absolute.
    #[error("{key} entry {entry:?}: {reason}")]
    Root {
        /// `allowed_read_paths` or `allowed_write_paths`.
        key: &'static str,
        /// The entry as written.
        entry: String,
        /// Why.
        reason: String,
    },
    /// A deny rule that is empty or only `/`.
    #[error("denied_paths entry {entry:?} is empty or `/`")]
    EmptyDenyRule {
        /// The entry as written.
        entry: String,
    },
    /// A deny rule whose path cannot be made absolute.
    #[error("denied_paths entry {entry:?}: {reason}")]
    DenyPath {
        /// The entry as written.
        entry: String,
        /// Why.
        reason: String,
    },
    /// A deny rule that is not a glob.
    #[error("denied_paths entry {entry:?} is not a valid glob: {error}")]
    DenyGlob {
        /// The pattern.
        entry: String,
        /// What globset said.
        error: globset::Error,
    },
    /// The deny rules do not compile together.
    #[error("denied_paths cannot be compiled: {0}")]
    DenyCompile(globset::Error),
}
