//! `denied_paths`: rules that win over every allowed folder.
//!
//! A rule without `/` (`.git`, `.env*`) names a file or folder anywhere below
//! an allowed root and is matched against each component. A rule with `/` or
//! a leading `~` is a path (glob allowed) and denies it and everything below.
//!
//! All rules of a kind are one [`GlobSet`]: it already answers literal
//! patterns with a hash lookup and `prefix*` patterns with a prefix test, so
//! nothing here compares bytes by hand.

use std::path::Path;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use super::PolicyError;

use super::path::{absolutize, normalized};

/// The compiled `denied_paths`.
pub struct DenyRules {
    /// The rules as written, for messages; the sets' patterns point here.
    texts: Vec<String>,
    /// Name rules, matched against each component below a root.
    names: GlobSet,
    /// For each pattern of `names`, its rule's index in `texts`.
    name_rule: Vec<usize>,
    /// Path rules (each may have two forms: as written and its real
    /// location), matched against the path and each of its ancestors.
    paths: GlobSet,
    /// For each pattern of `paths`, its rule's index in `texts`.
    path_rule: Vec<usize>,
}

/// A rule as a glob. `separator` is whether a wildcard must not match `/`:
/// a path rule needs that; a name rule is matched against one component,
/// which holds no `/`, so the option cannot change what it matches, and
/// without it globset answers `prefix*` and `*.ext` rules with a prefix or
/// extension test instead of compiling a regex (the default `.env*` cost
/// two DFAs at every mount: about a twentieth of `toolhost serve`'s CPU
/// before it answered `initialize`).
fn glob(pattern: &str, separator: bool) -> Result<Glob, PolicyError> {
    GlobBuilder::new(pattern)
        .literal_separator(separator)
        .backslash_escape(true)
        .build()
        .map_err(|error| PolicyError::DenyGlob {
            entry: pattern.to_string(),
            error,
        })
}

fn build(set: GlobSetBuilder) -> Result<GlobSet, PolicyError> {
    set.build().map_err(PolicyError::DenyCompile)
}

impl DenyRules {
    /// Compiles the rules; relative path rules resolve against `working_dir`.
    pub fn new(rules: &[String], working_dir: &Path, home: Option<&Path>) -> Result<Self, PolicyError> {
        let (mut names, mut name_rule) = (GlobSetBuilder::new(), Vec::new());
        let (mut paths, mut path_rule) = (GlobSetBuilder::new(), Vec::new());
        for (index, text) in rules.iter().enumerate() {
            let trimmed = text.trim_end_matches('/');
            if trimmed.is_empty() {
                return Err(PolicyError::EmptyDenyRule { entry: text.clone() });
            }
            if !trimmed.contains('/') && !trimmed.starts_with('~') {
                names.add(glob(trimmed, false)?);
                name_rule.push(index);
                continue;
            }
            let abs = absolutize(trimmed, working_dir, home).map_err(|e| PolicyError::DenyPath {
                entry: text.clone(),
                reason: e.message().to_string(),
            })?;
            let mut forms = vec![abs.clone()];
            // A literal path that exists may be reached through a symlinked
            // ancestor (a symlinked home): deny its real location too.
            if let Ok(real) = std::fs::canonicalize(&abs) {
                if real != abs {
                    forms.push(real);
                }
            }
            for form in forms {
                paths.add(glob(&form.to_string_lossy(), true)?);
                path_rule.push(index);
            }
        }
        Ok(DenyRules {
            texts: rules.to_vec(),
            names: build(names)?,
            name_rule,
            paths: build(paths)?,
            path_rule,
        })
    }

    /// The rule that denies `abs` (whose part below its allowed root is
    /// `below_root`), if any; the first in the plan's order when several do.
    pub fn matching(&self, abs: &Path, below_root: &Path) -> Option<&str> {
        let abs = normalized(abs);
        let mut hits = Vec::new();
        let mut first: Option<usize> = None;
        let mut note = |rule: usize| first = Some(first.map_or(rule, |f| f.min(rule)));
        if !self.name_rule.is_empty() {
            for component in below_root.components() {
                self.names
                    .matches_into(Path::new(component.as_os_str()), &mut hits);
                hits.iter().for_each(|&p| note(self.name_rule[p]));
            }
        }
        if !self.path_rule.is_empty() {
            for ancestor in abs.ancestors() {
                self.paths.matches_into(ancestor, &mut hits);
                hits.iter().for_each(|&p| note(self.path_rule[p]));
            }
        }
        first.map(|rule| self.texts[rule].as_str())
    }
}

