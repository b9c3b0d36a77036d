//! The plan's list of names (`network = ["pkg.example.org",
//! "*.example.com", "api.example.net:443"]`) and the checks a requested
//! host name must pass before it is resolved.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

/// Longest DNS name (RFC 1035).
const MAX_NAME: usize = 253;

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// Lower-case name without a trailing dot; for a wildcard, the suffix
    /// after `*.`.
    name: String,
    /// `*.name`: any name ending in `.name` (not `name` itself).
    wildcard: bool,
    /// Only this port, when given.
    port: Option<u16>,
}

/// The parsed list, with the names pinned by `network_resolve`.
#[derive(Debug, Clone, Default)]
pub struct Allowlist {
    entries: Vec<Entry>,
    pinned: BTreeMap<String, IpAddr>,
}

/// A list entry or `network_resolve` key the mount refuses.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListError {
    /// Not a host name (`*` elsewhere than a leading `*.`, bad characters,
    /// an empty label, too long).
    #[error("network entry `{0}` is not a host name, `*.domain` or `name:port` (letters, digits, `-`, `.`)")]
    Syntax(String),
    /// An IP address: the allowlist admits names only.
    #[error("network entry `{0}` is an IP address; list host names (use network_resolve to pin a name to an address)")]
    IpLiteral(String),
    /// A port that is not 1..=65535.
    #[error("network entry `{0}` has an invalid port (1 to 65535)")]
    Port(String),
    /// A `network_resolve` name that no list entry names exactly (a
    /// wildcard does not carry a pin).
    #[error("network_resolve names `{0}`, which is not on the network list by name (a wildcard entry does not count); add it there too")]
    PinnedNotListed(String),
}

/// Why a requested name is refused before any resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRefusal {
    /// Not a syntactically valid host name.
    Syntax,
    /// An IP address in any spelling (dotted, decimal, hex, octal, IPv6).
    IpLiteral,
    /// A valid name the list does not allow (on this port).
    NotListed,
}

impl Allowlist {
    /// Parses the plan's list and pins; the error names the entry to fix.
    pub fn parse(names: &[String], pins: &BTreeMap<String, IpAddr>) -> Result<Allowlist, ListError> {
        let mut entries = Vec::with_capacity(names.len());
        for raw in names {
            entries.push(parse_entry(raw)?);
        }
        let mut list = Allowlist {
            entries,
            pinned: BTreeMap::new(),
        };
        for (name, ip) in pins {
            let norm = normalize(name).ok_or_else(|| ListError::Syntax(name.clone()))?;
            if !list.entries.iter().any(|e| !e.wildcard && e.name == norm) {
                return Err(ListError::PinnedNotListed(name.clone()));
            }
            list.pinned.insert(norm, *ip);
        }
        Ok(list)
    }

    /// Checks `host:port` as a client asked for it; the normalized name.
    pub fn check(&self, host: &str, port: u16) -> Result<String, NameRefusal> {
        // `user@host`, `user:pass@host`: user information is no part of a
        // host name (and its `:` is not an IPv6 address's).
        if host.contains('@') {
            return Err(NameRefusal::Syntax);
        }
        if is_ip_literal(host) {
            return Err(NameRefusal::IpLiteral);
        }
        let name = normalize(host).ok_or(NameRefusal::Syntax)?;
        if self
            .entries
            .iter()
            .any(|e| e.matches_name(&name) && e.port.is_none_or(|p| p == port))
        {
            Ok(name)
        } else {
            Err(NameRefusal::NotListed)
        }
    }

    /// The address `network_resolve` pins `name` (normalized) to on
    /// `port`: only when an entry naming it exactly (not a wildcard)
    /// allows that port. A name reached through a wildcard entry alone is
    /// resolved through DNS like any other, so that `"a.test:8080"` pinned
    /// to loopback does not open every loopback port when `"*.test"` is
    /// listed too.
    pub fn pinned(&self, name: &str, port: u16) -> Option<IpAddr> {
        let exact = self
            .entries
            .iter()
            .any(|e| !e.wildcard && e.name == name && e.port.is_none_or(|p| p == port));
        exact.then(|| self.pinned.get(name).copied()).flatten()
    }

