//! The validation report and its three renderings: human (with progress),
//! JSON and JUnit XML (for CI).

pub mod human;
pub mod json;
pub mod junit;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::check::{CheckResult, Outcome};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    /// Progress lines, then a summary.
    #[default]
    Human,
    /// One JSON document.
    Json,
    /// JUnit XML, one testcase per check.
    Junit,
}

/// Everything a validation found.
#[derive(Debug)]
pub struct Report {
    /// The library that was checked.
    pub library: PathBuf,
    /// Its manifest, when it loaded.
    pub manifest: Option<Value>,
    /// Every check, in order.
    pub checks: Vec<CheckResult>,
    /// Whether warnings count as failures.
    pub strict: bool,
    /// Wall time of the whole validation.
    pub duration: Duration,
}

/// How many checks came out each way.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Passed.
    pub pass: usize,
    /// Warned.
    pub warn: usize,
    /// Failed.
    pub fail: usize,
    /// Skipped.
    pub skip: usize,
}

impl Report {
    /// The tally.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for check in &self.checks {
            match check.outcome {
                Outcome::Pass => c.pass += 1,
                Outcome::Warn => c.warn += 1,
                Outcome::Fail => c.fail += 1,
                Outcome::Skip => c.skip += 1,
            }
        }
        c
    }

    /// Whether the module passes: nothing failed (and, strictly, nothing warned).
    pub fn ok(&self) -> bool {
        let c = self.counts();
        c.fail == 0 && (!self.strict || c.warn == 0)
    }

    /// The module's name, or the library's file name.
    pub fn module_name(&self) -> String {
        self.manifest
            .as_ref()
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| {
                self.library
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
    }

    /// Renders the report in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Human => human::summary(self),
            Format::Json => json::render(self),
            Format::Junit => junit::render(self),
        }
    }
}
