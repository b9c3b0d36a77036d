//! Output guardrail: secrets in a result are replaced with
//! `[REDACTED:<kind>]` before the result leaves the host, and counted by
//! kind in `metadata.redactions`.
//!
//! Two sources: the values of the host's secret-named environment variables
//! (a name holding TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL,
//! PRIVATE, API_KEY, APIKEY or ACCESS_KEY, or ending in `_KEY`, plus
//! `[host.redact] variables`; values shorter than `min_length`, default 8,
//! are left alone because they would match ordinary words), and common
//! credential formats (cloud keys, git host tokens, private key blocks,
//! JWTs, chat-service tokens, payment keys, plus `[host.redact] patterns`).
//! Everything is one regex (one alternation, one pass over the text): a
//! text without a match costs one DFA scan.
//!
//! It covers every channel a tool's words reach a caller or the host's log
//! by: the output (strings and object keys, so also MCP
//! `structuredContent`), text content blocks, the error's message and
//! `details`, the tool's own `metadata`, progress reports (their `message`,
//! sent as MCP `notifications/progress`), and log lines of modules, workers
//! and mounted servers (which are also escaped to stay one line each).
//!
//! What it does not do: find secrets in formats it does not know, encoded
//! secrets (base64 of a token, a token split by the tool itself across
//! lines), or values of variables whose names do not look secret. It runs
//! on the whole output before the host cuts long output to its head and
//! tail, so a secret across that boundary is caught whole; a secret a tool
//! cut in two itself is not.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use regex::{Captures, Regex};
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_core::{ContentBlock, ToolResult};

/// `[host.redact]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactSection {
    /// On by default.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// More formats: kind = regex.
    #[serde(default)]
    pub patterns: BTreeMap<String, String>,
    /// More variables whose values are secrets, whatever their names.
    #[serde(default)]
    pub variables: Vec<String>,
    /// Shorter variable values are not redacted.
    #[serde(default = "default_min_length")]
    pub min_length: usize,
    /// The guardrail this section builds, compiled at most once per plan
    /// (shared by the plan's clones): the plan check compiles it to refuse a
    /// bad pattern, and the pipeline takes that same one.
    #[serde(skip)]
    compiled: Compiled,
}

impl Default for RedactSection {
    fn default() -> Self {
        RedactSection {
            enabled: true,
            patterns: BTreeMap::new(),
            variables: Vec::new(),
            min_length: default_min_length(),
            compiled: Compiled::default(),
        }
    }
}

/// Why the guardrail cannot be built: the plan's own pattern named when
/// it is at fault. Cloned because the compiled result (or its failure) is
/// kept once per plan and handed to every pipeline.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RedactError {
    /// A `[host.redact] patterns` regex does not compile.
    #[error("[host.redact] patterns.{kind}: {error}")]
    Pattern {
        /// The pattern's kind (its key).
        kind: String,
        /// What the regex parser said.
        error: regex::Error,
    },
    /// Every pattern compiles alone but not together (the size limit).
    #[error("[host.redact]: cannot build the redaction pattern: {0}")]
    Combined(regex::Error),
}

impl RedactSection {
    /// Checks the plan's extra patterns by compiling the guardrail (from
    /// this process's environment), which is then kept for
    /// [`RedactSection::redactor`]. A section without extra patterns has
    /// nothing that can fail, so nothing is compiled until a pipeline asks:
    /// `list` and `describe` never pay for it.
    pub fn check(&self) -> Result<(), RedactError> {
        if self.patterns.is_empty() {
            return Ok(());
        }
        self.redactor().map(drop)
    }

    /// The guardrail for this section and the process's environment
    /// (`None` when `enabled = false`), compiled on the first call and
    /// shared after it.
    pub fn redactor(&self) -> Result<Option<Redactor>, RedactError> {
        self.compiled
            .0
            .get_or_init(|| Redactor::new(self, std::env::vars()))
            .clone()
    }
}

/// The compiled guardrail of one plan's section, filled once.
#[derive(Clone, Default)]
struct Compiled(Arc<OnceLock<Result<Option<Redactor>, RedactError>>>);

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.0.get() {
            None => "not compiled",
            Some(Ok(Some(_))) => "compiled",
            Some(Ok(None)) => "off",
            Some(Err(_)) => "failed",
        };
        f.write_str(state)
    }
}

