//! Governance (issue #16): who calls ([`principals`]), what they may call
//! ([`grants`]), the ids they attach ([`request`]), tool versions and
//! deprecation ([`deprecation`]), and the output guardrail ([`redact`]).
//! The audit chain that records it all is the pipeline's audit log.

pub mod claims;
pub mod deprecation;
mod error;
pub mod grants;
pub mod limits;
pub mod principals;
pub use crate::redact;
pub mod request;

pub use error::{GovernanceError, GrantProblem, PrincipalProblem, RequestIdError, SunsetError};

/// The plan's governance, checked.
#[derive(Debug, Clone, Default)]
pub struct Governance {
    /// `[[principals]]` as written (tokens are resolved when a server starts).
    pub principals: Vec<principals::PrincipalEntry>,
    /// `[[grants]]`, parsed.
    pub grants: Vec<grants::Grant>,
    /// `[host] principal`: who stdio and CLI calls run for.
    pub host_principal: String,
}

impl Governance {
    /// Checks the plan's principals and grants (the plan checks its own
    /// version pins).
    pub fn from_plan(
        principals: Vec<principals::PrincipalEntry>,
        grants: &[grants::GrantEntry],
        host_principal: Option<&str>,
        redact: &redact::RedactSection,
    ) -> Result<Governance, GovernanceError> {
        redact.check()?;
        let host_principal = host_principal.unwrap_or(principals::LOCAL).to_string();
        principals::check(&principals, &host_principal)?;
        let grants = grants::parse(grants)?;
        for grant in &grants {
            if grant.principal != host_principal && !principals.iter().any(|p| p.name == grant.principal) {
                return Err(GovernanceError::UnknownPrincipal {
                    grant: grant.id.clone(),
                    principal: grant.principal.clone(),
                    host_principal,
                });
            }
        }
        Ok(Governance {
            principals,
            grants,
            host_principal,
        })
    }

    /// Whether `name` may be named with `--as`: the host principal or a
    /// declared one.
    pub fn knows(&self, name: &str) -> bool {
        name == self.host_principal || self.principals.iter().any(|p| p.name == name)
    }
}
