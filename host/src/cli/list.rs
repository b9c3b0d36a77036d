//! `toolhost list [--json]`: a table with a header on a terminal, the
//! same columns without it through a pipe, or JSON.

use std::io::IsTerminal;
use std::process::ExitCode;

use serde_json::json;

use super::{human, print_stdout};
use crate::escape::escape_line;
use crate::host::Host;

pub(super) fn run(host: &Host, as_json: bool) -> ExitCode {
    let tools = host.tools();
    // Deprecations go to stderr, so the listing itself stays parseable.
    for t in &tools {
        if let Some(d) = &t.spec.deprecated {
            eprintln!(
                "warning: {}",
                escape_line(&crate::governance::deprecation::warning(t.name(), d))
            );
        }
        // Held back by toolhost.lock: mounted, but not served.
        if let Some(why) = t.held() {
            eprintln!("warning: held back: {why}");
        }
    }
    if as_json {
        let items: Vec<_> = tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.spec.name,
                    "module": t.module.name,
                    "source": t.module.source,
                    "effect": t.spec.effect,
                    "summary": summary(&t.spec.description),
                    "aliases": t.spec.aliases,
                    "annotations": t.spec.annotations,
                    "version": t.spec.version,
                    "deprecated": t.spec.deprecated,
                    "held": t.held(),
                })
            })
            .collect();
        print_stdout(&serde_json::to_string_pretty(&items).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    if std::io::stdout().is_terminal() {
        let rows: Vec<Vec<String>> = tools
            .iter()
            .map(|t| {
                vec![
                    t.spec.name.clone(),
                    t.spec.effect.as_str().to_string(),
                    t.module.name.to_string(),
                    summary(&t.spec.description),
                ]
            })
            .collect();
        let header = ["TOOL", "EFFECT", "MODULE", "SUMMARY"];
        for line in human::table(&header, &rows, crate::term::colour_stdout()) {
            print_stdout(&line);
        }
        return ExitCode::SUCCESS;
    }
    // Through a pipe too, each tool is one line: a name or summary cannot
    // forge another.
    let width = tools
        .iter()
        .map(|t| escape_line(&t.spec.name).len())
        .max()
        .unwrap_or(4);
    let effect_width = tools
        .iter()
        .map(|t| t.spec.effect.as_str().len())
        .max()
        .unwrap_or(6);
    let source_width = tools
        .iter()
        .map(|t| t.module.source.as_str().len())
        .max()
        .unwrap_or(6);
    for t in &tools {
        print_stdout(&format!(
            "{:width$}  {:effect_width$}  {:source_width$}  {}",
            escape_line(&t.spec.name),
            t.spec.effect.as_str(),
            t.module.source.as_str(),
            escape_line(&summary(&t.spec.description))
        ));
    }
    ExitCode::SUCCESS
}

/// The first sentence (or line) of a description.
pub(super) fn summary(description: &str) -> String {
    let line = description.lines().next().unwrap_or("").trim();
    match line.find(". ") {
        Some(end) => line[..=end].to_string(),
        None => line.to_string(),
    }
}
