//! The checks, by category. `loading`, `mount` and `behaviour` drive the
//! loaded module inside a worker process; the static ones (`names`,
//! `descriptions`, `input_schema`, `spec_fields`) judge the specs the module
//! registered, also inside the worker, since a pathological schema can crash
//! a schema library as surely as a tool can crash itself.

pub mod behaviour;
pub mod descriptions;
pub mod input_schema;
pub mod loading;
pub mod mount;
pub mod names;
pub mod spec_fields;

use serde_json::Value;
use toolhost_core::ToolSpec;

use super::check::{names as n, CheckResult};

/// How a tool is named in reports: its name, or `#index` when it has none.
pub fn tool_label(index: usize, spec: &Value) -> String {
    match spec.get("name").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => format!("#{index}"),
    }
}

/// The module-wide static checks, in report order.
pub const MODULE_STATIC: [&str; 1] = [n::NAMES_UNIQUE];

/// The per-tool static checks, in report order.
pub const TOOL_STATIC: [&str; 14] = [
    n::SPEC_FORMAT,
    n::NAMES_SNAKE_CASE,
    n::NAMES_RESERVED,
    n::DESCRIPTIONS_PRESENT,
    n::DESCRIPTIONS_LENGTH,
    n::INPUT_SCHEMA_META,
    n::INPUT_SCHEMA_OBJECT,
    n::INPUT_SCHEMA_REQUIRED,
    n::INPUT_SCHEMA_DESCRIPTIONS,
    n::SPEC_OUTPUT_SCHEMA,
    n::SPEC_EFFECT,
    n::SPEC_ANNOTATIONS,
    n::SPEC_RESOURCE_KEYS,
    n::SPEC_ALIASES,
];

/// Runs every static check on the registered specs; `module` is the
/// manifest's name (a module may use the names it owns).
pub fn static_checks(specs: &[Value], module: &str, report: &mut dyn FnMut(CheckResult)) {
    let labels: Vec<String> = specs.iter().enumerate().map(|(i, s)| tool_label(i, s)).collect();
    report(names::unique(specs, &labels));
    for (index, spec) in specs.iter().enumerate() {
        let tool = labels[index].as_str();
        let run = |check: &str, f: &dyn Fn() -> CheckResult| -> CheckResult {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                CheckResult::fail(
                    check,
                    Some(tool),
                    format!("the check itself panicked on this spec: {message}"),
                )
            })
        };
        let parsed: Result<ToolSpec, serde_json::Error> = serde_json::from_value(spec.clone());
        report(run(n::SPEC_FORMAT, &|| spec_fields::format(spec, &parsed, tool)));
        report(run(n::NAMES_SNAKE_CASE, &|| names::snake_case(spec, tool)));
        report(run(n::NAMES_RESERVED, &|| names::reserved(spec, tool, module)));
        report(run(n::DESCRIPTIONS_PRESENT, &|| {
            descriptions::present(spec, tool)
        }));
        report(run(n::DESCRIPTIONS_LENGTH, &|| descriptions::length(spec, tool)));
        report(run(n::INPUT_SCHEMA_META, &|| input_schema::meta(spec, tool)));
        report(run(n::INPUT_SCHEMA_OBJECT, &|| input_schema::object(spec, tool)));
        report(run(n::INPUT_SCHEMA_REQUIRED, &|| {
            input_schema::required(spec, tool)
        }));
        report(run(n::INPUT_SCHEMA_DESCRIPTIONS, &|| {
            input_schema::descriptions(spec, tool)
        }));
        report(run(n::SPEC_OUTPUT_SCHEMA, &|| {
            spec_fields::output_schema(spec, tool)
        }));
        report(run(n::SPEC_EFFECT, &|| spec_fields::effect(spec, tool)));
        report(run(n::SPEC_ANNOTATIONS, &|| spec_fields::annotations(spec, tool)));
        report(run(n::SPEC_RESOURCE_KEYS, &|| {
            spec_fields::resource_keys(spec, tool)
        }));
        report(run(n::SPEC_ALIASES, &|| {
            spec_fields::aliases(specs, index, tool, module)
        }));
    }
}

/// Whether `s` is snake_case: lower-case ASCII words of letters and digits,
/// joined by single underscores, starting with a letter.
pub fn is_snake_case(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z'))
        && !s.ends_with('_')
        && !s.contains("__")
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
}

/// Runs the spec group: mount, then every static check on the specs.
pub fn run_static(job: &crate::validate::protocol::Job, sink: &crate::validate::worker::sink::Sink) {
    sink.begin(n::SPEC_FORMAT, None, "mount and read the specs");
    let (module, name) = match mount::open_module(job) {
        Ok(opened) => opened,
        Err(e) => return sink.result(CheckResult::skip(n::SPEC_FORMAT, None, e.to_string())),
    };
    let mounted = match crate::validate::worker::session::mount(module, &name, &job.config, &job.work_dir) {
        Ok(m) => m,
        Err(e) => {
            return sink.result(CheckResult::skip(
                n::SPEC_FORMAT,
                None,
                format!("mount failed: {e}"),
            ))
        }
    };
    let specs = mounted.specs();
    static_checks(&specs, &name, &mut |r| sink.result(r));
    let _ = mounted.cleanup(std::time::Duration::from_secs(10));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case() {
        for good in ["read_file", "a", "web_fetch2", "x1_y"] {
            assert!(is_snake_case(good), "{good}");
        }
        for bad in [
            "",
            "Read",
            "read-file",
            "_x",
            "x_",
            "a__b",
            "1a",
            "readFile",
            "a b",
        ] {
            assert!(!is_snake_case(bad), "{bad}");
        }
    }
}
