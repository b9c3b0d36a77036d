//! Alias profiles: a trained tool family's own name *and schema* for a
//! canonical tool, with a declarative mapping onto the canonical input.
//!
//! Models are trained on Claude Code's and Amp's tools. A plain alias
//! (`Bash` → `bash`) only renames; a profile also accepts that family's
//! parameters exactly (`-i`, `bash_id`, `timeout` in milliseconds) and maps
//! them onto the canonical tool's (`case_insensitive`, `id`, seconds). The
//! mapping is data ([`ProfileDef`]), not code, so a plan can add profiles
//! (`[[alias_profiles]]`) in the same shape as the built-in families
//! (`families.json`).
//!
//! A call by a profile's name is validated against the profile's schema
//! first (errors name the caller's parameters), then mapped, then
//! validated against the canonical schema (errors translated back to the
//! caller's names where a parameter maps one to one).

mod mapping;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

pub use mapping::MapError;

/// One profile as written in `families.json` or a plan's
/// `[[alias_profiles]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileDef {
    /// The name the trained family calls the tool by.
    pub name: String,
    /// The family (`claude_code`, `amp`, or a plan's own).
    #[serde(default = "plan_family")]
    pub family: String,
    /// The canonical tool it maps onto (its public name).
    pub tool: String,
    /// What MCP `tools/list` shows for the alias (`list_aliases`); the
    /// canonical tool's description when absent.
    #[serde(default)]
    pub description: Option<String>,
    /// The family's input schema (JSON Schema, an object schema).
    pub schema: Value,
    /// How each of the family's parameters maps; a parameter not listed
    /// keeps its name and value.
    #[serde(default)]
    pub params: BTreeMap<String, ParamRule>,
    /// Canonical parameters given when the mapped input lacks them.
    #[serde(default)]
    pub defaults: BTreeMap<String, Value>,
    /// Canonical parameters always set to a constant.
    #[serde(default)]
    pub set: BTreeMap<String, Value>,
}

fn plan_family() -> String {
    "plan".into()
}

/// How one of the family's parameters becomes a canonical one.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamRule {
    /// The canonical parameter (default: the same name).
    #[serde(default)]
    pub to: Option<String>,
    /// Multiplies a number (`0.001`: milliseconds to seconds). A result
    /// that is a whole number is passed as an integer.
    #[serde(default)]
    pub scale: Option<f64>,
    /// Accepted and not passed on.
    #[serde(default)]
    pub drop: bool,
    /// For an array of strings: each item formatted with this template
    /// (`{}` is the item), the results joined with `join`.
    #[serde(default)]
    pub each: Option<String>,
    /// Separator for `each` (default a space).
    #[serde(default)]
    pub join: Option<String>,
    /// Appends the (formatted) value to the canonical string parameter,
    /// after a space, instead of setting it.
    #[serde(default)]
    pub append: bool,
}

/// An alias profile definition the host cannot use (a plan's
/// `[[alias_profiles]]`, or a built-in one).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The schema has no `properties`.
    #[error("alias profile '{profile}': `schema` needs `properties`")]
    NoProperties {
        /// The profile's name.
        profile: String,
    },
    /// A rule for a parameter the schema does not have.
    #[error("alias profile '{profile}': a rule for '{param}', which its schema does not have")]
    UnknownParam {
        /// The profile's name.
        profile: String,
        /// The parameter.
        param: String,
    },
    /// A parameter's rule contradicts itself.
    #[error("alias profile '{profile}': '{param}' {conflict}")]
    Conflict {
        /// The profile's name.
        profile: String,
        /// The parameter.
        param: String,
        /// What contradicts what.
        conflict: RuleConflict,
    },
    /// The schema does not compile.
    #[error("alias profile '{profile}' has an invalid schema: {detail}")]
    Schema {
        /// The profile's name.
        profile: String,
        /// What the JSON Schema compiler said (its error borrows the
        /// schema, so it is kept as text).
        detail: String,
    },
}

/// Two parts of one parameter rule that cannot both apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RuleConflict {
    /// `drop` with `to`, `scale` or `each`.
    #[error("is dropped and mapped at once")]
    DroppedAndMapped,
    /// `scale` with `each`.
    #[error("has both `scale` (a number) and `each` (a list)")]
    ScaleAndEach,
}

/// A checked profile with its schema compiled on first use.
#[derive(Debug)]
pub struct Profile {
    def: Source,
    validator: OnceLock<Result<jsonschema::Validator, ProfileError>>,
}