fn yes() -> bool {
    true
}

fn default_min_length() -> usize {
    8
}

/// The built-in credential formats: (kind, regex).
pub const FORMATS: &[(&str, &str)] = &[
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
    ),
    (
        "aws_access_key",
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
    ),
    ("gcp_api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
    ),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}",
    ),
    ("slack_token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
    (
        "slack_webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]+",
    ),
    ("stripe_key", r"\b[rs]k_live_[0-9A-Za-z]{20,}"),
];

/// Whether a variable name looks like it holds a secret.
pub fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const WORDS: [&str; 10] = [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "PRIVATE",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
    ];
    WORDS.iter().any(|w| upper.contains(w)) || upper.ends_with("_KEY") || upper == "KEY"
}

/// The compiled guardrail. Cloning it shares the compiled pattern.
#[derive(Clone)]
pub struct Redactor {
    inner: Arc<Alternation>,
}

/// One regex over every secret and format, and which group is which kind.
struct Alternation {
    regex: Regex,
    /// Capture group index → kind.
    kinds: Vec<(usize, String)>,
}

impl Redactor {
    /// Builds the guardrail from the plan and the environment (`None` when
    /// `[host.redact] enabled = false`). A bad extra pattern is an error.
    pub fn new(
        section: &RedactSection,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Option<Redactor>, RedactError> {
        if !section.enabled {
            return Ok(None);
        }
        let mut parts: Vec<(String, String)> = Vec::new();
        let mut secrets: Vec<(String, String)> = env
            .into_iter()
            .filter(|(name, value)| {
                (secret_name(name) || section.variables.contains(name))
                    && value.trim().len() >= section.min_length.max(1)
            })
            .map(|(name, value)| (format!("env:{name}"), value.trim().to_string()))
            .collect();
        // Longer values first: one secret may contain another.
        secrets.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        for (kind, value) in secrets {
            parts.push((kind, regex::escape(&value)));
        }
        for (kind, pattern) in FORMATS {
            parts.push(((*kind).to_string(), (*pattern).to_string()));
        }
        for (kind, pattern) in &section.patterns {
            parts.push((kind.clone(), pattern.clone()));
        }
        let alternation = parts
            .iter()
            .enumerate()
            .map(|(i, (_, p))| format!("(?P<g{i}>{p})"))
            .collect::<Vec<_>>()
            .join("|");
        let regex = regex::RegexBuilder::new(&alternation)
            .size_limit(64 << 20)
            .build()
            .map_err(|e| {
                // Each pattern is compiled once, inside the alternation; only
                // when that fails are the plan's own compiled alone, to name
                // the bad one.
                for (kind, pattern) in &section.patterns {
                    if let Err(alone) = Regex::new(pattern) {
                        return RedactError::Pattern {
                            kind: kind.clone(),
                            error: alone,
                        };
                    }
                }
                RedactError::Combined(e)
            })?;
        let kinds = parts
            .into_iter()
            .enumerate()
            .filter_map(|(i, (kind, _))| {
                let name = format!("g{i}");
                regex
                    .capture_names()
                    .position(|n| n == Some(name.as_str()))
                    .map(|index| (index, kind))
            })
            .collect();
        Ok(Some(Redactor {
            inner: Arc::new(Alternation { regex, kinds }),
        }))
    }

    /// `text` with every secret replaced, or `None` when it holds none.
    pub fn redact_str(&self, text: &str, counts: &mut BTreeMap<String, u64>) -> Option<String> {
        let Alternation { regex, kinds } = &*self.inner;
        if !regex.is_match(text) {
            return None;
        }
        let replaced = regex.replace_all(text, |caps: &Captures<'_>| {
            let kind = kinds
                .iter()
                .find(|(index, _)| caps.get(*index).is_some())
                .map_or("secret", |(_, kind)| kind.as_str());
            *counts.entry(kind.to_string()).or_insert(0) += 1;
            format!("[REDACTED:{kind}]")
        });
        Some(replaced.into_owned())
    }

    /// Redacts every string in `value`, object keys included, in place.
    pub fn redact_value(&self, value: &mut Value, counts: &mut BTreeMap<String, u64>) {
        match value {
            Value::String(s) => {
                if let Some(clean) = self.redact_str(s, counts) {
                    *s = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v, counts)),
            Value::Object(map) => self.redact_map(map, counts),
            _ => {}
        }
    }

