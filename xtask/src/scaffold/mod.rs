//! `cargo xtask new-module NAME [--dir PATH]`: scaffolds a standalone
//! module crate that depends on toolhost-core only, with one sample tool,
//! its tests, a README, a mount-plan snippet and a CI snippet.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The files of a new module: (path in the crate, template).
const FILES: [(&str, &str); 7] = [
    ("Cargo.toml", include_str!("template/Cargo.toml.tmpl")),
    ("src/lib.rs", include_str!("template/lib.rs.tmpl")),
    ("src/word_count.rs", include_str!("template/word_count.rs.tmpl")),
    ("README.md", include_str!("template/README.md.tmpl")),
    ("mount-plan.toml", include_str!("template/mount-plan.toml.tmpl")),
    ("ci/validate-module.yml", include_str!("template/ci.yml.tmpl")),
    (".gitignore", include_str!("template/gitignore.tmpl")),
];

/// The names a module goes by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The manifest's name, snake_case (`acme_tools`).
    pub module: String,
    /// The package name (`toolhost-acme-tools`).
    pub package: String,
    /// The library name (`toolhost_acme_tools` → `libtoolhost_acme_tools.so`),
    /// so that `module = "acme_tools"` finds it on the module path.
    pub lib: String,
}

impl Names {
    /// Checks `name` and derives the others from it.
    pub fn new(name: &str) -> anyhow::Result<Names> {
        let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-'))
            && name.len() <= 48;
        if !valid {
            bail!("'{name}' is not a valid module name: use lower-case letters, digits, '-' or '_', starting with a letter, at most 48 characters");
        }
        let module = name.replace('-', "_");
        if module.starts_with("toolhost") {
            bail!("'{name}': names starting with 'toolhost' are reserved (the crate is named toolhost-{name} already)");
        }
        Ok(Names {
            package: format!("toolhost-{}", module.replace('_', "-")),
            lib: format!("toolhost_{module}"),
            module,
        })
    }
}

/// Creates the crate; prints what it made and what to do next.
pub fn new_module(name: &str, dir: Option<&Path>) -> anyhow::Result<()> {
    let names = Names::new(name)?;
    let dir = dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(&names.package));
    let created = create(&names, &dir)?;
    println!("created {} ({} files)", dir.display(), created.len());
    for file in &created {
        println!("  {}", file.display());
    }
    println!(
        "\nnext:\n  cd {}\n  cargo test\n  cargo xtask validate-module {}   # from the toolhost checkout",
        dir.display(),
        dir.display()
    );
    Ok(())
}

/// Writes the crate into `dir` (which must not exist or be empty) and
/// returns the files written.
pub fn create(names: &Names, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if dir.exists() && dir.read_dir().map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{} exists and is not empty", dir.display());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let core = crate::tasks::root().join("core");
    let core = core.canonicalize().unwrap_or(core);
    let abi = toolhost_core::abi::abi_series();
    let sdk = toolhost_core::SDK_VERSION;
    let fill = |template: &str| {
        template
            .replace("{{name}}", &names.module)
            .replace("{{crate}}", &names.package)
            .replace("{{lib}}", &names.lib)
            .replace("{{abi}}", &abi)
            .replace("{{sdk}}", sdk)
            .replace("{{core_path}}", &core.to_string_lossy())
            .replace("{{dir}}", &dir.to_string_lossy())
    };
    let mut written = Vec::new();
    for (path, template) in FILES {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&file, fill(template)).with_context(|| format!("cannot write {}", file.display()))?;
        written.push(file);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let n = Names::new("acme-tools").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n.module, "acme_tools");
        assert_eq!(n.package, "toolhost-acme-tools");
        assert_eq!(n.lib, "toolhost_acme_tools");
        assert!(Names::new("Acme").is_err());
        assert!(Names::new("toolhost_x").is_err());
        assert!(Names::new("").is_err());
    }

    #[test]
    fn templates_are_filled() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = tmp.path().join("m");
        let n = Names::new("acme").unwrap_or_else(|e| panic!("{e}"));
        let files = create(&n, &dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(files.len(), FILES.len());
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            assert!(
                !text.contains("{{"),
                "{} has an unfilled placeholder",
                file.display()
            );
        }
        assert!(create(&n, &dir).is_err(), "refuses a non-empty folder");
    }
}