/// Where a profile's definition comes from.
#[derive(Debug)]
enum Source {
    /// A plan's `[[alias_profiles]]` entry, checked and compiled at load.
    Plan(Arc<ProfileDef>),
    /// A built-in one: its definition stays in [`builtin`]'s table.
    Builtin(&'static Builtin),
}

impl Profile {
    /// Checks a definition: an object schema, rules only for parameters
    /// the schema has, and a schema that compiles (compiled here, so a
    /// plan's broken profile fails the load and `toolhost check`).
    pub fn new(def: impl Into<Arc<ProfileDef>>) -> Result<Profile, ProfileError> {
        let def = def.into();
        check(&def)?;
        let compiled = compile(&def)?;
        Ok(Profile {
            def: Source::Plan(def),
            validator: OnceLock::from(Ok(compiled)),
        })
    }

    /// A built-in profile ([`builtin`]): its schema is read and compiled
    /// on first use. Compiling the built-in families' fifteen schemas (and,
    /// for the first, JSON Schema's own meta-schema) was about a tenth of
    /// the CPU `toolhost serve` spent before answering `initialize`, and
    /// reading them into JSON values most of what the families still
    /// cost, mostly for profiles no client calls. That every built-in
    /// profile passes [`Profile::new`]'s checks is held by a unit test:
    /// the table is part of the binary, not a user's input.
    pub fn builtin(def: &'static Builtin) -> Profile {
        Profile {
            def: Source::Builtin(def),
            validator: OnceLock::new(),
        }
    }

    /// The whole definition (a built-in profile's is made when first
    /// asked for).
    pub fn def(&self) -> &ProfileDef {
        match &self.def {
            Source::Plan(def) => def,
            Source::Builtin(builtin) => builtin.def(),
        }
    }

    /// The family (`claude_code`, `amp`, or a plan's own).
    pub fn family(&self) -> &str {
        match &self.def {
            Source::Plan(def) => &def.family,
            Source::Builtin(builtin) => &builtin.head.family,
        }
    }

    /// The canonical tool it maps onto (its public name).
    pub fn tool(&self) -> &str {
        match &self.def {
            Source::Plan(def) => &def.tool,
            Source::Builtin(builtin) => &builtin.head.tool,
        }
    }

    /// The alias's name.
    pub fn name(&self) -> &str {
        match &self.def {
            Source::Plan(def) => &def.name,
            Source::Builtin(builtin) => &builtin.head.name,
        }
    }

    /// The family's name as people read it (`Claude Code`, `Amp`).
    pub fn family_label(&self) -> String {
        match self.family() {
            "claude_code" => "Claude Code".into(),
            "amp" => "Amp".into(),
            other => other.to_string(),
        }
    }

    /// The profile's own validator.
    pub fn validator(&self) -> Result<&jsonschema::Validator, &ProfileError> {
        self.validator.get_or_init(|| compile(self.def())).as_ref()
    }

    /// The caller's input as the canonical tool's input.
    pub fn to_canonical(&self, input: &Value) -> Result<Value, MapError> {
        mapping::to_canonical(self.def(), input)
    }

    /// The caller's parameter that became canonical parameter `canonical`
    /// (for error messages); `None` when none did one to one.
    pub fn caller_param(&self, canonical: &str) -> Option<&str> {
        mapping::caller_param(self.def(), canonical)
    }

    /// The names of the schema's top-level parameters.
    pub fn params(&self) -> impl Iterator<Item = &str> {
        self.def()
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|p| p.keys().map(String::as_str))
    }
}

/// A built-in profile as `families.json` writes it, read at start with
/// its schema (most of the text) kept as JSON text.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinText<'a> {
    name: String,
    #[serde(default = "plan_family")]
    family: String,
    tool: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(borrow)]
    schema: &'a RawValue,
    #[serde(default)]
    params: BTreeMap<String, ParamRule>,
    #[serde(default)]
    defaults: BTreeMap<String, Value>,
    #[serde(default)]
    set: BTreeMap<String, Value>,
}

/// A built-in profile (Claude Code's, Amp's): its name, family and tool
/// known at start, which is all the registry needs to mount it; its
/// definition made once, when a call, a listing or `describe` first needs
/// it.
#[derive(Debug)]
pub struct Builtin {
    head: BuiltinText<'static>,
    def: OnceLock<Arc<ProfileDef>>,
}

impl Builtin {
    /// The alias's name.
    pub fn name(&self) -> &str {
        &self.head.name
    }

