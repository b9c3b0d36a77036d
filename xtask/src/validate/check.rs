//! What a check reports: a name, an outcome and the reasons.

use serde::{Deserialize, Serialize};

/// Every check's name, `category.check`. Reports, tests and CI filters use
/// these strings, so they are stable.
pub mod names {
    /// The file opens as a shared library exporting a toolhost root module.
    pub const LOADING_LIBRARY: &str = "loading.library";
    /// The library was built against a toolhost-core this host can load.
    pub const LOADING_ABI_VERSION: &str = "loading.abi_version";
    /// The manifest parses and its name is valid.
    pub const LOADING_MANIFEST_NAME: &str = "loading.manifest_name";
    /// The manifest's version is semver.
    pub const LOADING_MANIFEST_VERSION: &str = "loading.manifest_version";
    /// `mount` succeeds with the given (or empty) config.
    pub const MOUNT_MOUNT: &str = "mount.mount";
    /// A wrong config is refused with a message, not a panic.
    pub const MOUNT_BAD_CONFIG: &str = "mount.bad_config";
    /// The cleanup handle runs without panicking or hanging.
    pub const MOUNT_CLEANUP: &str = "mount.cleanup";
    /// mount → cleanup → mount works and registers the same tools.
    pub const MOUNT_REMOUNT: &str = "mount.remount";
    /// The real toolhost host mounts the library from a plan.
    pub const MOUNT_HOST: &str = "mount.host";
    /// The spec is a well-formed ToolSpec document.
    pub const SPEC_FORMAT: &str = "spec.format";
    /// Tool names are snake_case and short enough for every client.
    pub const NAMES_SNAKE_CASE: &str = "names.snake_case";
    /// No two tools share a name.
    pub const NAMES_UNIQUE: &str = "names.unique";
    /// No tool takes a reserved name.
    pub const NAMES_RESERVED: &str = "names.reserved";
    /// The description is not empty.
    pub const DESCRIPTIONS_PRESENT: &str = "descriptions.present";
    /// The description fits the length budget.
    pub const DESCRIPTIONS_LENGTH: &str = "descriptions.length";
    /// The input schema is valid against its meta-schema and compiles.
    pub const INPUT_SCHEMA_META: &str = "input_schema.meta_schema";
    /// The input schema is of type object.
    pub const INPUT_SCHEMA_OBJECT: &str = "input_schema.type_object";
    /// `required` names only existing properties.
    pub const INPUT_SCHEMA_REQUIRED: &str = "input_schema.required";
    /// Every property has a description.
    pub const INPUT_SCHEMA_DESCRIPTIONS: &str = "input_schema.property_descriptions";
    /// The output schema, when present, is a valid schema.
    pub const SPEC_OUTPUT_SCHEMA: &str = "spec.output_schema";
    /// The effect is one of the known effects.
    pub const SPEC_EFFECT: &str = "spec.effect";
    /// The annotations agree with the effect.
    pub const SPEC_ANNOTATIONS: &str = "spec.annotations";
    /// Resource keys point at real input properties.
    pub const SPEC_RESOURCE_KEYS: &str = "spec.resource_keys";
    /// Aliases do not collide with names or each other.
    pub const SPEC_ALIASES: &str = "spec.aliases";
    /// `{}` as input: a well-formed result, no panic, abort or hang.
    pub const BEHAVIOUR_EMPTY_INPUT: &str = "behaviour.empty_input";
    /// Values of the wrong JSON type are refused cleanly.
    pub const BEHAVIOUR_WRONG_TYPES: &str = "behaviour.wrong_types";
    /// Very long strings do not crash or hang the tool.
    pub const BEHAVIOUR_OVERSIZED_STRINGS: &str = "behaviour.oversized_strings";
    /// Inputs generated from the schema (valid) run cleanly.
    pub const BEHAVIOUR_VALID_INPUTS: &str = "behaviour.valid_inputs";
    /// Inputs generated from the schema (invalid) are refused cleanly.
    pub const BEHAVIOUR_INVALID_INPUTS: &str = "behaviour.invalid_inputs";
    /// A long call returns promptly once cancelled.
    pub const BEHAVIOUR_CANCEL: &str = "behaviour.cancel";
    /// Boundary values ("", 0, -1, extremes, empty collections) at each
    /// typed property get a well-formed answer, never a panic.
    pub const BEHAVIOUR_BOUNDARY_INPUTS: &str = "behaviour.boundary_inputs";

    /// The behaviour checks, each run in its own process per tool.
    pub const BEHAVIOUR: [&str; 7] = [
        BEHAVIOUR_EMPTY_INPUT,
        BEHAVIOUR_WRONG_TYPES,
        BEHAVIOUR_OVERSIZED_STRINGS,
        BEHAVIOUR_VALID_INPUTS,
        BEHAVIOUR_INVALID_INPUTS,
        BEHAVIOUR_BOUNDARY_INPUTS,
        BEHAVIOUR_CANCEL,
    ];
}

