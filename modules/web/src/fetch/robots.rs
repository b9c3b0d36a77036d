//! robots.txt: parsing the rules for one user agent and matching paths,
//! with `*` and `$` patterns and the longest-match-wins rule (RFC 9309).

/// The rules of the group that applies to one user agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    rules: Vec<(bool, String)>,
}

impl Rules {
    /// Rules that allow everything (no robots.txt, or an unreadable one).
    pub fn allow_all() -> Self {
        Rules::default()
    }

    /// Parses `text` for the agent whose product token is `agent`
    /// (`toolhost-web` for `toolhost-web/0.1`); falls back to `*`.
    pub fn parse(text: &str, agent: &str) -> Self {
        let agent = agent
            .split('/')
            .next()
            .unwrap_or(agent)
            .trim()
            .to_ascii_lowercase();
        let mut specific: Option<Vec<(bool, String)>> = None;
        let mut star: Option<Vec<(bool, String)>> = None;
        // Groups: consecutive user-agent lines, then their rules.
        let mut agents: Vec<String> = Vec::new();
        let mut rules: Vec<(bool, String)> = Vec::new();
        let mut in_rules = false;
        let mut flush = |agents: &mut Vec<String>, rules: &mut Vec<(bool, String)>| {
            for a in agents.iter() {
                if a == "*" {
                    star.get_or_insert_with(Vec::new).extend(rules.iter().cloned());
                } else if !agent.is_empty() && (agent == *a || agent.starts_with(a.as_str())) {
                    specific
                        .get_or_insert_with(Vec::new)
                        .extend(rules.iter().cloned());
                }
            }
            agents.clear();
            rules.clear();
        };
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
            match key.as_str() {
                "user-agent" => {
                    if in_rules {
                        flush(&mut agents, &mut rules);
                        in_rules = false;
                    }
                    agents.push(value.to_ascii_lowercase());
                }
                "allow" | "disallow" if !agents.is_empty() => {
                    in_rules = true;
                    if !value.is_empty() {
                        rules.push((key == "allow", value.to_string()));
                    }
                }
                _ => {}
            }
        }
        flush(&mut agents, &mut rules);
        Rules {
            rules: specific.or(star).unwrap_or_default(),
        }
    }

    /// Whether `path` (with its query) may be fetched; on refusal, the rule.
    pub fn check(&self, path: &str) -> Result<(), Disallowed> {
        let mut best: Option<(usize, bool, &str)> = None;
        for (allow, pattern) in &self.rules {
            if matches(pattern, path) {
                let len = pattern.len();
                let better = match best {
                    None => true,
                    Some((l, a, _)) => len > l || (len == l && *allow && !a),
                };
                if better {
                    best = Some((len, *allow, pattern));
                }
            }
        }
        match best {
            Some((_, false, pattern)) => Err(Disallowed {
                pattern: pattern.to_string(),
            }),
            _ => Ok(()),
        }
    }
}

/// A path robots.txt disallows. A single struct: the fetcher answers
/// every disallowed path `policy_denied`, naming the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("robots.txt disallows it (rule \"Disallow: {pattern}\")")]
pub struct Disallowed {
    /// The `Disallow` pattern that matched.
    pub pattern: String,
}

/// Whether a robots pattern (`*` any run, trailing `$` end) matches `path`
/// from its start. Dynamic programming, so hostile patterns stay linear-ish.
fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let (p, s) = (pattern.as_bytes(), path.as_bytes());
    // reach[j]: the pattern prefix read so far can end at path position j.
    let mut reach = vec![false; s.len() + 1];
    reach[0] = true;
    for &c in p {
        let mut next = vec![false; s.len() + 1];
        if c == b'*' {
            let mut any = false;
            for j in 0..=s.len() {
                any |= reach[j];
                next[j] = any;
            }
        } else {
            for j in 0..s.len() {
                next[j + 1] = reach[j] && s[j] == c;
            }
        }
        reach = next;
    }
    if anchored {
        reach[s.len()]
    } else {
        reach.iter().any(|&r| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROBOTS: &str = "User-agent: *\nDisallow: /private\nAllow: /private/open\nDisallow: /*.pdf$\n\nUser-agent: otherbot\nDisallow: /\n";

    #[test]
    fn longest_match_wins() {
        let rules = Rules::parse(ROBOTS, "toolhost-web/0.1");
        assert!(rules.check("/").is_ok());
        assert_eq!(
            rules.check("/private/x"),
            Err(Disallowed {
                pattern: "/private".into()
            })
        );
        assert!(rules.check("/private/open/x").is_ok());
        assert!(rules.check("/doc.pdf").is_err());
        assert!(rules.check("/doc.pdf?x=1").is_ok());
    }

    #[test]
    fn a_specific_group_replaces_star() {
        let rules = Rules::parse(ROBOTS, "otherbot/2.0");
        assert!(rules.check("/anything").is_err());
        let mine = Rules::parse("User-agent: toolhost-web\nDisallow: /x\n", "toolhost-web/0.1");
        assert!(mine.check("/x/y").is_err());
        assert!(mine.check("/y").is_ok());
    }

    #[test]
    fn empty_disallow_allows_all() {
        let rules = Rules::parse("User-agent: *\nDisallow:\n", "a");
        assert!(rules.check("/x").is_ok());
    }
}