    /// The definition, as reading the profile's text whole would give it
    /// (a unit test compares the two).
    pub fn def(&self) -> &Arc<ProfileDef> {
        self.def.get_or_init(|| {
            let head = &self.head;
            // JSON text the table's parse has already checked: it reads.
            let schema = serde_json::from_str(head.schema.get()).unwrap_or_else(|e| {
                tracing::error!(profile = %head.name, "a built-in alias profile's schema does not read: {e}");
                Value::Null
            });
            Arc::new(ProfileDef {
                name: head.name.clone(),
                family: head.family.clone(),
                tool: head.tool.clone(),
                description: head.description.clone(),
                schema,
                params: head.params.clone(),
                defaults: head.defaults.clone(),
                set: head.set.clone(),
            })
        })
    }
}

/// The built-in families (Claude Code, Amp), from `families.json`.
pub fn builtin() -> &'static [Builtin] {
    static BUILTIN: OnceLock<Vec<Builtin>> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        #[derive(Deserialize)]
        struct File<'a> {
            #[serde(borrow)]
            profiles: Vec<BuiltinText<'a>>,
        }
        // The file is part of the binary and checked by a unit test; a
        // broken edit fails that test, not a user's call.
        serde_json::from_str::<File>(include_str!("families.json"))
            .map(|f| {
                f.profiles
                    .into_iter()
                    .map(|head| Builtin {
                        head,
                        def: OnceLock::new(),
                    })
                    .collect()
            })
            .unwrap_or_else(|e| {
                tracing::error!("the built-in alias profiles do not parse: {e}");
                Vec::new()
            })
    })
}

/// The structural checks of a definition, its schema not compiled: an
/// object schema, rules only for parameters it has, no rule that
/// contradicts itself.
fn check(def: &ProfileDef) -> Result<(), ProfileError> {
    let props = def
        .schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| ProfileError::NoProperties {
            profile: def.name.clone(),
        })?;
    let conflict = |param: &str, conflict| ProfileError::Conflict {
        profile: def.name.clone(),
        param: param.to_string(),
        conflict,
    };
    for (param, rule) in &def.params {
        if !props.contains_key(param) {
            return Err(ProfileError::UnknownParam {
                profile: def.name.clone(),
                param: param.clone(),
            });
        }
        if rule.drop && (rule.to.is_some() || rule.scale.is_some() || rule.each.is_some()) {
            return Err(conflict(param, RuleConflict::DroppedAndMapped));
        }
        if rule.scale.is_some() && rule.each.is_some() {
            return Err(conflict(param, RuleConflict::ScaleAndEach));
        }
    }
    Ok(())
}

/// The profile's schema, compiled.
fn compile(def: &ProfileDef) -> Result<jsonschema::Validator, ProfileError> {
    jsonschema::validator_for(&def.schema).map_err(|e| ProfileError::Schema {
        profile: def.name.clone(),
        detail: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_profile_is_valid_and_read_as_the_whole_file_reads() {
        #[derive(Deserialize)]
        struct File {
            profiles: Vec<ProfileDef>,
        }
        // The reference: each profile read whole, as a plan's would be.
        let whole: File = serde_json::from_str(include_str!("families.json")).expect("families.json parses");
        assert_eq!(builtin().len(), whole.profiles.len(), "every profile reads");
        for (builtin, def) in builtin().iter().zip(&whole.profiles) {
            assert_eq!(format!("{:?}", builtin.def()), format!("{def:?}"));
            Profile::new(builtin.def().clone()).unwrap_or_else(|e| panic!("{e}"));
            let profile = Profile::builtin(builtin);
            assert_eq!(
                (profile.name(), profile.family(), profile.tool()),
                (def.name.as_str(), def.family.as_str(), def.tool.as_str())
            );
            assert!(std::ptr::eq(profile.def(), &**builtin.def()), "made once");
            assert!(profile.validator().is_ok());
        }
    }

    #[test]
    fn a_rule_for_a_parameter_the_schema_lacks_is_refused() {
        let def: ProfileDef = serde_json::from_value(serde_json::json!({
            "name": "X", "tool": "t",
            "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
            "params": {"b": {"to": "c"}}
        }))
        .expect("def");
        let err = Profile::new(def).expect_err("refused");
        assert!(
            matches!(&err, ProfileError::UnknownParam { param, .. } if param == "b"),
            "{err}"
        );
        assert!(err.to_string().contains("'b'"), "{err}");
    }
}