/// How a check came out. Ordered from best to worst (skip aside).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Nothing wrong.
    Pass,
    /// Works, but likely to hurt an agent or a user; fails under `--strict`.
    Warn,
    /// Broken.
    Fail,
    /// Not run, because something it depends on failed or was excluded.
    Skip,
}

impl Outcome {
    /// The upper-case label used in human and JUnit output.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Warn => "WARN",
            Outcome::Fail => "FAIL",
            Outcome::Skip => "SKIP",
        }
    }
}

/// One check's result, for one tool or for the whole module.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CheckResult {
    /// The check's name (see [`names`]).
    pub name: String,
    /// The tool it is about, when it is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// pass, warn, fail or skip.
    pub outcome: Outcome,
    /// One line: what was found.
    pub message: String,
    /// Every finding behind the message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// Wall time of the check.
    #[serde(default)]
    pub duration_ms: f64,
}

impl CheckResult {
    /// A result with no details.
    pub fn new(name: &str, tool: Option<&str>, outcome: Outcome, message: impl Into<String>) -> Self {
        CheckResult {
            name: name.to_string(),
            tool: tool.map(str::to_string),
            outcome,
            message: message.into(),
            details: Vec::new(),
            duration_ms: 0.0,
        }
    }

    /// A passing result.
    pub fn pass(name: &str, tool: Option<&str>, message: impl Into<String>) -> Self {
        Self::new(name, tool, Outcome::Pass, message)
    }

    /// A failing result.
    pub fn fail(name: &str, tool: Option<&str>, message: impl Into<String>) -> Self {
        Self::new(name, tool, Outcome::Fail, message)
    }

    /// A skipped result.
    pub fn skip(name: &str, tool: Option<&str>, message: impl Into<String>) -> Self {
        Self::new(name, tool, Outcome::Skip, message)
    }

    /// The category: the part of the name before the dot.
    pub fn category(&self) -> &str {
        self.name.split('.').next().unwrap_or(&self.name)
    }

    /// `name [tool]`, for display.
    pub fn title(&self) -> String {
        match &self.tool {
            Some(tool) => format!("{} [{tool}]", self.name),
            None => self.name.clone(),
        }
    }
}

/// Collects the findings of one check and turns them into a result: the
/// worst finding decides the outcome, the first one of that kind the message.
#[derive(Default, Debug)]
pub struct Verdict {
    fails: Vec<String>,
    warns: Vec<String>,
    notes: Vec<String>,
}

impl Verdict {
    /// An empty verdict (a pass so far).
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a failure.
    pub fn fail(&mut self, message: impl Into<String>) {
        self.fails.push(message.into());
    }

    /// Records a warning.
    pub fn warn(&mut self, message: impl Into<String>) {
        self.warns.push(message.into());
    }

    /// Records a fact worth showing in the details.
    pub fn note(&mut self, message: impl Into<String>) {
        self.notes.push(message.into());
    }

    /// The result; `passed` is the message when nothing was found.
    pub fn finish(self, name: &str, tool: Option<&str>, passed: impl Into<String>) -> CheckResult {
        let (outcome, message) = if let Some(first) = self.fails.first() {
            (
                Outcome::Fail,
                summarize(first, self.fails.len() + self.warns.len()),
            )
        } else if let Some(first) = self.warns.first() {
            (Outcome::Warn, summarize(first, self.warns.len()))
        } else {
            (Outcome::Pass, passed.into())
        };
        let mut result = CheckResult::new(name, tool, outcome, message);
        if self.fails.len() + self.warns.len() > 1 {
            result
                .details
                .extend(self.fails.into_iter().map(|m| format!("fail: {m}")));
            result
                .details
                .extend(self.warns.into_iter().map(|m| format!("warn: {m}")));
        }
        result
            .details
            .extend(self.notes.into_iter().map(|m| format!("note: {m}")));
        result
    }
}

fn summarize(first: &str, count: usize) -> String {
    if count > 1 {
        format!(
            "{first} (and {} more finding{})",
            count - 1,
            if count == 2 { "" } else { "s" }
        )
    } else {
        first.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_finding_wins() {
        let mut v = Verdict::new();
        v.warn("w");
        v.fail("f");
        let r = v.finish("a.b", Some("t"), "ok");
        assert_eq!(r.outcome, Outcome::Fail);
        assert_eq!(r.message, "f (and 1 more finding)");
        assert_eq!(r.category(), "a");
        assert_eq!(r.title(), "a.b [t]");
        let r = Verdict::new().finish("a.b", None, "ok");
        assert_eq!((r.outcome, r.message.as_str()), (Outcome::Pass, "ok"));
    }
}