    /// The list as the plan wrote it (normalized), for messages.
    pub fn describe(&self) -> String {
        self.entries
            .iter()
            .map(|e| {
                let star = if e.wildcard { "*." } else { "" };
                match e.port {
                    Some(p) => format!("{star}{}:{p}", e.name),
                    None => format!("{star}{}", e.name),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Entry {
    fn matches_name(&self, name: &str) -> bool {
        if self.wildcard {
            name.len() > self.name.len() + 1
                && name.ends_with(self.name.as_str())
                && name.as_bytes()[name.len() - self.name.len() - 1] == b'.'
        } else {
            name == self.name
        }
    }
}

fn parse_entry(raw: &str) -> Result<Entry, ListError> {
    let (host, port) = match raw.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            let port: u16 = p.parse().map_err(|_| ListError::Port(raw.to_string()))?;
            if port == 0 {
                return Err(ListError::Port(raw.to_string()));
            }
            (h, Some(port))
        }
        Some(_) => return Err(ListError::IpLiteral(raw.to_string())),
        None => (raw, None),
    };
    let (wildcard, rest) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    if is_ip_literal(rest) {
        return Err(ListError::IpLiteral(raw.to_string()));
    }
    let name = normalize(rest).ok_or_else(|| ListError::Syntax(raw.to_string()))?;
    Ok(Entry { name, wildcard, port })
}

/// Lower-case, without one trailing dot; `None` unless every label is
/// 1 to 63 of `[a-z0-9-_]` and the whole at most 253 bytes.
pub fn normalize(host: &str) -> Option<String> {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.len() > MAX_NAME {
        return None;
    }
    let ok = host.split('.').all(|label| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    ok.then(|| host.to_ascii_lowercase())
}

/// Whether `host` names an address rather than a name, in any spelling a
/// resolver (`inet_aton`, `getaddrinfo`) would take as one: dotted quads,
/// a single decimal (`2130706433`), hex (`0x7f000001`) or octal parts
/// (`0177.0.0.1`), short forms (`127.1`), and any IPv6 form (bracketed or
/// not, v4-mapped, with a zone). The rule: a `:` anywhere, or a last label
/// that is all digits or `0x` and hex digits — no top-level domain is.
pub fn is_ip_literal(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if h.contains(':') || h.parse::<Ipv4Addr>().is_ok() {
        return true;
    }
    let last = h.strip_suffix('.').unwrap_or(h).rsplit('.').next().unwrap_or("");
    let hex = last.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"))
        && last[2..].bytes().all(|b| b.is_ascii_hexdigit());
    !last.is_empty() && (last.bytes().all(|b| b.is_ascii_digit()) || hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(names: &[&str]) -> Allowlist {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        Allowlist::parse(&names, &BTreeMap::new()).expect("parses")
    }

    #[test]
    fn names_wildcards_and_ports() {
        let l = list(&["pkg.example.org", "*.example.com", "api.example.net:443"]);
        assert_eq!(l.check("pkg.example.org", 80), Ok("pkg.example.org".into()));
        assert_eq!(l.check("PKG.Example.ORG.", 443), Ok("pkg.example.org".into()));
        assert!(l.check("a.b.example.com", 443).is_ok());
        assert_eq!(l.check("example.com", 443), Err(NameRefusal::NotListed));
        assert_eq!(l.check("evilexample.com", 443), Err(NameRefusal::NotListed));
        assert!(l.check("api.example.net", 443).is_ok());
        assert_eq!(l.check("api.example.net", 80), Err(NameRefusal::NotListed));
        assert_eq!(
            l.check("pkg.example.org.evil.test", 80),
            Err(NameRefusal::NotListed)
        );
        assert_eq!(l.check("bad host", 80), Err(NameRefusal::Syntax));
        assert_eq!(l.check("", 80), Err(NameRefusal::Syntax));
        for userinfo in [
            "user@pkg.example.org",
            "user:pass@pkg.example.org",
            "u:p@127.0.0.1",
        ] {
            assert_eq!(l.check(userinfo, 443), Err(NameRefusal::Syntax), "{userinfo}");
        }
        assert_eq!(l.check("a..b", 80), Err(NameRefusal::Syntax));
    }

    #[test]
    fn every_spelling_of_an_address_is_a_literal() {
        for h in [
            "127.0.0.1",
            "2130706433",
            "0x7f000001",
            "0X7F.0.0.1",
            "0177.0.0.1",
            "127.1",
            "::1",
            "[::1]",
            "[::ffff:127.0.0.1]",
            "fe80::1%25eth0",
            "10.0.0.1.",
        ] {
            assert!(is_ip_literal(h), "{h} passed as a name");
            assert_eq!(list(&["*.example.com"]).check(h, 80), Err(NameRefusal::IpLiteral));
        }
        for h in ["example.com", "0x.example.com", "1.2.3.4.example.com", "host-1"] {
            assert!(!is_ip_literal(h), "{h} taken for an address");
        }
    }

    #[test]
    fn the_mount_refuses_bad_entries() {
        let parse = |names: &[&str]| {
            let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            Allowlist::parse(&names, &BTreeMap::new()).err()
        };
        assert!(matches!(parse(&["10.0.0.1"]), Some(ListError::IpLiteral(_))));
        assert!(matches!(parse(&["::1"]), Some(ListError::IpLiteral(_))));
        assert!(matches!(parse(&["a.*.com"]), Some(ListError::Syntax(_))));
        assert!(matches!(parse(&["*"]), Some(ListError::Syntax(_))));
        assert!(matches!(parse(&["a.com:0"]), Some(ListError::Port(_))));
        assert!(matches!(parse(&["a.com:http"]), Some(ListError::Port(_))));
        let pins = BTreeMap::from([("other.test".to_string(), IpAddr::from([127, 0, 0, 1]))]);
        assert!(matches!(
            Allowlist::parse(&["a.test".into()], &pins),
            Err(ListError::PinnedNotListed(_))
        ));
        // A wildcard does not carry a pin.
        assert!(matches!(
            Allowlist::parse(&["*.test".into()], &pins),
            Err(ListError::PinnedNotListed(_))
        ));
    }

    #[test]
    fn a_pin_holds_only_through_its_exact_entry_and_port() {
        let loopback = IpAddr::from([127, 0, 0, 1]);
        let pins = BTreeMap::from([("a.test".to_string(), loopback)]);
        let l = Allowlist::parse(&["a.test:8001".into(), "*.test".into()], &pins).expect("parses");
        assert_eq!(l.pinned("a.test", 8001), Some(loopback));
        assert!(l.check("a.test", 8002).is_ok(), "the wildcard admits the name");
        assert_eq!(l.pinned("a.test", 8002), None, "but not its pin");
        let l = Allowlist::parse(&["a.test".into()], &pins).expect("parses");
        assert_eq!(l.pinned("a.test", 8002), Some(loopback));
    }
}
