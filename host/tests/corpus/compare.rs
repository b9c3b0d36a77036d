//! The one comparison: every observation against the reference, with the
//! known differences applied to the reference first, and every known
//! difference checked to be real.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::backends::Backend;
use crate::cases::{Act, Case, CASES};
use crate::differences::{Difference, Instead, DIFFERENCES};
use crate::doors::Door;

/// The front door and backend every other pair is compared with.
pub const REFERENCE: (Door, Backend) = (Door::Call, Backend::InProcess);

/// Compares every observation; fails listing every mismatch.
pub fn all(observed: &BTreeMap<(Door, Backend), Vec<Value>>) {
    let mut failures = Vec::new();
    let mut used = vec![false; DIFFERENCES.len()];
    let reference = &observed[&REFERENCE];
    for (i, case) in CASES.iter().enumerate() {
        let expected = masked(case, &reference[i]);
        if let Err(why) = sane(case, &reference[i]).and_then(|()| status(case, &reference[i])) {
            failures.push(format!(
                "{}: the reference answer is wrong: {why}\n{:#}",
                case.name, reference[i]
            ));
        }
        for (&(door, backend), answers) in observed {
            if let Err(why) = sane(case, &answers[i]) {
                failures.push(format!(
                    "{} through {} / {}: {why}",
                    case.name,
                    door.name(),
                    backend.name()
                ));
            }
            if (door, backend) == REFERENCE {
                continue;
            }
            let mut expected = expected.clone();
            for (d, difference) in DIFFERENCES.iter().enumerate() {
                if applies(difference, case, door, backend) {
                    used[d] |= apply(difference, &mut expected);
                }
            }
            let actual = masked(case, &answers[i]);
            if actual != expected {
                failures.push(format!(
                    "{} through {} / {} differs from {} / {}:\n{}",
                    case.name,
                    door.name(),
                    backend.name(),
                    REFERENCE.0.name(),
                    REFERENCE.1.name(),
                    diff(&expected, &actual, "")
                ));
            }
        }
    }
    for (d, difference) in DIFFERENCES.iter().enumerate() {
        if !used[d] {
            failures.push(format!(
                "the known difference for {:?} ({:?}: {}) changes nothing: the answers agree there now, remove the row",
                difference.cases, difference.kind, difference.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatch(es):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Checks that hold within every observation: a replay answers the same
/// twice and is recorded as replayed once.
fn sane(case: &Case, observed: &Value) -> Result<(), String> {
    let results = observed["results"].as_array().cloned().unwrap_or_default();
    if case.act == Act::Replay {
        if results.len() != 2 || results[0] != results[1] {
            return Err(format!("a replay answered differently: {results:?}"));
        }
        let replayed = observed["audit"]
            .as_array()
            .map(|a| a.iter().filter(|r| r["replayed"] == true).count())
            .unwrap_or(0);
        if replayed != 1 {
            return Err(format!("{replayed} records say replayed: {}", observed["audit"]));
        }
    }
    if case.status == "timeout" {
        for details in results.iter().map(|r| &r["details"]) {
            let (limit, after) = (&details["limit_ms"], &details["after_ms"]);
            match (limit.as_u64(), after.as_u64()) {
                (Some(limit), Some(after)) if after >= limit => {}
                _ => {
                    return Err(format!(
                        "a timeout fired at {after} ms, before its limit {limit} ms"
                    ))
                }
            }
        }
    }
    Ok(())
}

/// The reference's status is the one the case asks for.
fn status(case: &Case, observed: &Value) -> Result<(), String> {
    match observed["results"].as_array().and_then(|r| r.last()) {
        Some(last) if last["status"] == case.status => Ok(()),
        other => Err(format!(
            "status {:?} where {} was asked",
            other.map(|l| &l["status"]),
            case.status
        )),
    }
}

/// The observation with the case's volatile fields replaced by a marker.
fn masked(case: &Case, observed: &Value) -> Value {
    let mut value = observed.clone();
    for pointer in case.volatile {
        if let Some(slot) = value.pointer_mut(pointer) {
            *slot = Value::String("(varies)".into());
        }
    }
    value
}

fn applies(difference: &Difference, case: &Case, door: Door, backend: Backend) -> bool {
    difference.cases.contains(&case.name)
        && (difference.doors.is_empty() || difference.doors.contains(&door))
        && (difference.backends.is_empty() || difference.backends.contains(&backend))
}

/// Writes the difference into `expected`; whether it changed anything.
fn apply(difference: &Difference, expected: &mut Value) -> bool {
    let mut changed = false;
    for (pointer, instead) in difference.changes {
        let segments: Vec<&str> = pointer.split('/').skip(1).collect();
        let instead = match instead {
            Instead::Is(json) => Some(
                serde_json::from_str::<Value>(json)
                    .unwrap_or_else(|e| panic!("differences.rs at {pointer}: {e}")),
            ),
            Instead::Absent => None,
        };
        changed |= put(expected, &segments, instead.as_ref());
    }
    changed
}

fn put(value: &mut Value, segments: &[&str], instead: Option<&Value>) -> bool {
    let Some((first, rest)) = segments.split_first() else {
        return false;
    };
    if *first == "*" {
        let Some(items) = value.as_array_mut() else {
            return false;
        };
        return items
            .iter_mut()
            .fold(false, |changed, item| put(item, rest, instead) | changed);
    }
    if rest.is_empty() {
        return match (value, instead) {
            (Value::Object(map), None) => map.remove(*first).is_some(),
            (Value::Object(map), Some(v)) => map.insert(first.to_string(), v.clone()).as_ref() != Some(v),
            (Value::Array(items), Some(v)) => {
                match first.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                    Some(slot) => std::mem::replace(slot, v.clone()) != *v,
                    None => false,
                }
            }
            _ => false,
        };
    }
    match value {
        Value::Object(map) => map.get_mut(*first).is_some_and(|v| put(v, rest, instead)),
        Value::Array(items) => first
            .parse::<usize>()
            .ok()
            .and_then(|i| items.get_mut(i))
            .is_some_and(|v| put(v, rest, instead)),
        _ => false,
    }
}

/// The differing leaves of two values, one line each.
fn diff(expected: &Value, actual: &Value, at: &str) -> String {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let mut keys: Vec<&String> = e.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            let absent = Value::String("(absent)".into());
            keys.into_iter()
                .map(|k| {
                    diff(
                        e.get(k).unwrap_or(&absent),
                        a.get(k).unwrap_or(&absent),
                        &format!("{at}/{k}"),
                    )
                })
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n")
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .map(|(i, (e, a))| diff(e, a, &format!("{at}/{i}")))
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        _ if expected == actual => String::new(),
        _ => format!("  {at}: expected {expected}\n  {at}:   actual {actual}"),
    }
}
