//! Allowed roots: the folders a tool may work beneath.

use std::path::{Path, PathBuf};

use super::path::{absolutize, below};

/// One allowed folder, by the path the plan gave and by its real location.
#[derive(Debug, Clone)]
pub struct Root {
    /// As configured (for messages).
    pub configured: String,
    /// Absolute and lexically normalized.
    pub lexical: PathBuf,
    /// With symlinks resolved (the same as `lexical` when it did not exist at mount).
    pub canonical: PathBuf,
}

impl Root {
    /// Resolves a configured entry against the working dir and home.
    pub fn new(configured: &str, working_dir: &Path, home: Option<&Path>) -> Result<Root, String> {
        let lexical = absolutize(configured, working_dir, home).map_err(|e| e.message().to_string())?;
        let canonical = std::fs::canonicalize(&lexical).unwrap_or_else(|_| lexical.clone());
        Ok(Root {
            configured: configured.to_string(),
            lexical,
            canonical,
        })
    }

    /// The part of `abs` below this root (either form), if it is inside.
    pub fn below(&self, abs: &Path) -> Option<PathBuf> {
        below(abs, &self.lexical).or_else(|| below(abs, &self.canonical))
    }

    /// The part of a real (canonical) path below this root.
    pub fn below_real(&self, real: &Path) -> Option<PathBuf> {
        below(real, &self.canonical)
    }
}

/// A set of roots, searched in order.
#[derive(Debug, Clone)]
pub struct Roots {
    /// The roots.
    pub roots: Vec<Root>,
    /// The config key they came from, for messages.
    pub key: &'static str,
}

impl Roots {
    /// The first root containing `abs`, with the rest of the path.
    pub fn find(&self, abs: &Path) -> Option<(&Root, PathBuf)> {
        self.roots.iter().find_map(|r| r.below(abs).map(|rel| (r, rel)))
    }

    /// The first root containing a real path, with the rest of the path.
    pub fn find_real(&self, real: &Path) -> Option<(&Root, PathBuf)> {
        self.roots
            .iter()
            .find_map(|r| r.below_real(real).map(|rel| (r, rel)))
    }

    /// `key = ["a", "b"]`, for denial messages.
    pub fn rule(&self) -> String {
        let list: Vec<String> = self.roots.iter().map(|r| format!("{:?}", r.configured)).collect();
        format!("{} = [{}]", self.key, list.join(", "))
    }
}
