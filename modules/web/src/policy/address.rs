//! Which IP addresses a fetch may connect to.
//!
//! Everything that is not globally routable is refused by default: loopback,
//! private, link-local, CGNAT, multicast, unspecified, documentation,
//! benchmarking and reserved ranges, in IPv4 and IPv6, with IPv4-mapped,
//! IPv4-compatible, NAT64 and 6to4 IPv6 forms judged by the IPv4 address they
//! carry. `allow_private_networks` re-admits listed CIDRs (intranets, tests).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use super::Refusal;

/// Why an address is not public, in words for a refusal message.
pub fn non_public_reason(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4).map(str::to_string),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_unspecified() => "the unspecified address",
        (0, _, _) => "a \"this network\" address (0.0.0.0/8)",
        (10, _, _) => "a private address (10.0.0.0/8)",
        (172, 16..=31, _) => "a private address (172.16.0.0/12)",
        (192, 168, _) => "a private address (192.168.0.0/16)",
        (100, 64..=127, _) => "a carrier-grade NAT address (100.64.0.0/10)",
        (127, _, _) => "a loopback address",
        (169, 254, _) => "a link-local address (cloud metadata services live at 169.254.169.254)",
        (192, 0, 0) => "an IETF protocol-assignment address (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (192, 88, 99) => "a reserved 6to4 relay address (192.88.99.0/24)",
        (198, 18..=19, _) => "a benchmarking address (198.18.0.0/15)",
        (224..=239, _, _) => "a multicast address",
        _ if ip.is_broadcast() => "the broadcast address",
        (240..=255, _, _) => "a reserved address (240.0.0.0/4)",
        _ => return None,
    })
}

/// The IPv4 address an IPv6 address stands for, when it embeds one
/// (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64
/// `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::`).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<(Ipv4Addr, &'static str)> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some((v4, "IPv4-mapped"));
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] && !(s[6] == 0 && s[7] <= 1) {
        return Some((tail, "IPv4-compatible"));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some((tail, "NAT64"));
    }
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return Some((v4, "6to4"));
    }
    None
}

fn v6_reason(ip: Ipv6Addr) -> Option<String> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("the unspecified address (::)".into());
    }
    if ip.is_loopback() {
        return Some("a loopback address".into());
    }
    if let Some((v4, form)) = embedded_v4(ip) {
        return match v4_reason(v4) {
            Some(reason) => Some(format!("an {form} form of {v4}, {reason}")),
            // The deprecated compatible form is never routed on the internet.
            None if form == "IPv4-compatible" => Some(format!("a deprecated IPv4-compatible form of {v4}")),
            None => None,
        };
    }
    let reason = match s[0] {
        0xfc00..=0xfdff => "a private (unique local) address (fc00::/7)",
        0xfe80..=0xfebf => "a link-local address (fe80::/10)",
        0xfec0..=0xfeff => "a deprecated site-local address (fec0::/10)",
        0xff00..=0xffff => "a multicast address",
        0x2001 if s[1] == 0x0db8 => "a documentation address (2001:db8::/32)",
        0x2001 if s[1] == 0 => "a Teredo tunnel address (2001::/32)",
        0x2001 if s[1] < 0x0200 => "an IETF protocol-assignment address (2001::/23)",
        0x3fff if s[1] < 0x1000 => "a documentation address (3fff::/20)",
        0x0064 if s[1] == 0xff9b && s[2] == 1 => "a local-use NAT64 address (64:ff9b:1::/48)",
        0x0100 if s[1..4] == [0, 0, 0] => "a discard-only address (100::/64)",
        0x2000..=0x3fff => return None,
        _ => "a reserved address (outside global unicast 2000::/3)",
    };
    Some(reason.into())
}

/// An `allow_private_networks` entry that is neither a CIDR nor an address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allow_private_networks: {entry:?} is not a CIDR such as \"10.0.0.0/8\" or \"127.0.0.1/32\"")]
pub struct AddressListError {
    /// The entry as written (trimmed).
    pub entry: String,
}

/// The address policy: non-public addresses are refused unless a listed
/// network contains them.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allowed: Vec<IpNet>,
}

impl AddressPolicy {
    /// Parses `allow_private_networks` (CIDRs, or bare addresses).
    pub fn new(allow_private_networks: &[String]) -> Result<Self, AddressListError> {
        let allowed = allow_private_networks
            .iter()
            .map(|entry| {
                let entry = entry.trim();
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| AddressListError {
                        entry: entry.to_string(),
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(AddressPolicy { allowed })
    }

    /// `Ok` when `ip` may be connected to; otherwise the refusal.
    pub fn check(&self, ip: IpAddr, what: &str) -> Result<(), Refusal> {
        let Some(reason) = non_public_reason(ip) else {
            return Ok(());
        };
        let canonical = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        if self
            .allowed
            .iter()
            .any(|net| net.contains(&ip) || net.contains(&canonical))
        {
            return Ok(());
        }
        let listed = if self.allowed.is_empty() {
            String::new()
        } else {
            let nets: Vec<String> = self.allowed.iter().map(ToString::to_string).collect();
            format!(" (listed now: {})", nets.join(", "))
        };
        Err(Refusal(format!(
            "refused: {what}{ip}, {reason}; private and reserved networks are blocked unless listed in allow_private_networks{listed}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(s: &str) -> bool {
        non_public_reason(s.parse().unwrap()).is_some()
    }

    #[test]
    fn non_public_v4_ranges_are_refused() {
        for ip in [
            "127.0.0.1",
            "127.255.255.254",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "192.0.0.8",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "93.184.216.34"] {
            assert!(!refused(ip), "{ip} is public");
        }
    }

    #[test]
    fn non_public_v6_ranges_are_refused() {
        for ip in [
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::8.8.8.8",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "64:ff9b::7f00:1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::1",
            "100::1",
            "64:ff9b:1::1",
            "::ffff:169.254.169.254",
        ] {
            assert!(refused(ip), "{ip} must be refused");
        }
        for ip in [
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(!refused(ip), "{ip} is public");
        }
    }

    #[test]
    fn mapped_forms_name_the_embedded_address() {
        let reason = non_public_reason("::ffff:127.0.0.1".parse().unwrap()).unwrap();
        assert!(reason.contains("IPv4-mapped form of 127.0.0.1"), "{reason}");
    }

    #[test]
    fn allow_list_readmits_listed_networks_only() {
        let policy = AddressPolicy::new(&["127.0.0.0/8".into(), "fd00::1".into()]).unwrap();
        assert!(policy.check("127.0.0.1".parse().unwrap(), "").is_ok());
        assert!(policy.check("::ffff:127.0.0.1".parse().unwrap(), "").is_ok());
        assert!(policy.check("fd00::1".parse().unwrap(), "").is_ok());
        let Refusal(err) = policy.check("10.0.0.1".parse().unwrap(), "").unwrap_err();
        assert!(
            err.contains("private address") && err.contains("allow_private_networks"),
            "{err}"
        );
        assert!(policy.check("::1".parse().unwrap(), "").is_err());
    }

    #[test]
    fn bad_cidr_is_reported() {
        let err = AddressPolicy::new(&["10.0.0.0/33".into()]).unwrap_err();
        assert_eq!(err.entry, "10.0.0.0/33");
        assert!(err.to_string().contains("10.0.0.0/33"), "{err}");
    }
}
