//! The fetch policy: which URLs and addresses web_fetch may reach.

pub mod address;
pub mod domain;

use std::net::IpAddr;

use url::{Host, Url};

use address::AddressPolicy;
use domain::DomainList;

/// A refusal: the message says which rule refused and how to change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Address and domain rules together.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Which IP addresses may be connected to.
    pub addresses: AddressPolicy,
    /// When non-empty, only hosts under these domains may be fetched.
    pub allowed_domains: DomainList,
    /// Hosts under these domains are never fetched.
    pub blocked_domains: DomainList,
}

/// Why a URL is unusable before any policy applies (not http, no host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlProblem {
    /// The URL breaks a rule of the policy.
    Refused(Refusal),
    /// The URL is malformed or of a scheme web_fetch does not speak.
    Invalid(String),
}

impl Policy {
    /// Checks a URL's scheme, its host against the domain lists and, for an
    /// IP-literal host, the address. Names are checked again, address by
    /// address, when they resolve.
    pub fn check_url(&self, url: &Url) -> Result<(), UrlProblem> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UrlProblem::Invalid(format!(
                "only http and https URLs can be fetched; {url} uses {}:",
                url.scheme()
            )));
        }
        let host = match url.host() {
            Some(host) => host,
            None => return Err(UrlProblem::Invalid(format!("{url} has no host"))),
        };
        let host_text = match &host {
            Host::Domain(d) => d.to_string(),
            Host::Ipv4(ip) => ip.to_string(),
            Host::Ipv6(ip) => ip.to_string(),
        };
        if let Some(entry) = self.blocked_domains.matching(&host_text) {
            return Err(UrlProblem::Refused(Refusal(format!(
                "refused: {host_text} is under {entry}, which blocked_domains lists"
            ))));
        }
        if !self.allowed_domains.is_empty() && self.allowed_domains.matching(&host_text).is_none() {
            return Err(UrlProblem::Refused(Refusal(format!(
                "refused: {host_text} is not under any domain in allowed_domains ({})",
                self.allowed_domains.entries().join(", ")
            ))));
        }
        let ip = match host {
            Host::Domain(_) => return Ok(()),
            Host::Ipv4(ip) => IpAddr::V4(ip),
            Host::Ipv6(ip) => IpAddr::V6(ip),
        };
        self.addresses
            .check(ip, &format!("{url} points to "))
            .map_err(UrlProblem::Refused)
    }

    /// Checks one resolved address of `host`.
    pub fn check_resolved(&self, host: &str, ip: IpAddr) -> Result<(), Refusal> {
        self.addresses.check(ip, &format!("{host} resolves to "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(policy: &Policy, url: &str) -> String {
        match policy.check_url(&Url::parse(url).unwrap()) {
            Err(UrlProblem::Refused(r)) => r.0,
            other => panic!("{url}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn url_parser_normalizes_numeric_spellings() {
        for spelling in [
            "127.1",
            "2130706433",
            "0x7f000001",
            "0177.0.0.1",
            "0x7f.0.0.1",
            "127.0.1",
            "127.000.000.001",
        ] {
            let url = Url::parse(&format!("http://{spelling}/")).unwrap();
            assert_eq!(
                url.host(),
                Some(Host::Ipv4("127.0.0.1".parse().unwrap())),
                "{spelling}"
            );
            assert_eq!(url.as_str(), "http://127.0.0.1/", "{spelling}");
        }
        let mapped = Url::parse("http://[::ffff:127.0.0.1]/").unwrap();
        assert_eq!(mapped.host_str(), Some("[::ffff:7f00:1]"));
        let compat = Url::parse("http://[::127.0.0.1]/").unwrap();
        assert_eq!(compat.host_str(), Some("[::7f00:1]"));
    }

    #[test]
    fn every_loopback_spelling_is_refused() {
        let policy = Policy::default();
        for url in [
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://0.0.0.0/",
            "http://0/",
        ] {
            let message = refused(&policy, url);
            assert!(message.contains("allow_private_networks"), "{url}: {message}");
        }
    }

    #[test]
    fn schemes_other_than_http_are_invalid() {
        let policy = Policy::default();
        for url in [
            "file:///etc/passwd",
            "ftp://example.com/",
            "gopher://example.com/",
        ] {
            assert!(
                matches!(
                    policy.check_url(&Url::parse(url).unwrap()),
                    Err(UrlProblem::Invalid(_))
                ),
                "{url}"
            );
        }
    }

    #[test]
    fn domain_lists_apply_to_urls() {
        let policy = Policy {
            allowed_domains: DomainList::new("allowed_domains", &["example.com".into()]).unwrap(),
            blocked_domains: DomainList::new("blocked_domains", &["secret.example.com".into()]).unwrap(),
            ..Policy::default()
        };
        assert!(policy
            .check_url(&Url::parse("https://docs.example.com/x").unwrap())
            .is_ok());
        assert!(refused(&policy, "https://example.com.evil.net/").contains("allowed_domains"));
        assert!(refused(&policy, "https://a.secret.example.com/").contains("blocked_domains"));
    }
}
