//! Domain lists that match on label boundaries.
//!
//! `example.com` matches `example.com` and `docs.example.com`, never
//! `example.com.evil.net` or `notexample.com`: the match is on whole labels
//! from the right, never on substrings.

/// A normalized list of domain suffixes.
#[derive(Debug, Clone, Default)]
pub struct DomainList {
    entries: Vec<String>,
}

/// Lowercases, drops a trailing root dot, and converts IDNs to punycode.
pub fn normalize_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    match url::Host::parse(&host) {
        Ok(url::Host::Domain(d)) => d,
        Ok(other) => other.to_string().trim_matches(['[', ']']).to_string(),
        Err(_) => host,
    }
}

/// An `allowed_domains`/`blocked_domains` entry that is not a domain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {entry:?} is not a domain; write a bare host name such as \"example.com\"")]
pub struct DomainListError {
    /// The list's key.
    pub key: String,
    /// The entry as written.
    pub entry: String,
}

impl DomainList {
    /// Parses entries such as `example.com`, `*.example.com` or `.example.com`
    /// (all three mean the domain and everything under it).
    pub fn new(key: &str, entries: &[String]) -> Result<Self, DomainListError> {
        let entries = entries
            .iter()
            .map(|raw| {
                let entry = raw.trim().trim_start_matches("*.").trim_start_matches('.');
                let is_ip = entry.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok();
                if entry.is_empty() || (!is_ip && entry.contains(['/', ':', '@', ' ', '*'])) {
                    return Err(DomainListError {
                        key: key.to_string(),
                        entry: raw.clone(),
                    });
                }
                Ok(normalize_host(entry))
            })
            .collect::<Result<_, _>>()?;
        Ok(DomainList { entries })
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry that `host` falls under, if any.
    pub fn matching(&self, host: &str) -> Option<&str> {
        let host = normalize_host(host);
        self.entries
            .iter()
            .find(|entry| {
                host == **entry
                    || (host.len() > entry.len()
                        && host.ends_with(entry.as_str())
                        && host.as_bytes()[host.len() - entry.len() - 1] == b'.')
            })
            .map(String::as_str)
    }

    /// The entries, for messages.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> DomainList {
        DomainList::new(
            "allowed_domains",
            &entries.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap()
    }

    #[test]
    fn matches_on_label_boundaries_only() {
        let l = list(&["example.com"]);
        assert_eq!(l.matching("example.com"), Some("example.com"));
        assert_eq!(l.matching("docs.example.com"), Some("example.com"));
        assert_eq!(l.matching("a.b.docs.example.com"), Some("example.com"));
        assert_eq!(l.matching("EXAMPLE.com."), Some("example.com"));
        assert_eq!(l.matching("example.com.evil.net"), None);
        assert_eq!(l.matching("notexample.com"), None);
        assert_eq!(l.matching("example.co"), None);
        assert_eq!(l.matching("com"), None);
    }

    #[test]
    fn wildcard_and_dot_prefixes_mean_the_same() {
        for entry in ["*.example.com", ".example.com", "Example.COM."] {
            let l = list(&[entry]);
            assert!(l.matching("docs.example.com").is_some(), "{entry}");
            assert!(l.matching("evil-example.com").is_none(), "{entry}");
        }
    }

    #[test]
    fn idn_entries_match_punycode_hosts() {
        let l = list(&["bücher.example"]);
        assert!(l.matching("xn--bcher-kva.example").is_some());
        assert!(l.matching("shop.bücher.example").is_some());
    }

    #[test]
    fn urls_are_not_domains() {
        let err = DomainList::new("blocked_domains", &["https://example.com/".into()]).unwrap_err();
        assert_eq!(err.key, "blocked_domains");
        let err = err.to_string();
        assert!(
            err.contains("blocked_domains") && err.contains("bare host name"),
            "{err}"
        );
    }
}
