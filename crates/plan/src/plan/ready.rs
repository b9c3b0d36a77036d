//! The ready plans of `mount-plans/`, built into the binary.
//!
//! The files in `mount-plans/` stay the one source of truth: the binary
//! embeds them, so the built-in default plan (used when no plan file is
//! found) and the templates of `toolhost init` are exactly the files the
//! tests load, and an installed binary needs no data files to start.

/// Every ready plan, by template name (the file's stem), default first.
pub const READY_PLANS: &[(&str, &str)] = &[
    ("default", include_str!("../../../../mount-plans/default.toml")),
    ("readonly", include_str!("../../../../mount-plans/readonly.toml")),
];

/// The text of the ready plan called `name`, if there is one.
pub fn ready_plan(name: &str) -> Option<&'static str> {
    READY_PLANS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan added to `mount-plans/` must be embedded too, or `init` and the
    /// built-in default drift from the files the tests load.
    #[test]
    fn every_file_in_mount_plans_is_embedded_verbatim() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mount-plans");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(&path).unwrap();
                assert_eq!(
                    ready_plan(&stem),
                    Some(text.as_str()),
                    "{} is not embedded in READY_PLANS",
                    path.display()
                );
                files += 1;
            }
        }
        assert_eq!(files, READY_PLANS.len());
        assert_eq!(READY_PLANS[0].0, "default");
    }
}