    /// Redacts an object's keys and values. A map is rebuilt only when a
    /// key holds a secret; two keys that redact alike keep both values (the
    /// later one under `<key>#2`, …).
    fn redact_map(&self, map: &mut serde_json::Map<String, Value>, counts: &mut BTreeMap<String, u64>) {
        map.values_mut().for_each(|v| self.redact_value(v, counts));
        if !map.keys().any(|k| self.inner.regex.is_match(k)) {
            return;
        }
        let mut clean = serde_json::Map::with_capacity(map.len());
        for (key, value) in std::mem::take(map) {
            let base = self.redact_str(&key, counts).unwrap_or(key);
            let mut key = base.clone();
            let mut n = 1;
            while clean.contains_key(&key) {
                n += 1;
                key = format!("{base}#{n}");
            }
            clean.insert(key, value);
        }
        *map = clean;
    }

    /// Redacts a content block's text: a text block's, an inline text
    /// resource's, and a link's or resource's URI, name, title and
    /// description. Base64 data (an image, audio, a binary resource) is
    /// bytes, not text, and is left as it is.
    fn redact_block(&self, block: &mut ContentBlock, counts: &mut BTreeMap<String, u64>) {
        let mut fields: Vec<&mut String> = Vec::new();
        match block {
            ContentBlock::Text { text } => fields.push(text),
            ContentBlock::ResourceLink {
                uri,
                name,
                title,
                description,
                ..
            } => {
                fields.extend([uri, name]);
                fields.extend(title.as_mut());
                fields.extend(description.as_mut());
            }
            ContentBlock::Resource { uri, text, .. } => {
                fields.push(uri);
                fields.extend(text.as_mut());
            }
            _ => {}
        }
        for field in fields {
            if let Some(clean) = self.redact_str(field, counts) {
                *field = clean;
            }
        }
    }

    /// A progress sink that redacts each report (its `message`, and any
    /// other string) before passing it on.
    pub fn progress_sink(
        &self,
        sink: Option<crate::progress::ProgressSink>,
    ) -> Option<crate::progress::ProgressSink> {
        let sink = sink?;
        let redactor = self.clone();
        Some(std::sync::Arc::new(move |mut report: Value| {
            redactor.redact_value(&mut report, &mut BTreeMap::new());
            sink(report)
        }))
    }

    /// Redacts a result's output and structured data, error message and
    /// details, the text of its content blocks (see `redact_block`)
    /// and the tool's metadata; records the counts in `metadata.redactions`
    /// and returns their sum (for `toolhost_redactions_total`).
    pub fn redact_result(&self, result: &mut ToolResult) -> u64 {
        let mut counts = BTreeMap::new();
        self.redact_value(&mut result.output, &mut counts);
        if let Some(structured) = result.structured.as_mut() {
            self.redact_value(structured, &mut counts);
        }
        self.redact_map(&mut result.metadata.extra, &mut counts);
        if let Some(error) = result.error.as_mut() {
            if let Some(clean) = self.redact_str(&error.message, &mut counts) {
                error.message = clean;
            }
            if let Some(details) = error.details.as_mut() {
                self.redact_value(details, &mut counts);
            }
        }
        for block in &mut result.content {
            self.redact_block(block, &mut counts);
        }
        let total = counts.values().sum();
        if !counts.is_empty() {
            result.metadata.extra.insert("redactions".into(), json!(counts));
        }
        total
    }
}

/// The guardrail for log lines: the plan of the first host loaded in this
/// process (log lines, like the `tracing` subscriber they go to, are the
/// process's), compiled at the first line that needs it.
static LOGS: OnceLock<RedactSection> = OnceLock::new();

/// Makes `section` the guardrail of module and server log lines, unless a
/// host loaded earlier in this process set one.
pub fn guard_logs(section: &RedactSection) {
    let _ = LOGS.set(section.clone());
}

