//! Turning an allowed name into the addresses the proxy connects to: the
//! proxy resolves (the command never chooses an address), and a DNS answer
//! that points into loopback, private, link-local or other non-public space
//! is refused (DNS rebinding: a listed name made to point at the host's own
//! services). Only `network_resolve` may point a name there.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

/// Why a name gave no address to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// The resolver found nothing (or failed).
    NotFound(String),
    /// An answer is not a public address.
    NotPublic(IpAddr),
}

/// The addresses for `name:port`: the pinned one, or the resolver's, all of
/// them public.
pub fn addresses(name: &str, port: u16, pinned: Option<IpAddr>) -> Result<Vec<SocketAddr>, ResolveError> {
    if let Some(ip) = pinned {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found: Vec<SocketAddr> = (name, port)
        .to_socket_addrs()
        .map_err(|e| ResolveError::NotFound(e.to_string()))?
        .collect();
    if found.is_empty() {
        return Err(ResolveError::NotFound("no address".into()));
    }
    // One non-public answer refuses the name: trying only the public ones
    // would still let a rebinding answer through on the next lookup.
    if let Some(bad) = found.iter().find(|a| !is_public(a.ip())) {
        return Err(ResolveError::NotPublic(bad.ip()));
    }
    Ok(found)
}

/// Whether `ip` is in globally routed space (not loopback, private,
/// link-local, shared/CGNAT, unspecified, broadcast, multicast,
/// documentation, benchmarking, reserved, unique-local, site-local, or an
/// IPv4-mapped/compatible form of one of those).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4() {
        // ::ffff:a.b.c.d and ::a.b.c.d (and so ::1, ::) reach IPv4 space.
        return is_public_v4(v4) && !ip.is_loopback();
    }
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        || first == 0x2001 && ip.segments()[1] == 0x0db8
        || first == 0x0064 && ip.segments()[1] == 0xff9b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_space_is_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip} taken for public");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip} taken for private");
        }
    }

    #[test]
    fn a_name_resolving_to_loopback_is_refused_unless_pinned() {
        match addresses("localhost", 80, None) {
            Err(ResolveError::NotPublic(ip)) => assert!(ip.is_loopback(), "{ip}"),
            other => panic!("localhost was not refused as loopback: {other:?}"),
        }
        let pinned = addresses("localhost", 8080, Some([127, 0, 0, 1].into())).expect("pinned");
        assert_eq!(pinned, vec![SocketAddr::from(([127, 0, 0, 1], 8080))]);
    }
}
