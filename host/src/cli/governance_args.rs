//! The governance flags of `call` and `batch`: `--as` and the request
//! context ids.
//!
//! The CLI runs as the local user: `--as NAME` chooses whose grants apply,
//! it authenticates nothing (anyone who can run `toolhost` can pass it).

use toolhost_core::RequestContext;

#[derive(clap::Args, Debug, Clone, Default)]
pub(super) struct GovernanceArgs {
    /// Run as this principal (a `[[principals]]` name or `[host]
    /// principal`): selects grants, authenticates nothing.
    #[arg(long = "as", value_name = "NAME")]
    principal: Option<String>,
    /// The agent run the call belongs to (per-run grant limits count by it).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// The conversation thread.
    #[arg(long, value_name = "ID")]
    thread_id: Option<String>,
    /// The tenant the run works for.
    #[arg(long, value_name = "ID")]
    tenant: Option<String>,
    /// The agent making the call.
    #[arg(long, value_name = "ID")]
    agent: Option<String>,
    /// Ties the call to the caller's own logs.
    #[arg(long, value_name = "ID")]
    correlation_id: Option<String>,
}

/// `--as` names a principal the plan does not know. A single struct: the
/// commands only print it and exit with the usage code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--as {name}: no such principal; the plan knows [host] principal '{}'{}",
    known.first().map(String::as_str).unwrap_or_default(),
    known.iter().skip(1).map(|p| format!(", '{p}'")).collect::<String>()
)]
pub(super) struct UnknownPrincipal {
    /// The name given.
    pub name: String,
    /// The host principal, then every declared one, in plan order.
    pub known: Vec<String>,
}

impl GovernanceArgs {
    /// The principal, checked against the plan.
    pub(super) fn principal(&self, plan: &crate::plan::Plan) -> Result<Option<String>, UnknownPrincipal> {
        match &self.principal {
            Some(name) if !plan.governance.knows(name) => Err(UnknownPrincipal {
                name: name.clone(),
                known: std::iter::once(&plan.governance.host_principal)
                    .chain(plan.governance.principals.iter().map(|p| &p.name))
                    .cloned()
                    .collect(),
            }),
            other => Ok(other.clone()),
        }
    }

    /// The request context the flags give.
    pub(super) fn context(&self) -> RequestContext {
        let mut context = RequestContext::default();
        context.run_id = self.run_id.clone();
        context.thread_id = self.thread_id.clone();
        context.tenant = self.tenant.clone();
        context.agent = self.agent.clone();
        context.correlation_id = self.correlation_id.clone();
        context
    }
}
