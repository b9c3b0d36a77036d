//! `tool_search`'s ranking: Okapi BM25 over each tool's name, aliases,
//! description and parameter names, in memory, with no network and no
//! model. Written here rather than taken from a crate: the whole of it is a
//! tokenizer and one formula, and the index is rebuilt only when the tool
//! list changes.
//!
//! Names are split the way tools are named (`read_file`, `listDirectory`,
//! `fs__grep`), and each field counts with a weight (a word in the name
//! says more than one in a long description). Words are folded to a crude
//! stem (`files`/`file`, `searching`/`search`) and common words dropped.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::tool::MountedTool;

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalization.
const B: f64 = 0.75;

/// How many times a word counts by where it appears.
const NAME_WEIGHT: usize = 4;
const ALIAS_WEIGHT: usize = 3;
const PARAM_WEIGHT: usize = 2;
const DESCRIPTION_WEIGHT: usize = 1;

/// Words that carry no meaning for choosing a tool.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "for", "and", "or", "on", "with", "is", "it", "from", "by", "this",
    "that", "be", "as", "at", "are", "i", "me", "my", "how", "do", "what", "which", "can", "into", "its",
    "if", "use", "tool", "using", "should", "will", "any", "you", "your", "we",
];

/// The words of `text`, lowercased, split at non-alphanumerics and at
/// camelCase humps, stemmed, without stopwords.
pub fn tokens(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// A crude suffix folding, the same for documents and queries.
fn stem(word: &str) -> String {
    let n = word.len();
    let cut = |k: usize| word[..n - k].to_string();
    if n > 5 && word.ends_with("ing") {
        return cut(3);
    }
    if n > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..n - 3]);
    }
    if n > 4 && word.ends_with("ed") && !word.ends_with("eed") {
        return cut(2);
    }
    if n > 4
        && (word.ends_with("ches")
            || word.ends_with("shes")
            || word.ends_with("sses")
            || word.ends_with("xes"))
    {
        return cut(2);
    }
    if n > 3 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") {
        return cut(1);
    }
    word.to_string()
}

/// The parameter names of an input schema (top-level properties, and the
/// properties of objects in arrays one level down).
fn parameter_names(schema: &Value) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            names.push(name.clone());
            if let Some(inner) = prop
                .get("items")
                .and_then(|i| i.get("properties"))
                .and_then(Value::as_object)
            {
                names.extend(inner.keys().cloned());
            }
        }
    }
    names
}

/// One tool as the index holds it.
struct Doc {
    tool: Arc<MountedTool>,
    terms: HashMap<u32, f64>,
    len: f64,
}

/// A BM25 index over a set of tools.
pub struct Index {
    docs: Vec<Doc>,
    /// Term ids by word.
    vocabulary: HashMap<String, u32>,
    /// Inverse document frequency by term id.
    idf: Vec<f64>,
    avg_len: f64,
}

impl Index {
    /// Indexes `tools`.
    pub fn build(tools: &[Arc<MountedTool>]) -> Index {
        let mut vocabulary: HashMap<String, u32> = HashMap::new();
        let mut df: Vec<u32> = Vec::new();
        let mut docs = Vec::with_capacity(tools.len());
        for tool in tools {
            let spec = &tool.spec;
            let mut counts: HashMap<u32, f64> = HashMap::new();
            let mut len = 0.0;
            let mut add = |text: &str, weight: usize| {
                for word in tokens(text) {
                    let next = vocabulary.len() as u32;
                    let id = *vocabulary.entry(word).or_insert(next);
                    if id as usize == df.len() {
                        df.push(0);
                    }
                    let count = counts.entry(id).or_insert(0.0);
                    if *count == 0.0 {
                        df[id as usize] += 1;
                    }
                    *count += weight as f64;
                    len += weight as f64;
                }
            };
            add(&spec.name, NAME_WEIGHT);
            if let Some(title) = &spec.title {
                add(title, ALIAS_WEIGHT);
            }
            for alias in &spec.aliases {
                add(alias, ALIAS_WEIGHT);
            }
            for param in parameter_names(&spec.input_schema) {
                add(&param, PARAM_WEIGHT);
            }
            add(&spec.description, DESCRIPTION_WEIGHT);
            docs.push(Doc {
                tool: tool.clone(),
                terms: counts,
                len,
            });
        }
        let n = docs.len() as f64;
        let idf = df
            .iter()
            .map(|&d| (1.0 + (n - d as f64 + 0.5) / (d as f64 + 0.5)).ln())
            .collect();
        let avg_len = if docs.is_empty() {
            1.0
        } else {
            docs.iter().map(|d| d.len).sum::<f64>() / n
        };
        Index {
            docs,
            vocabulary,
            idf,
            avg_len: avg_len.max(1.0),
        }
    }

    /// The tools best matching `query`, best first, at most `limit` of
    /// those `keep` accepts; ties go to the shorter name, then by name.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&MountedTool) -> bool,
    ) -> Vec<(Arc<MountedTool>, f64)> {
        let mut terms: Vec<u32> = tokens(query)
            .iter()
            .filter_map(|w| self.vocabulary.get(w).copied())
            .collect();
        terms.sort_unstable();
        terms.dedup();
        if terms.is_empty() {
            return Vec::new();
        }
        let mut scored: Vec<(usize, f64)> = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(i, doc)| {
                let norm = K1 * (1.0 - B + B * doc.len / self.avg_len);
                let score: f64 = terms
                    .iter()
                    .filter_map(|t| {
                        let tf = *doc.terms.get(t)?;
                        Some(self.idf[*t as usize] * tf * (K1 + 1.0) / (tf + norm))
                    })
                    .sum();
                (score > 0.0).then_some((i, score))
            })
            .collect();
        scored.sort_by(|a, b| {
            b.1.total_cmp(&a.1).then_with(|| {
                let (x, y) = (&self.docs[a.0].tool.spec.name, &self.docs[b.0].tool.spec.name);
                x.len().cmp(&y.len()).then(x.cmp(y))
            })
        });
        scored
            .into_iter()
            .filter(|(i, _)| keep(&self.docs[*i].tool))
            .take(limit)
            .map(|(i, s)| (self.docs[i].tool.clone(), s))
            .collect()
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_at_underscores_and_humps_and_fold() {
        assert_eq!(tokens("read_file"), vec!["read", "file"]);
        assert_eq!(tokens("listDirectoryEntries"), vec!["list", "directory", "entry"]);
        assert_eq!(tokens("Searching the files"), vec!["search", "file"]);
        assert_eq!(tokens("fs__grep"), vec!["fs", "grep"]);
        assert_eq!(tokens("HTTPServer"), vec!["httpserver"]);
        assert!(tokens("the of a").is_empty());
    }
}
