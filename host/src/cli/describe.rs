//! `toolhost describe TOOL`: the full spec, schema included.

use std::process::ExitCode;

use serde_json::json;

use super::{print_stdout, EXIT_USAGE};
use crate::host::Host;
use crate::pipeline::resolve;

pub(super) fn run(host: &Host, name: &str) -> ExitCode {
    let Some(tool) = host.tool(name) else {
        eprintln!("error: {}", resolve::unknown(name, &host.suggest(name)));
        return ExitCode::from(EXIT_USAGE);
    };
    let mut spec = serde_json::to_value(&tool.spec).unwrap_or_default();
    // A profile's name: its own schema, and the tool it runs as.
    if let Some(profile) = host
        .resolve(name)
        .and_then(|r| r.profile.filter(|_| !r.alternative))
    {
        spec["name"] = json!(name);
        spec["input_schema"] = profile.def().schema.clone();
        if let Some(description) = &profile.def().description {
            spec["description"] = json!(description);
        }
        spec["alias_of"] = json!(tool.name());
        spec["family"] = json!(profile.family());
    }
    spec["module"] = json!({
        "name": tool.module.name,
        "version": tool.module.version,
        "path": tool.module.path,
    });
    let json = serde_json::to_string_pretty(&spec).unwrap_or_default();
    // On a terminal, the characters JSON leaves raw that a terminal acts
    // on are written as \u escapes: the same JSON value, shown safely.
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        print_stdout(&crate::escape::escape_json(&json));
    } else {
        print_stdout(&json);
    }
    ExitCode::SUCCESS
}
