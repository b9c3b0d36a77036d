//! Where the proxy's decisions go: every refusal is a warning in the
//! host's log naming the host, port and reason, and a `bash:network`
//! event; allowed connections are logged at debug level.

use std::sync::Arc;

use toolhost_core::{Coordinator, Level};

use super::{Decision, Reporter};

/// The event emitted for every refused request. Payload: `{"protocol",
/// "host", "port", "refused": code, "detail"}`.
pub const REFUSED_EVENT: &str = "bash:network_refused";

/// A reporter that logs and emits through `coordinator`.
pub fn reporter(coordinator: Coordinator) -> Reporter {
    Arc::new(move |d: &Decision<'_>| match d.refused {
        None => coordinator.log(
            Level::Debug,
            format!("bash: network: {} {}:{} allowed", d.protocol, d.host, d.port),
        ),
        Some(refusal) if d.host.is_empty() => coordinator.log(
            Level::Warn,
            format!(
                "bash: network: refused a connection ({}: {} open)",
                refusal.code(),
                super::MAX_CONNECTIONS
            ),
        ),
        Some(refusal) => {
            coordinator.log(
                Level::Warn,
                format!(
                    "bash: network: refused {} {}:{} ({})",
                    d.protocol,
                    d.host,
                    d.port,
                    refusal.code()
                ),
            );
            coordinator.emit(
                REFUSED_EVENT,
                &serde_json::json!({
                    "protocol": d.protocol,
                    "host": d.host,
                    "port": d.port,
                    "refused": refusal.code(),
                    "detail": format!("{refusal:?}"),
                }),
            );
        }
    })
}
