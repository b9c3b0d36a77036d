//! SearXNG's JSON API: `GET /search?q=…&format=json` → `{results: [{title,
//! url, content}]}`. The instance must list `json` in `search.formats`.

use serde::Deserialize;
use url::Url;

use super::{hits, AnswerError, ConfigError, Hit, Item};

/// The `/search` endpoint under a SearXNG base URL.
pub fn endpoint(base: &str) -> Result<Url, ConfigError> {
    let mut url = Url::parse(base.trim()).map_err(|error| ConfigError::SearxngUrl {
        url: base.to_string(),
        error,
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ConfigError::SearxngScheme(base.to_string()));
    }
    if !url.path().trim_end_matches('/').ends_with("/search") {
        let path = format!("{}/search", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    url.set_query(None);
    Ok(url)
}

/// The request URL for `query`.
pub fn request_url(endpoint: &Url, query: &str) -> Url {
    let mut url = endpoint.clone();
    url.query_pairs_mut()
        .append_pair("q", query)
        .append_pair("format", "json");
    url
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    results: Vec<Item>,
}

/// Parses a SearXNG JSON answer into at most `max` hits.
pub fn parse(body: &[u8], max: usize) -> Result<Vec<Hit>, AnswerError> {
    let response: Response = serde_json::from_slice(body).map_err(AnswerError::Searxng)?;
    Ok(hits(response.results, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_appends_search_once() {
        assert_eq!(
            endpoint("http://127.0.0.1:8888").unwrap().as_str(),
            "http://127.0.0.1:8888/search"
        );
        assert_eq!(
            endpoint("http://h/searx/").unwrap().as_str(),
            "http://h/searx/search"
        );
        assert_eq!(endpoint("http://h/search").unwrap().as_str(), "http://h/search");
        assert!(endpoint("not a url").is_err());
    }

    #[test]
    fn results_parse_and_cap() {
        let body = br#"{"query":"q","results":[{"title":"A","url":"https://a.example/","content":"alpha"},{"title":"B","url":"https://b.example/","content":"<b>beta</b>"},{"title":"C","url":"https://c.example/"}]}"#;
        let hits = parse(body, 2).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[1].snippet, "beta");
        assert!(parse(b"<html>", 2).is_err());
    }
}
