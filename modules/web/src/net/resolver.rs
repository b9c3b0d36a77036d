//! The DNS resolver every fetch connection goes through: it resolves in the
//! module, checks every address against the policy, and hands reqwest only
//! the checked addresses, so the connection is pinned to what was checked
//! (DNS rebinding between check and connect cannot switch it).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::policy::domain::normalize_host;
use crate::policy::Policy;

/// Resolves and filters through the policy.
pub struct PolicyResolver {
    policy: Arc<Policy>,
    overrides: Arc<BTreeMap<String, Vec<IpAddr>>>,
}

impl PolicyResolver {
    /// A resolver applying `policy`, answering `overrides` without DNS.
    pub fn new(policy: Arc<Policy>, overrides: Arc<BTreeMap<String, Vec<IpAddr>>>) -> Self {
        PolicyResolver { policy, overrides }
    }
}

/// Resolves `host` (fixed answers first, then the system resolver) and
/// checks every address; one refused address refuses the host, since a public
/// name that also answers with a private address is a rebinding attempt or a
/// misconfiguration.
pub async fn resolve_checked(
    policy: &Policy,
    overrides: &BTreeMap<String, Vec<IpAddr>>,
    host: &str,
) -> Result<Vec<IpAddr>, Box<dyn std::error::Error + Send + Sync>> {
    let key = normalize_host(host);
    let ips: Vec<IpAddr> = match overrides.get(&key) {
        Some(ips) => ips.clone(),
        None => tokio::net::lookup_host((key.as_str(), 0))
            .await
            .map_err(|e| format!("could not resolve {host}: {e}"))?
            .map(|a| a.ip())
            .collect(),
    };
    if ips.is_empty() {
        return Err(format!("{host} resolved to no addresses").into());
    }
    for ip in &ips {
        policy.check_resolved(host, *ip)?;
    }
    Ok(ips)
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let overrides = self.overrides.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let ips = resolve_checked(&policy, &overrides, &host).await?;
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}
