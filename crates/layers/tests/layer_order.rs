//! The workspace's crates depend only downward: each crate's layer (see
//! `LAYERS` in `src/crates.rs`) names what it may use, and `cargo metadata`
//! says what it does use.

use toolhost_layers::crates::{problems, LAYERS};
use toolhost_layers::metadata::{workspace, workspace_root};

#[test]
fn no_crate_depends_on_a_higher_layer() {
    let packages = workspace(&workspace_root()).expect("cargo metadata must run for this check");
    // Guards against an empty or misread workspace passing vacuously.
    assert!(
        packages.iter().any(|p| p.name == "toolhost") && packages.iter().any(|p| p.name == "toolhost-core"),
        "cargo metadata listed no host or core: {:?}",
        packages.iter().map(|p| &p.name).collect::<Vec<_>>()
    );
    let problems = problems(LAYERS, &packages);
    assert!(problems.is_empty(), "layering broken:\n{}", problems.join("\n"));
}
