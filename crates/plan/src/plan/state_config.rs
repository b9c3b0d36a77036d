//! The `[host]` keys of shared state: checked when the plan loads, so a bad
//! TTL or URL is a plan error and not a failure at the first keyed call.

use std::time::Duration;

use crate::plan::schema::{HostSection, IdempotencyTtl};

/// A `[host]` shared-state key the host cannot use; the plan loader
/// reports it as `PlanError::Invalid`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `idempotency_ttl` text that humantime cannot read.
    #[error("host.idempotency_ttl: '{text}' is not a duration ({error}); write seconds or e.g. \"24h\"")]
    TtlSyntax {
        /// The value as written.
        text: String,
        /// What humantime said.
        error: humantime::DurationError,
    },
    /// A zero TTL.
    #[error("host.idempotency_ttl must be longer than zero")]
    TtlZero,
    /// A TTL whose milliseconds overflow the stores' 64-bit integers.
    #[error("host.idempotency_ttl is too long")]
    TtlTooLong,
    /// `state_url` is not a `postgres://` URL (shown with its password
    /// hidden).
    #[error("host.state_url must be a postgres:// URL (the only shared backend); got '{shown}'")]
    NotPostgres {
        /// The URL, password redacted.
        shown: String,
    },
    /// `state_url` does not parse as a PostgreSQL URL.
    #[error("host.state_url is not a valid PostgreSQL URL: {0}")]
    BadUrl(tokio_postgres::Error),
    /// `host_id` is empty or too long.
    #[error("host.host_id must be 1 to 200 characters")]
    HostId,
}

/// How long a key is remembered when the plan does not say.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// `[host] idempotency_ttl`, or the default.
pub fn ttl(host: &HostSection) -> Result<Duration, ConfigError> {
    let ttl = match &host.idempotency_ttl {
        None => return Ok(DEFAULT_TTL),
        Some(IdempotencyTtl::Secs(secs)) => Duration::from_secs(*secs),
        Some(IdempotencyTtl::Text(text)) => {
            humantime::parse_duration(text).map_err(|error| ConfigError::TtlSyntax {
                text: text.clone(),
                error,
            })?
        }
    };
    if ttl.is_zero() {
        return Err(ConfigError::TtlZero);
    }
    // PostgreSQL intervals and SQLite integers hold milliseconds as i64.
    if ttl.as_millis() > i64::MAX as u128 / 2 {
        return Err(ConfigError::TtlTooLong);
    }
    Ok(ttl)
}

/// Checks the shared-state keys of `[host]`.
pub fn check(host: &HostSection) -> Result<(), ConfigError> {
    ttl(host)?;
    if let Some(url) = &host.state_url {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(ConfigError::NotPostgres { shown: redact(url) });
        }
        url.parse::<tokio_postgres::Config>()
            .map_err(ConfigError::BadUrl)?;
    }
    if let Some(id) = &host.host_id {
        if id.trim().is_empty() || id.len() > 200 {
            return Err(ConfigError::HostId);
        }
    }
    Ok(())
}

/// This host's id in shared state (its audit chain): `[host] host_id`, else
/// the hostname and this process's id. The process id is part of the
/// default because two processes appending to one chain would fork it (the
/// PostgreSQL sink refuses the second writer's records); a plan that wants
/// one chain across restarts names the host, one process per name.
pub fn host_id(host: &HostSection) -> String {
    if let Some(id) = &host.host_id {
        return id.clone();
    }
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{name}/{}", std::process::id())
}

/// A URL with its password replaced, for messages and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, tail) = match rest.rsplit_once('@') {
        Some((auth, tail)) => (auth, tail),
        None => return url.to_string(),
    };
    let user = auth.split(':').next().unwrap_or("");
    if auth.contains(':') {
        format!("{scheme}://{user}:***@{tail}")
    } else {
        format!("{scheme}://{user}@{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_takes_seconds_or_a_duration_and_refuses_garbage() {
        let mut host = HostSection::default();
        assert_eq!(ttl(&host).unwrap(), DEFAULT_TTL);
        host.idempotency_ttl = Some(IdempotencyTtl::Secs(90));
        assert_eq!(ttl(&host).unwrap(), Duration::from_secs(90));
        host.idempotency_ttl = Some(IdempotencyTtl::Text("2h 30m".into()));
        assert_eq!(ttl(&host).unwrap(), Duration::from_secs(9000));
        host.idempotency_ttl = Some(IdempotencyTtl::Text("soon".into()));
        assert!(matches!(ttl(&host), Err(ConfigError::TtlSyntax { .. })));
        assert!(ttl(&host).unwrap_err().to_string().contains("not a duration"));
        host.idempotency_ttl = Some(IdempotencyTtl::Secs(0));
        assert!(ttl(&host).is_err());
    }

    #[test]
    fn state_url_must_be_postgres_and_messages_hide_the_password() {
        let mut host = HostSection {
            state_url: Some("mysql://u:secret@db/x".into()),
            ..HostSection::default()
        };
        let err = check(&host).unwrap_err().to_string();
        assert!(err.contains("postgres://"), "{err}");
        assert!(!err.contains("secret"), "{err}");
        host.state_url = Some("postgres://u:pw@db:5432/x".into());
        check(&host).unwrap();
        assert_eq!(redact("postgres://u:pw@db:5432/x"), "postgres://u:***@db:5432/x");
    }
}
