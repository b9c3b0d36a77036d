//! The page's HTML, rendered on the server: every value from a call (tool
//! names, principals, inputs, reasons) goes through [`escape`] before it
//! reaches the page, since any of them may be hostile.

use std::fmt::Write;

use serde_json::Value;

use crate::pipeline::approvals::Waiting;
use crate::pipeline::in_flight::Running;

/// Text made safe for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .5em;\
text-align:left;vertical-align:top}th{background:#f3f3f3}pre{margin:0;white-space:pre-wrap;\
max-width:60em;max-height:12em;overflow:auto}.error{color:#a00}.note{color:#666}\
form.inline{display:inline}header{display:flex;gap:1em;align-items:baseline}";

/// A whole page around `body`; no script, no outside resource.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        escape(title)
    )
}

/// The sign-in form, with `problem` shown above it.
pub fn login(problem: Option<&str>) -> String {
    let problem = problem
        .map(|p| format!("<p class=\"error\" id=\"problem\">{}</p>", escape(p)))
        .unwrap_or_default();
    page(
        "toolhost: sign in",
        &format!(
            "<h1>toolhost operator page</h1>{problem}\
             <form method=\"post\" action=\"/ui/login\">\
             <label>Bearer token <input type=\"password\" name=\"token\" id=\"token\" \
             autocomplete=\"off\" required></label> <button type=\"submit\" id=\"sign-in\">Sign in</button>\
             </form><p class=\"note\">Paste the token you use as <code>Authorization: Bearer</code>. \
             The page keeps a session cookie, never the token.</p>"
        ),
    )
}

/// A page saying why something was refused, with a way back.
pub fn message(title: &str, text: &str) -> String {
    page(
        title,
        &format!(
            "<h1>{}</h1><p class=\"error\" id=\"message\">{}</p><p><a href=\"/ui/\">Back to the operator page</a></p>",
            escape(title),
            escape(text)
        ),
    )
}

/// Milliseconds since the epoch as UTC `YYYY-MM-DD HH:MM:SS`.
pub fn when(ms: u128) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

/// What the dashboard shows.
pub struct Dashboard<'a> {
    /// The signed-in operator.
    pub principal: &'a str,
    /// The session's CSRF token, put in every form.
    pub csrf: &'a str,
    /// Calls in flight.
    pub running: &'a [Running],
    /// Approvals waiting.
    pub waiting: &'a [Waiting],
    /// The audit search's answer.
    pub audit: &'a super::audit_view::Found,
}

fn hidden_csrf(csrf: &str) -> String {
    format!("<input type=\"hidden\" name=\"csrf\" value=\"{}\">", escape(csrf))
}

/// The operator page: calls in flight, approvals waiting, the audit log.
pub fn dashboard(d: &Dashboard<'_>) -> String {
    let mut body = format!(
        "<header><h1>toolhost operator page</h1><span>signed in as <b id=\"me\">{}</b></span>\
         <a href=\"/ui/\">Refresh</a><form class=\"inline\" method=\"post\" action=\"/ui/logout\">{}\
         <button type=\"submit\" id=\"sign-out\">Sign out</button></form></header>",
        escape(d.principal),
        hidden_csrf(d.csrf)
    );
    body.push_str("<h2>Calls in flight</h2><table id=\"in-flight\"><tr><th>Tool</th><th>Principal</th><th>Started (UTC)</th><th>Elapsed</th><th>Call</th></tr>");
    for r in d.running {
        let _ = write!(
            body,
            "<tr><td class=\"tool\">{}</td><td>{}</td><td>{}</td><td>{:.1} s</td><td>{}</td></tr>",
            escape(&r.tool),
            escape(&r.principal),
            when(r.started_unix_ms),
            r.elapsed_ms as f64 / 1000.0,
            escape(&r.call_id)
        );
    }
    body.push_str("</table><h2>Approvals waiting</h2><table id=\"approvals\"><tr><th>Tool</th><th>Caller</th><th>Since (UTC)</th><th>Why</th><th>Input</th><th></th></tr>");
    for w in d.waiting {
        let input = serde_json::to_string_pretty(&w.input).unwrap_or_default();
        let separate = if w.another_principal {
            "<br><span class=\"note\">another principal must approve</span>"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<tr data-call=\"{call}\"><td class=\"tool\">{tool}</td><td>{who}</td><td>{since}</td><td>{why}{separate}</td>\
             <td><pre class=\"input\">{input}</pre></td><td><form method=\"post\" action=\"/ui/approvals/{id}\">{csrf}\
             <button name=\"decision\" value=\"approve\" class=\"approve\">Approve</button> \
             <button name=\"decision\" value=\"deny\" class=\"deny\">Deny</button></form></td></tr>",
            call = escape(&w.call_id),
            tool = escape(&w.tool),
            who = escape(&w.principal),
            since = when(w.since_unix_ms),
            why = escape(&w.reason),
            input = escape(&input),
            id = w.id,
            csrf = hidden_csrf(d.csrf),
        );
    }
    body.push_str("</table>");
    body.push_str(&audit_section(d.audit));
    page("toolhost operator page", &body)
}

fn field(name: &str, label: &str, kind: &str, value: &str) -> String {
    format!(
        "<label>{label} <input type=\"{kind}\" name=\"{name}\" id=\"q-{name}\" value=\"{}\"></label> ",
        escape(value)
    )
}

fn audit_section(found: &super::audit_view::Found) -> String {
    let q = &found.query;
    let mut out = String::from("<h2>Audit log</h2><form method=\"get\" action=\"/ui/\" id=\"audit-search\">");
    out.push_str(&field("tool", "Tool", "text", &q.tool));
    out.push_str(&field("principal", "Principal", "text", &q.principal));
    out.push_str(&field("status", "Status", "text", &q.status));
    out.push_str(&field("from", "From (UTC)", "datetime-local", &q.from));
    out.push_str(&field("to", "To (UTC)", "datetime-local", &q.to));
    out.push_str("<button type=\"submit\" id=\"search\">Search</button></form>");
    if let Some(note) = &found.note {
        let _ = write!(out, "<p class=\"note\" id=\"audit-note\">{}</p>", escape(note));
    }
    out.push_str("<table id=\"audit\"><tr><th>Time (UTC)</th><th>Tool</th><th>Principal</th><th>Status</th><th>Decision</th><th>Approver</th><th>Duration</th><th>Call</th></tr>");
    for r in &found.records {
        let text = |key: &str| escape(r.get(key).and_then(Value::as_str).unwrap_or(""));
        let ts = r.get("ts_unix_ms").and_then(Value::as_u64).unwrap_or(0);
        let ms = r.get("duration_ms").and_then(Value::as_f64).unwrap_or(0.0);
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"tool\">{}</td><td class=\"principal\">{}</td><td class=\"status\">{}</td>\
             <td>{}</td><td class=\"approver\">{}</td><td>{ms:.0} ms</td><td>{}</td></tr>",
            when(u128::from(ts)),
            text("tool"),
            text("principal"),
            text("status"),
            text("decision"),
            text("approver"),
            text("call_id"),
        );
    }
    out.push_str("</table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            escape("<img src=x onerror=\"alert('1')\">&"),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
        assert!(!login(Some("<script>")).contains("<script>"));
    }
}
