//! The crate layers, declared bottom up, and the check that every
//! workspace crate depends only on the layers its own layer names.
//!
//! A layer may name only layers declared before it (and itself, where its
//! members may use each other), so the table is an order: a crate that
//! depends on a higher crate, or on one beside it that its layer does not
//! allow, fails. Dev-dependencies are not checked: a crate's tests may use
//! anything (the host's tests use the test kit, for instance).

use std::path::Path;

use crate::metadata::{DepKind, Package};

/// Which packages a layer holds.
#[derive(Debug, Clone, Copy)]
pub enum Member {
    /// The package of this name.
    Name(&'static str),
    /// Every package whose folder is inside this one (`fixtures`).
    Under(&'static str),
}

/// One layer.
#[derive(Debug, Clone, Copy)]
pub struct Layer {
    /// Its name, as other layers' `may_use` names it.
    pub name: &'static str,
    /// Its packages.
    pub members: &'static [Member],
    /// The layers its packages may depend on.
    pub may_use: &'static [&'static str],
}

/// The workspace's layers, bottom up. A new crate gets a row here (or
/// joins one) before the check passes: where it sits is a decision, not a
/// default.
pub const LAYERS: &[Layer] = &[
    Layer {
        name: "sync",
        members: &[Member::Name("toolhost-sync")],
        may_use: &[],
    },
    Layer {
        name: "testkit",
        members: &[Member::Name("toolhost-testkit")],
        may_use: &[],
    },
    Layer {
        name: "core",
        members: &[Member::Name("toolhost-core")],
        may_use: &["sync"],
    },
    // Process supervision for workers, MCP servers and hooks: it knows
    // nothing of toolhost's plans or pipeline.
    Layer {
        name: "supervise",
        members: &[Member::Name("toolhost-supervise")],
        may_use: &["sync", "core"],
    },
    // What the host tells monitoring (metrics, spans): it knows no plan,
    // so every layer that counts or traces can use it.
    Layer {
        name: "telemetry",
        members: &[Member::Name("toolhost-telemetry")],
        may_use: &[],
    },
    // The host's bottom layer: the plan, checked, and the vocabulary of a
    // call (a mounted tool, its context). No backend, pipeline or front door.
    Layer {
        name: "plan",
        members: &[Member::Name("toolhost-plan")],
        may_use: &["sync", "core"],
    },
    // What outlives a call: the idempotency store and the audit log.
    Layer {
        name: "state",
        members: &[Member::Name("toolhost-state")],
        may_use: &["sync", "core", "plan"],
    },
    // Where a tool runs: in-process, in a worker process, a mounted MCP
    // server. Beside the state layer, not above it: neither uses the other.
    Layer {
        name: "backend",
        members: &[Member::Name("toolhost-backend")],
        may_use: &["sync", "core", "supervise", "telemetry", "plan"],
    },
    // The mounted host, its surface and the pipeline. No front door (MCP
    // server, CLI).
    Layer {
        name: "engine",
        members: &[Member::Name("toolhost-engine")],
        may_use: &[
            "sync",
            "core",
            "supervise",
            "telemetry",
            "plan",
            "state",
            "backend",
        ],
    },
    // Tool modules know only the contract: never the host.
    Layer {
        name: "modules",
        members: &[Member::Under("modules")],
        may_use: &["sync", "core"],
    },
    Layer {
        name: "fixtures",
        members: &[Member::Under("fixtures")],
        may_use: &["sync", "core", "fixtures"],
    },
    // The host knows no module.
    Layer {
        name: "host",
        members: &[Member::Name("toolhost")],
        may_use: &[
            "sync",
            "core",
            "supervise",
            "telemetry",
            "plan",
            "state",
            "backend",
            "engine",
        ],
    },
    Layer {
        name: "tools",
        members: &[
            Member::Name("xtask"),
            Member::Name("toolhost-bench"),
            Member::Name("toolhost-layers"),
        ],
        may_use: &[
            "sync",
            "testkit",
            "core",
            "supervise",
            "telemetry",
            "plan",
            "engine",
            "modules",
            "host",
        ],
    },
];

fn member_of(layer: &Layer, package: &Package) -> bool {
    layer.members.iter().any(|m| match m {
        Member::Name(name) => package.name == *name,
        Member::Under(dir) => package.dir.starts_with(Path::new(dir)),
    })
}

/// The layer `package` belongs to, if one declares it.
pub fn layer_of<'a>(layers: &'a [Layer], package: &Package) -> Option<&'a Layer> {
    layers.iter().find(|l| member_of(l, package))
}

/// What is wrong with the table itself: a `may_use` naming a layer that is
/// not declared before it (which would let the order run both ways).
pub fn table_problems(layers: &[Layer]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, layer) in layers.iter().enumerate() {
        for used in layer.may_use {
            let below = layers[..i].iter().any(|l| l.name == *used);
            if !below && *used != layer.name {
                problems.push(format!(
                    "layer '{}' may use '{used}', which is not declared below it",
                    layer.name
                ));
            }
        }
    }
    problems
}

/// Every dependency between workspace packages that its layer does not
/// allow, and every workspace package no layer holds, as one line each.
pub fn problems(layers: &[Layer], packages: &[Package]) -> Vec<String> {
    let mut problems = table_problems(layers);
    for package in packages {
        let Some(layer) = layer_of(layers, package) else {
            problems.push(format!(
                "package '{}' ({}) is in no layer: add it to LAYERS in crates/layers/src/crates.rs",
                package.name,
                package.dir.display()
            ));
            continue;
        };
        for dep in package.deps.iter().filter(|d| d.kind != DepKind::Dev) {
            let Some(target) = packages.iter().find(|p| p.name == dep.name) else {
                continue; // not a workspace package
            };
            let Some(used) = layer_of(layers, target) else {
                continue; // reported above, for the package itself
            };
            if !layer.may_use.contains(&used.name) {
                problems.push(format!(
                    "'{}' (layer '{}') depends on '{}' (layer '{}'), which layer '{}' may not use",
                    package.name, layer.name, target.name, used.name, layer.name
                ));
            }
        }
    }
    problems
}
