//! Inside each of the host's layer crates, the top-level modules depend
//! only one way too: no two of them import each other, directly or round
//! a circle, except the groups `LAYERED` declares as one layer.

use toolhost_layers::files::{read_sources, Graph};
use toolhost_layers::metadata::{workspace, workspace_root};
use toolhost_layers::modules::{fold, problems, LAYERED};

#[test]
fn no_import_circle_between_the_top_level_modules_of_a_layer_crate() {
    let packages = workspace(&workspace_root()).expect("cargo metadata must run for this check");
    let mut report = Vec::new();
    for (name, allowed) in LAYERED {
        // A crate renamed or gone must fail here, not pass unchecked.
        let package = packages
            .iter()
            .find(|p| p.name == *name)
            .unwrap_or_else(|| panic!("LAYERED names '{name}', which is no workspace package"));
        let mut modules = 0;
        for dir in &package.source_dirs {
            let sources = read_sources(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
            let folded = fold(&Graph::of(&sources));
            modules += folded.files.len();
            for circle in problems(&folded, allowed) {
                report.push(format!("{name} ({}): {circle}", dir.display()));
            }
        }
        assert!(modules > 1, "{name}: only {modules} top-level module found");
    }
    assert!(
        report.is_empty(),
        "import circles between top-level modules:\n{}",
        report.join("\n")
    );
}
