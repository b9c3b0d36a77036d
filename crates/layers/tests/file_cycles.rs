//! No file-level import circle of more than three files in any workspace
//! crate: the compiler allows them inside a crate, and they are how one
//! crate's layers dissolve into one knot.

use toolhost_layers::files::{read_sources, Graph};
use toolhost_layers::metadata::{workspace, workspace_root};

/// The largest circle allowed: two or three files that share one job can
/// name each other; more is a knot.
const LIMIT: usize = 3;

#[test]
fn no_import_circle_of_more_than_three_files() {
    let packages = workspace(&workspace_root()).expect("cargo metadata must run for this check");
    let mut report = Vec::new();
    let mut scanned = 0;
    for package in &packages {
        for dir in &package.source_dirs {
            let sources = read_sources(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
            scanned += sources.len();
            let graph = Graph::of(&sources);
            for circle in graph.circles(LIMIT) {
                report.push(format!(
                    "{} ({}): {}",
                    package.name,
                    dir.display(),
                    graph.describe(&circle)
                ));
            }
        }
    }
    // Guards against a misread workspace passing with nothing scanned.
    assert!(scanned > 100, "only {scanned} source files found");
    assert!(
        report.is_empty(),
        "import circles of more than {LIMIT} files:\n{}",
        report.join("\n")
    );
}