/// The default rules as owned strings.
pub fn defaults() -> Vec<String> {
    crate::config::DEFAULT_DENIED
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_any_component_paths_match_ancestors() {
        let rules = DenyRules::new(
            &[
                ".git".into(),
                ".env*".into(),
                "~/.ssh".into(),
                "./secrets".into(),
                "cache/".into(),
            ],
            Path::new("/w"),
            Some(Path::new("/home/u")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let check = |abs: &str, below: &str| {
            rules
                .matching(Path::new(abs), Path::new(below))
                .map(str::to_string)
        };
        assert_eq!(check("/w/.git/config", ".git/config").as_deref(), Some(".git"));
        assert_eq!(check("/w/a/.env.local", "a/.env.local").as_deref(), Some(".env*"));
        assert_eq!(
            check("/home/u/.ssh/id_rsa", ".ssh/id_rsa").as_deref(),
            Some("~/.ssh")
        );
        assert_eq!(check("/w/secrets/k", "secrets/k").as_deref(), Some("./secrets"));
        assert_eq!(check("/w/a/cache/k", "a/cache/k").as_deref(), Some("cache/"));
        assert_eq!(check("/w/src/main.rs", "src/main.rs"), None);
        assert_eq!(check("/w/.gitignore", ".gitignore"), None);
        assert_eq!(check("/w/a/secrets/k", "a/secrets/k"), None);
        assert_eq!(
            check("/w/x.git/k", "x.git/k"),
            None,
            "a name rule is the whole component"
        );
        assert_eq!(
            check("/home/u/.ssh2/k", ".ssh2/k"),
            None,
            "a path rule is whole components"
        );
    }

    #[test]
    fn wildcards_match_any_bytes_of_a_name_and_stay_within_a_component() {
        use std::os::unix::ffi::OsStrExt;
        let rules = DenyRules::new(
            &[
                ".env*".into(),
                "*.pem".into(),
                "id_?sa".into(),
                "{cred,tok}s".into(),
                "./build/*.log".into(),
            ],
            Path::new("/w"),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let check = |below: &[u8]| {
            let below = Path::new(std::ffi::OsStr::from_bytes(below));
            rules
                .matching(&Path::new("/w").join(below), below)
                .map(str::to_string)
        };
        // File names need not be UTF-8: a rule's wildcard covers any bytes.
        assert_eq!(check(b"a/.env\xff").as_deref(), Some(".env*"));
        assert_eq!(check(b"\xfe.pem").as_deref(), Some("*.pem"));
        assert_eq!(check(b"a/.env.local/x").as_deref(), Some(".env*"));
        assert_eq!(check(b"k/id_rsa").as_deref(), Some("id_?sa"));
        assert_eq!(check(b"toks/x").as_deref(), Some("{cred,tok}s"));
        assert_eq!(check(b"a/env"), None);
        assert_eq!(check(b"a/x.pem.txt"), None);
        assert_eq!(check(b"id_rrsa"), None);
        // A path rule's wildcard stays within one component.
        assert_eq!(check(b"build/a.log").as_deref(), Some("./build/*.log"));
        assert_eq!(check(b"build/sub/a.log"), None);
    }

    #[test]
    fn the_first_rule_in_the_plan_names_the_denial() {
        let rules = DenyRules::new(
            &["*.pem".into(), "keys".into(), "/w/keys".into()],
            Path::new("/w"),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            rules.matching(Path::new("/w/keys/a.pem"), Path::new("keys/a.pem")),
            Some("*.pem")
        );
        assert_eq!(
            rules.matching(Path::new("/w/keys/a"), Path::new("keys/a")),
            Some("keys")
        );
        assert!(
            DenyRules::new(&["[".into()], Path::new("/w"), None).is_err(),
            "a bad glob is refused"
        );
    }
}
