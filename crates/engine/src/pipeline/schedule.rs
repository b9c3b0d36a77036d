//! Stage 5, schedule: a batch runs in groups, in call order. Calls whose
//! resource keys conflict (the same key, one of them writing) go to
//! different groups; reads of one key share a group; a `serial` tool runs
//! alone. Groups run one after another, their calls in parallel.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use toolhost_core::AccessMode;

use crate::plan::normalize;
use crate::tool::MountedTool;

/// What one call touches.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Runs alone.
    pub serial: bool,
    /// Resource keys (normalized) and how they are used.
    pub keys: Vec<(String, AccessMode)>,
    /// The tool changes something (its effect is not read-only).
    pub mutation: bool,
    /// A foreign (MCP) read-only tool that declares no resource keys: it
    /// may read anything, so it conflicts with every mutation.
    pub reads_anything: bool,
}

/// The resources a call touches, from its tool's spec and its input. Path
/// values are normalized against the working folder so `a.txt` and
/// `./a.txt` are one key.
pub fn access(tool: &MountedTool, input: &Value, working_dir: &Path) -> Access {
    let keys: Vec<(String, AccessMode)> = tool
        .spec
        .execution
        .resource_keys
        .iter()
        .filter_map(|key| {
            let value = input.pointer(&key.arg)?;
            let text = match value {
                Value::String(s) => normalize(&working_dir.join(s)).to_string_lossy().into_owned(),
                Value::Null => return None,
                other => other.to_string(),
            };
            Some((text, key.mode))
        })
        .collect();
    let mutation = !tool.spec.annotations.read_only;
    // A foreign tool says nothing about what it touches: without resource
    // keys it conflicts with every write (a mutating one runs alone).
    let foreign = tool.module.source == crate::tool::SourceKind::Mcp && keys.is_empty();
    Access {
        serial: tool.spec.execution.serial || (foreign && mutation),
        keys,
        mutation,
        reads_anything: foreign && !mutation,
    }
}

/// Splits calls (by index, in order) into groups that may run in parallel.
pub fn groups(accesses: &[Access]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut held: HashMap<&str, AccessMode> = HashMap::new();
    let (mut group_mutates, mut group_reads_anything) = (false, false);
    for (i, access) in accesses.iter().enumerate() {
        let conflicts = access.serial
            || (access.reads_anything && group_mutates)
            || (access.mutation && group_reads_anything)
            || access
                .keys
                .iter()
                .any(|(key, mode)| match held.get(key.as_str()) {
                    Some(AccessMode::Write) => true,
                    Some(AccessMode::Read) => *mode == AccessMode::Write,
                    None => false,
                });
        if conflicts && !current.is_empty() {
            groups.push(std::mem::take(&mut current));
            held.clear();
            (group_mutates, group_reads_anything) = (false, false);
        }
        current.push(i);
        group_mutates |= access.mutation;
        group_reads_anything |= access.reads_anything;
        for (key, mode) in &access.keys {
            let entry = held.entry(key.as_str()).or_insert(*mode);
            if *mode == AccessMode::Write {
                *entry = AccessMode::Write;
            }
        }
        if access.serial {
            groups.push(std::mem::take(&mut current));
            held.clear();
            (group_mutates, group_reads_anything) = (false, false);
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(keys: &[(&str, AccessMode)]) -> Access {
        Access {
            keys: keys.iter().map(|(k, m)| (k.to_string(), *m)).collect(),
            ..Access::default()
        }
    }

    #[test]
    fn reads_share_writes_order_serial_runs_alone() {
        use AccessMode::*;
        let calls = vec![
            a(&[("x", Read)]),
            a(&[("x", Read)]),
            a(&[("y", Write)]),
            a(&[("x", Write)]), // conflicts with the reads of x
            a(&[("x", Read)]),  // conflicts with the write of x
            Access {
                serial: true,
                ..Access::default()
            },
            a(&[]),
        ];
        assert_eq!(
            groups(&calls),
            vec![vec![0, 1, 2], vec![3], vec![4], vec![5], vec![6]]
        );
    }

    #[test]
    fn a_foreign_reader_without_keys_conflicts_with_every_mutation() {
        let foreign_read = Access {
            reads_anything: true,
            ..Access::default()
        };
        let native_write = Access {
            mutation: true,
            ..Access::default()
        };
        let native_read = Access::default();
        let calls = vec![
            native_read.clone(),
            foreign_read.clone(),
            native_read,
            native_write.clone(), // conflicts with the foreign read
            foreign_read,         // conflicts with the write
            native_write,
        ];
        assert_eq!(groups(&calls), vec![vec![0, 1, 2], vec![3], vec![4], vec![5]]);
    }

    #[test]
    fn independent_calls_form_one_group() {
        let calls: Vec<Access> = (0..100).map(|_| a(&[])).collect();
        assert_eq!(groups(&calls).len(), 1);
    }
}
