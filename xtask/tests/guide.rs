//! The author's guide in core/README.md compiles: its `Cargo.toml` and its
//! example, as a crate outside the workspace, depending on toolhost-core
//! alone (issue #19 item 6).

mod common;

use common::{cargo, root, target_dir};

/// The body of the first fenced block in `text` that opens with "```lang".
fn first_block<'a>(text: &'a str, lang: &str) -> &'a str {
    let fence = format!("```{lang}\n");
    let start = text
        .find(&fence)
        .unwrap_or_else(|| panic!("core/README.md has no ```{lang} block"))
        + fence.len();
    let len = text[start..]
        .find("\n```")
        .unwrap_or_else(|| panic!("the ```{lang} block is not closed"));
    &text[start..start + len + 1]
}

#[test]
fn the_guide_cargo_toml_and_example_compile_outside_the_workspace() {
    let readme = std::fs::read_to_string(root().join("core/README.md")).expect("core/README.md");
    let manifest = first_block(&readme, "toml");
    let example = first_block(&readme, "rust");

    // The guide names the registry version of the SDK this checkout is.
    let sdk: Vec<&str> = toolhost_core::SDK_VERSION.split('.').collect();
    let wanted = format!("toolhost-core = \"{}.{}\"", sdk[0], sdk[1]);
    assert!(
        manifest.contains(&wanted),
        "the guide's Cargo.toml must say {wanted}:\n{manifest}"
    );
    for other in ["schemars", "serde", "serde_json"] {
        assert!(
            !manifest.lines().any(|l| l.starts_with(&format!("{other} "))),
            "the guide's Cargo.toml must name toolhost-core alone:\n{manifest}"
        );
    }

    // Not published yet: the same dependency, from this checkout. The
    // workspace's lock file keeps every other version what CI tested.
    let core = root().join("core");
    let manifest = manifest.replace(
        &wanted,
        &format!("toolhost-core = {{ path = {:?} }}", core.display().to_string()),
    ) + "\n[workspace]\n";
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("src")).expect("src");
    std::fs::write(dir.path().join("Cargo.toml"), manifest).expect("Cargo.toml");
    std::fs::write(dir.path().join("src/lib.rs"), example).expect("lib.rs");
    std::fs::copy(root().join("Cargo.lock"), dir.path().join("Cargo.lock")).expect("Cargo.lock");

    let out = cargo()
        .args(["build", "--offline", "--quiet"])
        .current_dir(dir.path())
        // The workspace's target folder and debug-info level (its
        // [profile.dev]), so toolhost-core and its dependencies are reused,
        // not compiled again; the guide's crate has its own name.
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "the guide's example does not compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(target_dir().join("debug/libtoolhost_acme.so").is_file());
}
