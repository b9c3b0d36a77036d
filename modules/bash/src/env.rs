//! The environment a command sees: a core set of the host's variables, the
//! plan's `env_allow` patterns and `env_set` values, and never a secret
//! unless the plan names it exactly.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

/// Passed through when the host has them.
const CORE: &[&str] = &[
    "PATH", "HOME", "LANG", "TERM", "USER", "SHELL", "TMPDIR", "LOGNAME",
];

/// Name fragments that mark a secret (matched case-insensitively).
const SECRET_MARKS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Used when the host has no PATH.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Builds environments from the host's.
#[derive(Debug, Clone)]
pub struct EnvPolicy {
    allow: Vec<String>,
    set: BTreeMap<String, String>,
}

impl EnvPolicy {
    /// From the plan's `env_allow` and `env_set`.
    pub fn new(allow: &[String], set: &BTreeMap<String, String>) -> Self {
        EnvPolicy {
            allow: allow.to_vec(),
            set: set.clone(),
        }
    }

    /// Whether a name looks like it holds a secret.
    pub fn is_secret(name: &str) -> bool {
        let upper = name.to_ascii_uppercase();
        SECRET_MARKS.iter().any(|m| upper.contains(m))
    }

    /// Whether the host's variable `name` passes.
    pub fn passes(&self, name: &str) -> bool {
        if self.allow.iter().any(|a| a == name) {
            return true;
        }
        if Self::is_secret(name) {
            return false;
        }
        CORE.contains(&name) || name.starts_with("LC_") || self.allow.iter().any(|p| glob(p, name))
    }

    /// The environment for one command, from `host` (the host's variables).
    pub fn build(&self, host: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        let mut env: BTreeMap<OsString, OsString> = host
            .into_iter()
            .filter(|(k, _)| std::str::from_utf8(k.as_bytes()).is_ok_and(|k| self.passes(k)))
            .collect();
        env.entry("PATH".into()).or_insert_with(|| DEFAULT_PATH.into());
        for (k, v) in &self.set {
            env.insert(k.into(), v.into());
        }
        env.into_iter().collect()
    }
}

/// `*` matches any run of characters; everything else is literal.
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first)
        || !name[first.len()..].ends_with(last)
        || name.len() < first.len() + last.len()
    {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C"),
            ("MY_API_KEY", "sk-123"),
            ("GITHUB_TOKEN", "ghp"),
            ("DB_PASSWORD", "pw"),
            ("CARGO_HOME", "/c"),
            ("CARGO_REGISTRY_TOKEN", "t"),
            ("RANDOM_THING", "x"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_the_core_set_by_default() {
        let env = EnvPolicy::new(&[], &BTreeMap::new()).build(host());
        assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH"]);
    }

    #[test]
    fn patterns_never_let_secrets_through() {
        let policy = EnvPolicy::new(&["CARGO_*".into(), "*".into()], &BTreeMap::new());
        let env = names(&policy.build(host()));
        assert!(env.contains(&"CARGO_HOME".to_string()));
        assert!(env.contains(&"RANDOM_THING".to_string()));
        for secret in [
            "MY_API_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "CARGO_REGISTRY_TOKEN",
        ] {
            assert!(!env.contains(&secret.to_string()), "{secret} leaked");
        }
    }

    #[test]
    fn an_exact_name_lets_a_secret_through_and_env_set_wins() {
        let mut set = BTreeMap::new();
        set.insert("PATH".to_string(), "/opt/bin".to_string());
        let env = EnvPolicy::new(&["GITHUB_TOKEN".into()], &set).build(host());
        assert!(names(&env).contains(&"GITHUB_TOKEN".to_string()));
        assert!(env.contains(&("PATH".into(), "/opt/bin".into())));
    }

    #[test]
    fn globs() {
        assert!(glob("A*", "ABC"));
        assert!(glob("*C", "ABC"));
        assert!(glob("A*C", "ABC"));
        assert!(glob("A*B*D", "AXBYD"));
        assert!(!glob("A*C", "AB"));
        assert!(!glob("AB", "ABC"));
    }
}
