//! The Brave Search API: `GET …/web/search?q=…&count=…` with the key in
//! `X-Subscription-Token` → `{web: {results: [{title, url, description}]}}`.

use serde::Deserialize;
use url::Url;

use super::{hits, AnswerError, Hit, Item};

/// The request URL for `query`.
pub fn request_url(endpoint: &Url, query: &str, count: usize) -> Url {
    let mut url = endpoint.clone();
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("count", &count.clamp(1, 20).to_string());
    url
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    web: Option<Web>,
}

#[derive(Deserialize)]
struct Web {
    #[serde(default)]
    results: Vec<Item>,
}

/// Parses a Brave answer into at most `max` hits.
pub fn parse(body: &[u8], max: usize) -> Result<Vec<Hit>, AnswerError> {
    let response: Response = serde_json::from_slice(body).map_err(AnswerError::Brave)?;
    Ok(hits(response.web.map(|w| w.results).unwrap_or_default(), max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_parse() {
        let body = br#"{"type":"search","web":{"results":[{"title":"Rust","url":"https://rust-lang.org/","description":"A <strong>language</strong>"}]}}"#;
        let hits = parse(body, 5).unwrap();
        assert_eq!(
            hits,
            vec![Hit {
                title: "Rust".into(),
                url: "https://rust-lang.org/".into(),
                snippet: "A language".into()
            }]
        );
        assert_eq!(parse(b"{}", 5).unwrap(), vec![]);
    }
}
