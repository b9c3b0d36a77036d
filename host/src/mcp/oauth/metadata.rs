//! Protected-resource metadata (RFC 9728): the document that tells a client
//! which authorization server issues tokens for this server, and the
//! `WWW-Authenticate` challenge that points to it.
//!
//! The document's URL is formed from the configured audience (the resource
//! URI) as RFC 9728 says: `/.well-known/oauth-protected-resource` inserted
//! between the host and the path. It is served there, and at the bare
//! `/.well-known/oauth-protected-resource` too (clients of older MCP
//! revisions look only there).

use bytes::Bytes;

/// The well-known path prefix.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The document and where it lives.
#[derive(Debug, Clone)]
pub struct Metadata {
    /// The JSON document.
    pub document: Bytes,
    /// Its absolute URL (the challenge's `resource_metadata`).
    pub url: String,
    /// The paths this server answers it at.
    paths: Vec<String>,
}

impl Metadata {
    /// The metadata for `audience` (an absolute http(s) URL, checked with
    /// the plan) protected by `issuer`.
    pub fn new(audience: &str, issuer: &str) -> Metadata {
        let (origin, path) = split(audience);
        let suffixed = format!("{WELL_KNOWN}{path}");
        let mut paths = vec![WELL_KNOWN.to_string()];
        if suffixed != WELL_KNOWN {
            paths.push(suffixed.clone());
        }
        let document = serde_json::json!({
            "resource": audience,
            "authorization_servers": [issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "toolhost",
        });
        Metadata {
            document: Bytes::from(document.to_string()),
            url: format!("{origin}{suffixed}"),
            paths,
        }
    }

    /// Whether `path` is one this document is served at.
    pub fn serves(&self, path: &str) -> bool {
        self.paths.iter().any(|p| p == path)
    }

    /// The `WWW-Authenticate` value of a 401: a bare challenge when no
    /// token was given, `error="invalid_token"` with why when one was.
    pub fn challenge(&self, invalid: Option<&str>) -> String {
        match invalid {
            None => format!("Bearer resource_metadata=\"{}\"", self.url),
            Some(why) => format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{}\"",
                quotable(why),
                self.url
            ),
        }
    }
}

/// `https://host:port` and the path (without a trailing `/`; empty for the
/// root) of an absolute URL.
fn split(audience: &str) -> (String, String) {
    match url::Url::parse(audience) {
        Ok(url) => {
            let origin = url.origin().ascii_serialization();
            let path = url.path().trim_end_matches('/').to_string();
            (origin, path)
        }
        Err(_) => (audience.trim_end_matches('/').to_string(), String::new()),
    }
}

/// RFC 6750's `error_description` allows printable ASCII but `"` and `\`.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if (' '..='~').contains(&c) && c != '"' && c != '\\' {
                c
            } else {
                '\''
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_is_formed_from_the_resource() {
        let m = Metadata::new("https://tools.example:8443/mcp", "https://idp.example");
        assert_eq!(
            m.url,
            "https://tools.example:8443/.well-known/oauth-protected-resource/mcp"
        );
        assert!(m.serves("/.well-known/oauth-protected-resource"));
        assert!(m.serves("/.well-known/oauth-protected-resource/mcp"));
        assert!(!m.serves("/.well-known/oauth-protected-resource/other"));
        let root = Metadata::new("https://tools.example/", "https://idp.example");
        assert_eq!(
            root.url,
            "https://tools.example/.well-known/oauth-protected-resource"
        );
        let doc: serde_json::Value = serde_json::from_slice(&m.document).unwrap();
        assert_eq!(doc["resource"], "https://tools.example:8443/mcp");
        assert_eq!(doc["authorization_servers"][0], "https://idp.example");
    }

    #[test]
    fn descriptions_cannot_break_the_header() {
        let m = Metadata::new("https://t.example/mcp", "https://idp.example");
        let c = m.challenge(Some("bad \"quote\" \\ and\nnewline"));
        assert!(
            c.starts_with("Bearer error=\"invalid_token\", error_description=\"bad 'quote' ' and'newline\"")
        );
        assert!(hyper::header::HeaderValue::from_str(&c).is_ok());
    }
}
