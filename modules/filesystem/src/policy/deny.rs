//! `denied_paths`: rules that win over every allowed folder.
//!
//! A rule without `/` (`.git`, `.env*`) names a file or folder anywhere below
//! an allowed root and is matched against each component. A rule with `/` or
//! a leading `~` is a path (glob allowed) and denies it and everything below.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

use super::path::{absolutize, normalized};

/// One compiled rule, with the text it came from (for messages).
struct Rule {
    text: String,
    kind: Kind,
}

enum Kind {
    /// Matches any single component below a root.
    Name(Matcher),
    /// Matches an absolute path or any of its ancestors.
    Path(Vec<Matcher>),
}

/// A compiled pattern. The common shapes are compared as bytes (what the
/// glob would answer, without its machinery): no glob syntax at all, or one
/// trailing `*` (which, with `literal_separator`, matches anything but `/`).
enum Matcher {
    Literal(Vec<u8>),
    Prefix(Vec<u8>),
    Glob(GlobMatcher),
}

impl Matcher {
    fn new(pattern: &str) -> Result<Matcher, String> {
        let is_meta = |c: char| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\');
        match pattern.strip_suffix('*') {
            _ if !pattern.contains(is_meta) => Ok(Matcher::Literal(pattern.as_bytes().to_vec())),
            Some(head) if !head.contains(is_meta) => Ok(Matcher::Prefix(head.as_bytes().to_vec())),
            _ => glob(pattern).map(Matcher::Glob),
        }
    }

    fn is_match(&self, candidate: &Path) -> bool {
        let bytes = candidate.as_os_str().as_bytes();
        match self {
            Matcher::Literal(text) => bytes == text.as_slice(),
            Matcher::Prefix(head) => bytes
                .strip_prefix(head.as_slice())
                .is_some_and(|rest| !rest.contains(&b'/')),
            Matcher::Glob(glob) => glob.is_match(candidate),
        }
    }
}

/// The compiled `denied_paths`.
pub struct DenyRules {
    rules: Vec<Rule>,
}

fn glob(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("denied_paths entry {pattern:?} is not a valid glob: {e}"))
}

impl DenyRules {
    /// Compiles the rules; relative path rules resolve against `working_dir`.
    pub fn new(rules: &[String], working_dir: &Path, home: Option<&Path>) -> Result<Self, String> {
        let mut compiled = Vec::new();
        for text in rules {
            let trimmed = text.trim_end_matches('/');
            if trimmed.is_empty() {
                return Err(format!("denied_paths entry {text:?} is empty or `/`"));
            }
            let kind = if !trimmed.contains('/') && !trimmed.starts_with('~') {
                Kind::Name(Matcher::new(trimmed)?)
            } else {
                let abs = absolutize(trimmed, working_dir, home)
                    .map_err(|e| format!("denied_paths entry {text:?}: {}", e.message()))?;
                let mut forms = vec![abs.clone()];
                // A literal path that exists may be reached through a symlinked
                // ancestor (a symlinked home): deny its real location too.
                if let Ok(real) = std::fs::canonicalize(&abs) {
                    if real != abs {
                        forms.push(real);
                    }
                }
                let mut matchers = Vec::new();
                for form in forms {
                    let pattern = form.to_string_lossy().into_owned();
                    matchers.push(Matcher::new(&pattern)?);
                }
                Kind::Path(matchers)
            };
            compiled.push(Rule {
                text: text.clone(),
                kind,
            });
        }
        Ok(DenyRules { rules: compiled })
    }

    /// The rule that denies `abs` (whose part below its allowed root is
    /// `below_root`), if any.
    pub fn matching(&self, abs: &Path, below_root: &Path) -> Option<&str> {
        let abs = normalized(abs);
        self.rules.iter().find_map(|rule| {
            let hit = match &rule.kind {
                Kind::Name(m) => below_root
                    .components()
                    .any(|c| m.is_match(Path::new(c.as_os_str()))),
                Kind::Path(ms) => abs.ancestors().any(|a| ms.iter().any(|m| m.is_match(a))),
            };
            hit.then_some(rule.text.as_str())
        })
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
    fn byte_matchers_answer_as_the_glob_would() {
        let patterns = [".git", ".env*", "/home/u/.ssh", "/w/cache*", "*", "a*", "/a/b"];
        let candidates = [
            ".git",
            ".gitignore",
            "x.git",
            ".env",
            ".env.local",
            ".en",
            "/home/u/.ssh",
            "/home/u/.ssh2",
            "/home/u",
            "/w/cache",
            "/w/cachex",
            "/w/cache/x",
            "/w/cachex/y",
            "",
            "a",
            "ab",
            "a/b",
            "ba",
            "/a/b",
            "/a/b/c",
            "/a",
        ];
        for pattern in patterns {
            let fast = Matcher::new(pattern).unwrap_or_else(|e| panic!("{e}"));
            assert!(!matches!(fast, Matcher::Glob(_)), "{pattern}");
            let slow = glob(pattern).unwrap_or_else(|e| panic!("{e}"));
            for c in candidates {
                assert_eq!(
                    fast.is_match(Path::new(c)),
                    slow.is_match(Path::new(c)),
                    "{pattern} vs {c}"
                );
            }
        }
        assert!(matches!(Matcher::new("*.pem"), Ok(Matcher::Glob(_))));
        assert!(matches!(Matcher::new("a\\*"), Ok(Matcher::Glob(_))));
    }

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
    }
}
