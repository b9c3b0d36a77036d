//! `behaviour.*`: calls into one tool with `{}`, wrong types, oversized
//! strings and inputs generated from its schema, and one long call that is
//! cancelled. Every answer must be a well-formed result; a panic, a hang or
//! an abort fails the check (an abort kills this worker, and the parent
//! reports the case it had begun).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolhost_core::abi::FfiToolBox;
use toolhost_core::Status;

use crate::validate::check::{names as n, CheckResult, Outcome, Verdict};
use crate::validate::inputs::{Case, Fill, Generator};
use crate::validate::protocol::Job;
use crate::validate::wire_check::{self, clip, Problem};
use crate::validate::worker::call::{self, Outcome as CallOutcome};
use crate::validate::worker::{session, sink::Sink};

/// The deadline of the cancel check's long call.
const CANCEL_AFTER: Duration = Duration::from_millis(500);

/// What a check expects of the statuses its calls return.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Anything well-formed.
    Any,
    /// Schema-valid input: a parser refusal means the schema and the parser disagree.
    Valid,
    /// Schema-invalid input: success means the parser accepts what the schema refuses.
    Invalid,
}

/// Runs one behaviour check on the tool at `index`. Returns normally when
/// the check finished; exits the process when a call hung (its thread
/// cannot be stopped, and the module may no longer be usable).
pub fn run(job: &Job, sink: &Sink, check: &str, index: usize, tool: &str) {
    sink.begin(check, Some(tool), "mount");
    let (module, name) = match super::mount::open_module(job) {
        Ok(opened) => opened,
        Err(e) => return sink.result(CheckResult::skip(check, Some(tool), e.to_string())),
    };
    let mounted = match session::mount(module, &name, &job.config, &job.work_dir) {
        Ok(m) => m,
        Err(e) => return sink.result(CheckResult::skip(check, Some(tool), format!("mount failed: {e}"))),
    };
    let specs = mounted.specs();
    let (Some(ffi), Some(spec)) = (mounted.tools.get(index).cloned(), specs.get(index)) else {
        return sink.result(CheckResult::skip(
            check,
            Some(tool),
            format!("the module registered no tool #{index} this time"),
        ));
    };
    let call_name = spec
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(tool)
        .to_string();
    let schema = spec.get("input_schema").cloned().unwrap_or(Value::Null);
    let output_schema = spec
        .get("output_schema")
        .filter(|s| !s.is_null())
        .and_then(|s| jsonschema::validator_for(s).ok());
    let generator = Generator::new(&schema);
    let call_timeout = Duration::from_millis(job.call_timeout_ms);
    let bound = Duration::from_millis(job.cancel_bound_ms);

    let (cases, expect) = match check {
        n::BEHAVIOUR_EMPTY_INPUT => (vec![case("{}", json!({}))], Expect::Any),
        n::BEHAVIOUR_WRONG_TYPES => (generator.wrong_types(), Expect::Invalid),
        n::BEHAVIOUR_OVERSIZED_STRINGS => (generator.oversized(), Expect::Any),
        n::BEHAVIOUR_BOUNDARY_INPUTS => (generator.boundaries(), Expect::Any),
        n::BEHAVIOUR_VALID_INPUTS => {
            let mut cases = Vec::new();
            for (label, fill) in [
                ("minimal valid input", Fill::Minimal),
                ("full valid input", Fill::Full),
            ] {
                if let Some(input) = generator.valid(fill) {
                    if !cases.iter().any(|c: &Case| c.input == input) {
                        cases.push(case(label, input));
                    }
                }
            }
            (cases, Expect::Valid)
        }
        n::BEHAVIOUR_INVALID_INPUTS => (generator.invalid(), Expect::Invalid),
        n::BEHAVIOUR_CANCEL => {
            cancel_check(sink, tool, &ffi, &call_name, &generator, job, bound);
            drop(ffi);
            let _ = mounted.cleanup(bound);
            return;
        }
        other => {
            return sink.result(CheckResult::fail(other, Some(tool), "unknown behaviour check"));
        }
    };
    if cases.is_empty() {
        let why = match check {
            n::BEHAVIOUR_OVERSIZED_STRINGS => "no string properties to oversize",
            n::BEHAVIOUR_BOUNDARY_INPUTS => "no typed properties to push to their boundaries",
            n::BEHAVIOUR_VALID_INPUTS => {
                "could not generate a schema-valid input (a pattern or a $ref this generator cannot follow)"
            }
            _ => "the schema gives no way to build such an input",
        };
        let outcome = if check == n::BEHAVIOUR_VALID_INPUTS {
            Outcome::Skip
        } else {
            Outcome::Pass
        };
        sink.result(CheckResult::new(check, Some(tool), outcome, why));
        drop(ffi);
        let _ = mounted.cleanup(bound);
        return;
    }

    let mut v = Verdict::new();
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for case in &cases {
        sink.begin(check, Some(tool), clip(&case.label, 200));
        match call::call(&ffi, &call_name, &case.input, &job.work_dir, call_timeout, bound) {
            CallOutcome::Hung { deadline, bound } => {
                v.fail(format!(
                    "hung on {}: still running {} ms after being cancelled at its {} ms deadline",
                    case.label,
                    bound.as_millis(),
                    deadline.as_millis()
                ));
                sink.result(v.finish(check, Some(tool), ""));
                std::process::exit(0);
            }
            CallOutcome::Returned { text, call_id, .. } => {
                let checked = wire_check::check(&text, &call_id);
                for problem in checked.problems {
                    match problem {
                        Problem::Fail(m) => v.fail(format!("on {}: {m}", case.label)),
                        Problem::Warn(m) => v.warn(format!("on {}: {m}", case.label)),
                    }
                }
                let Some(result) = checked.result else { continue };
                *statuses.entry(result.status.to_string()).or_default() += 1;
                match (expect, result.status) {
                    (Expect::Invalid, Status::Success) if case.worth_refusing => v.warn(format!(
                        "accepted {} although the schema refuses it: the tool's parser and its schema disagree",
                        case.label
                    )),
                    (Expect::Invalid, Status::Success) => {
                        v.note(format!("accepted {} (the host refuses it first)", case.label))
                    }
                    (Expect::Valid, Status::ValidationError) if result.message().starts_with("invalid input at") => {
                        v.warn(format!(
                            "refused {} ({}) although the schema accepts it: the tool's parser and its schema disagree",
                            case.label,
                            clip(result.message(), 160)
                        ))
                    }
                    (_, Status::Success) => {
                        if let Some(validator) = &output_schema {
                            // A structured output answers its schema with its data.
                            let checked = result.structured.as_ref().unwrap_or(&result.output);
                            if let Err(e) = validator.validate(checked) {
                                v.fail(format!(
                                    "on {}: the output does not match the output schema: {}",
                                    case.label,
                                    clip(&e.to_string(), 160)
                                ));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let seen = statuses
        .iter()
        .map(|(s, c)| format!("{s}×{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    for case in &cases {
        v.note(format!("input: {}", case.label));
    }
    sink.result(v.finish(
        check,
        Some(tool),
        format!("{} inputs, well-formed results ({seen})", cases.len()),
    ));
    drop(ffi);
    if let Err(e) = mounted.cleanup(bound) {
        eprintln!("cleanup after {check}: {e}");
    }
}

fn case(label: &str, input: Value) -> Case {
    Case {
        label: label.to_string(),
        input,
        worth_refusing: false,
    }
}

/// `behaviour.cancel`: a long call (numbers as large as the schema allows)
/// is cancelled after a short deadline and must return within the bound.
fn cancel_check(
    sink: &Sink,
    tool: &str,
    ffi: &Arc<FfiToolBox>,
    call_name: &str,
    generator: &Generator<'_>,
    job: &Job,
    bound: Duration,
) {
    let input = generator
        .valid(Fill::Long)
        .or_else(|| generator.valid(Fill::Full))
        .or_else(|| generator.valid(Fill::Minimal))
        .unwrap_or_else(|| json!({}));
    let label = format!("long input {}", clip(&input.to_string(), 120));
    let deadline = CANCEL_AFTER.min(Duration::from_millis(job.call_timeout_ms));
    sink.begin(n::BEHAVIOUR_CANCEL, Some(tool), label.clone());
    let mut v = Verdict::new();
    let message = match call::call(ffi, call_name, &input, &job.work_dir, deadline, bound) {
        CallOutcome::Hung { deadline, bound } => {
            v.fail(format!(
                "ignored cancel: still running {} ms after being cancelled at {} ms (on {label}); \
                 wait with Context::wait_cancelled or check Context::is_cancelled in loops",
                bound.as_millis(),
                deadline.as_millis()
            ));
            sink.result(v.finish(n::BEHAVIOUR_CANCEL, Some(tool), ""));
            std::process::exit(0);
        }
        CallOutcome::Returned {
            text,
            call_id,
            elapsed,
            after_cancel,
        } => {
            let checked = wire_check::check(&text, &call_id);
            for problem in checked.problems {
                match problem {
                    Problem::Fail(m) => v.fail(format!("on {label}: {m}")),
                    Problem::Warn(m) => v.warn(format!("on {label}: {m}")),
                }
            }
            let status = checked.result.map(|r| r.status.to_string()).unwrap_or_default();
            match after_cancel {
                Some(d) => format!(
                    "returned {} ms after the cancel (bound {} ms), status {status}",
                    d.as_millis(),
                    bound.as_millis()
                ),
                None => format!(
                    "returned in {} ms, before the cancel at {} ms (not a long call), status {status}",
                    elapsed.as_millis(),
                    deadline.as_millis()
                ),
            }
        }
    };
    v.note(label);
    sink.result(v.finish(n::BEHAVIOUR_CANCEL, Some(tool), message));
}