/// A log message from a module, a worker or a mounted server, made safe
/// for the host's log: secrets redacted, and control characters escaped so
/// that one message stays one line (a newline in it cannot forge a record).
pub fn log_message(message: &str) -> String {
    let redactor = LOGS.get().and_then(|section| section.redactor().ok().flatten());
    let redacted = redactor.and_then(|r| r.redact_str(message, &mut BTreeMap::new()));
    crate::escape::escape_line(redacted.as_deref().unwrap_or(message)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_look_secret() {
        for name in [
            "GITHUB_TOKEN",
            "db_password",
            "AWS_SECRET_ACCESS_KEY",
            "SSH_KEY",
            "OPENAI_API_KEY",
        ] {
            assert!(secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "KEYBOARD_LAYOUT", "MONKEY"] {
            assert!(!secret_name(name), "{name}");
        }
    }

    #[test]
    fn env_values_and_formats() {
        let env = vec![
            ("MY_TOKEN".to_string(), "s3cr3t-value-123".to_string()),
            ("SHORT_TOKEN".to_string(), "abc".to_string()),
            ("PLAIN".to_string(), "not-a-secret-at-all".to_string()),
        ];
        let r = Redactor::new(&RedactSection::default(), env)
            .expect("builds")
            .expect("on");
        let mut counts = BTreeMap::new();
        let out = r
            .redact_str(
                "a s3cr3t-value-123 b abc not-a-secret-at-all AKIAABCDEFGHIJKLMNOP",
                &mut counts,
            )
            .expect("found");
        assert_eq!(
            out,
            "a [REDACTED:env:MY_TOKEN] b abc not-a-secret-at-all [REDACTED:aws_access_key]"
        );
        assert_eq!(counts.len(), 2);
        assert!(r.redact_str("nothing here", &mut counts).is_none());
    }

    #[test]
    fn text_content_blocks_and_error_messages_are_redacted() {
        let token = format!("glpat-{}", "abcdefghij0123456789");
        let r = Redactor::new(&RedactSection::default(), Vec::new())
            .expect("builds")
            .expect("on");
        let mut ok = ToolResult::success("c", json!({"text": "clean"})).with_content(vec![
            ContentBlock::text(format!("see {token}")),
            ContentBlock::image("image/png", "aGk="),
        ]);
        r.redact_result(&mut ok);
        assert_eq!(ok.content[0], ContentBlock::text("see [REDACTED:gitlab_token]"));
        assert_eq!(ok.content[1], ContentBlock::image("image/png", "aGk="));
        assert_eq!(ok.metadata.extra["redactions"], json!({"gitlab_token": 1}));
        let mut failed = ToolResult::failure("c", toolhost_core::Status::Error, "x", format!("bad {token}"))
            .with_details(json!({"token": token}));
        r.redact_result(&mut failed);
        assert_eq!(failed.message(), "bad [REDACTED:gitlab_token]");
        assert_eq!(failed.metadata.extra["redactions"], json!({"gitlab_token": 2}));
    }

    /// A mounted server's link and inline resource: their text fields are
    /// redacted, a binary resource's base64 `blob` is not.
    #[test]
    fn links_and_resources_are_redacted_but_not_their_bytes() {
        let token = format!("glpat-{}", "abcdefghij0123456789");
        let r = Redactor::new(&RedactSection::default(), Vec::new())
            .expect("builds")
            .expect("on");
        let blob = format!("{token}==");
        let mut result = ToolResult::success("c", Value::Null).with_content(vec![
            ContentBlock::ResourceLink {
                uri: format!("https://x.example/?t={token}"),
                name: "n".into(),
                title: None,
                description: Some(format!("has {token}")),
                mime_type: None,
                size: None,
            },
            ContentBlock::Resource {
                uri: "file:///a".into(),
                mime_type: None,
                text: Some(token.clone()),
                blob: None,
            },
            ContentBlock::Resource {
                uri: "file:///b".into(),
                mime_type: None,
                text: None,
                blob: Some(blob.clone()),
            },
        ]);
        r.redact_result(&mut result);
        let wire = serde_json::to_string(&result.content[..2]).expect("json");
        assert!(!wire.contains(&token), "{wire}");
        assert!(matches!(&result.content[2], ContentBlock::Resource { blob: Some(b), .. } if *b == blob));
        assert_eq!(result.metadata.extra["redactions"], json!({"gitlab_token": 3}));
    }

    /// Each channel a secret can leave by, one assertion each: object keys
    /// (in the output, which MCP also sends as `structuredContent`), the
    /// tool's metadata, error details and progress reports.
    #[test]
    fn keys_metadata_details_and_progress_are_redacted() {
        let token = format!("glpat-{}", "abcdefghij0123456789");
        let r = Redactor::new(&RedactSection::default(), Vec::new())
            .expect("builds")
            .expect("on");
        let mut keyed = ToolResult::success("c", json!({ token.clone(): {"inner": 1}, "plain": 2 }));
        r.redact_result(&mut keyed);
        assert_eq!(
            keyed.output,
            json!({"[REDACTED:gitlab_token]": {"inner": 1}, "plain": 2})
        );

        let mut with_meta = ToolResult::success("c", json!("ok"));
        with_meta
            .metadata
            .extra
            .insert("note".into(), json!(format!("used {token}")));
        with_meta.metadata.extra.insert(token.clone(), json!(true));
        r.redact_result(&mut with_meta);
        let meta = serde_json::to_string(&with_meta.metadata).unwrap();
        assert!(!meta.contains(&token), "{meta}");
        assert_eq!(
            with_meta.metadata.extra["note"],
            json!("used [REDACTED:gitlab_token]")
        );
        assert_eq!(with_meta.metadata.extra["redactions"], json!({"gitlab_token": 2}));

        let mut failed = ToolResult::failure("c", toolhost_core::Status::Error, "x", "failed")
            .with_details(json!({ token.clone(): [format!("again {token}")] }));
        r.redact_result(&mut failed);
        let details = failed.error.as_ref().and_then(|e| e.details.clone()).unwrap();
        assert_eq!(
            details,
            json!({"[REDACTED:gitlab_token]": ["again [REDACTED:gitlab_token]"]})
        );

        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink: crate::progress::ProgressSink = {
            let seen = seen.clone();
            Arc::new(move |v| seen.lock().unwrap().push(v))
        };
        let sink = r.progress_sink(Some(sink)).expect("a sink");
        sink(json!({"progress": 1, "message": format!("cloning with {token}")}));
        assert_eq!(
            seen.lock().unwrap()[0],
            json!({"progress": 1, "message": "cloning with [REDACTED:gitlab_token]"})
        );
    }

    #[test]
    fn two_keys_that_redact_alike_keep_both_values() {
        let r = Redactor::new(&RedactSection::default(), Vec::new())
            .unwrap()
            .unwrap();
        let (a, b) = (
            format!("glpat-{}", "a".repeat(20)),
            format!("glpat-{}", "b".repeat(20)),
        );
        let mut value = json!({ a: 1, b: 2 });
        r.redact_value(&mut value, &mut BTreeMap::new());
        assert_eq!(
            value,
            json!({"[REDACTED:gitlab_token]": 1, "[REDACTED:gitlab_token]#2": 2})
        );
    }

    /// The plan check compiles the guardrail once and every pipeline of
    /// that plan (and of its clones) takes the same one.
    #[test]
    fn one_compile_serves_the_plan_check_and_every_pipeline() {
        let mut section = RedactSection::default();
        section
            .patterns
            .insert("ticket".into(), r"\bTICKET-[0-9]{6}\b".into());
        assert!(section.compiled.0.get().is_none());
        section.check().expect("valid pattern");
        let checked = section.compiled.0.get().cloned().expect("the check compiled it");
        let clone = section.clone();
        for r in [section.redactor(), clone.redactor(), section.redactor()] {
            let r = r.expect("compiled").expect("on");
            let kept = checked.as_ref().ok().and_then(Option::as_ref).expect("on");
            assert!(Arc::ptr_eq(&r.inner, &kept.inner), "compiled again");
        }
        let mut counts = BTreeMap::new();
        let r = clone.redactor().unwrap().unwrap();
        assert_eq!(
            r.redact_str("see TICKET-123456", &mut counts).as_deref(),
            Some("see [REDACTED:ticket]")
        );
    }

    #[test]
    fn a_bad_pattern_is_named_by_the_check_and_without_patterns_nothing_compiles() {
        let mut section = RedactSection::default();
        section.check().expect("nothing to check");
        assert!(section.compiled.0.get().is_none(), "compiled without patterns");
        section.patterns.insert("fine".into(), "abc".into());
        section.patterns.insert("broken".into(), "(unclosed".into());
        let e = section.check().expect_err("bad pattern");
        assert!(
            matches!(&e, RedactError::Pattern { kind, .. } if kind == "broken"),
            "{e}"
        );
        assert!(e.to_string().starts_with("[host.redact] patterns.broken:"), "{e}");
    }
}
