//! `[host.ui]`: the operator page that `serve --http` serves at `/ui/`,
//! and `[policy.tools.NAME] approval`: who may approve a call that asks.

use serde::Deserialize;

/// `[host.ui]`: who may use the operator page, and how long its sessions
/// last. With no operators the page is not served (404).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiSection {
    /// Principals that may sign in to the page (names from `[[principals]]`,
    /// or `[host] principal` for the server's own token). Anyone else who
    /// signs in with a valid token gets 403.
    #[serde(default)]
    pub operators: Vec<String>,
    /// Page sessions open at once; past it, the oldest ends for the new one.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// Seconds a page session lasts from sign-in (at least 60).
    #[serde(default = "default_session_secs")]
    pub session_secs: u64,
}

impl Default for UiSection {
    fn default() -> Self {
        UiSection {
            operators: Vec::new(),
            max_sessions: default_max_sessions(),
            session_secs: default_session_secs(),
        }
    }
}

impl UiSection {
    /// Whether the page is served at all.
    pub fn enabled(&self) -> bool {
        !self.operators.is_empty()
    }

    /// Whether `principal` may use the page.
    pub fn is_operator(&self, principal: &str) -> bool {
        self.operators.iter().any(|o| o == principal)
    }
}

fn default_max_sessions() -> usize {
    16
}

fn default_session_secs() -> u64 {
    8 * 3600
}

/// `[policy.tools.NAME] approval`: who may answer the tool's `ask`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalRule {
    /// The caller's own client, an operator on the page, or a flag
    /// (`--yes`, `--approve`).
    #[default]
    Any,
    /// Separation of duties: only an operator on the page who is another
    /// principal than the caller. The caller's client is not asked, and
    /// flags do not count.
    AnotherPrincipal,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::plan::Plan;

    #[test]
    fn operators_and_approval_rules_parse_and_are_checked() {
        let text = "[host.ui]\noperators = [\"local\", \"alice\"]\n\
                    [[principals]]\nname = \"alice\"\ntoken_env = \"ALICE_TOKEN\"\n\
                    [policy.tools.deploy]\napproval = \"another_principal\"\n";
        let plan = Plan::parse(text, Path::new("p.toml")).expect("plan");
        assert!(plan.host.ui.enabled() && plan.host.ui.is_operator("alice"));
        assert_eq!(
            plan.policy.tools["deploy"].approval,
            ApprovalRule::AnotherPrincipal
        );
        let typo = text.replace("\"alice\"]", "\"alcie\"]");
        let err = Plan::parse(&typo, Path::new("p.toml")).unwrap_err().to_string();
        assert!(err.contains("'alcie'"), "{err}");
        let short = "[host.ui]\noperators = [\"local\"]\nsession_secs = 5\n";
        assert!(Plan::parse(short, Path::new("p.toml")).is_err());
        let unknown = "[policy.tools.deploy]\napproval = \"someone\"\n";
        assert!(Plan::parse(unknown, Path::new("p.toml")).is_err());
        assert!(!Plan::parse("", Path::new("p.toml"))
            .expect("empty")
            .host
            .ui
            .enabled());
    }
}
