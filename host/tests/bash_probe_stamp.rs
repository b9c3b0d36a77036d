//! The bash sandbox's probe stamp: a mount probes the layers with a real
//! spawn once per boot and plan; later mounts with the same key skip it and
//! say so in `toolhost check`. A stamp that does not match (edited, another
//! plan) is ignored and the layers are probed again.

mod common;

use common::{module_file, Env};

fn plan(config: &str) -> String {
    module_file("toolhost_bash");
    format!("[[tools]]\nmodule = \"bash\"\n[tools.config]\n{config}\n")
}

fn check(env: &Env) -> String {
    let out = env.run(&["check"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "check failed: {text}");
    text
}

fn stamped(text: &str) -> bool {
    text.lines()
        .any(|l| l.contains("layer probe") && l.contains("active"))
}

fn stamp_file(env: &Env) -> std::path::PathBuf {
    env.state_dir().join("modules/bash/sandbox-probe.stamp")
}

#[test]
fn the_second_mount_skips_the_probe_and_a_changed_stamp_or_plan_probes_again() {
    let env = Env::new(&plan(""));
    let first = check(&env);
    assert!(!stamped(&first), "the first mount cannot have a stamp: {first}");
    let file = stamp_file(&env);
    let key = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "no stamp at {} after a clean probe ({e}): {first}",
            file.display()
        )
    });
    assert!(key.contains("boot="), "{key}");

    let second = check(&env);
    assert!(stamped(&second), "the second mount probed again: {second}");
    // The same layers are reported either way.
    let layers = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("active") && !l.contains("layer probe"))
            .map(|l| l.trim().to_string())
            .collect()
    };
    assert_eq!(layers(&first), layers(&second));

    // A stamp that is not this key's is ignored, and rewritten by the probe.
    std::fs::write(&file, key.replace("boot=", "boot=0")).expect("edit stamp");
    let third = check(&env);
    assert!(!stamped(&third), "an edited stamp was trusted: {third}");
    assert_eq!(std::fs::read_to_string(&file).expect("stamp"), key);

    // Another plan (network on) is another key.
    env.set_plan(&plan("network = true"));
    let fourth = check(&env);
    assert!(!stamped(&fourth), "another plan's stamp was trusted: {fourth}");
    assert!(check(&env).contains("layer probe"));
}

#[test]
fn a_probe_that_finds_a_layer_missing_leaves_no_stamp() {
    // One hidden path that cannot be covered (`/proc/self/…` resolves at
    // mount to the host's pid, which the command's own /proc lacks): the
    // probe drops it and reports it; no stamp may then vouch for the layers.
    let env = Env::new(&plan("hidden_paths = [\"/proc/self/fdinfo\"]"));
    let first = check(&env);
    assert!(first.contains("NOT hidden"), "{first}");
    assert!(!stamp_file(&env).exists(), "a stamp after a partial probe");
    let second = check(&env);
    assert!(!stamped(&second), "{second}");
}

#[test]
fn with_sandbox_required_every_mount_probes() {
    let env = Env::new(&plan("sandbox_required = true"));
    check(&env);
    assert!(!stamp_file(&env).exists(), "a required sandbox wrote a stamp");
    let second = check(&env);
    assert!(!stamped(&second), "{second}");
}

#[test]
fn a_call_the_sandbox_fails_forgets_the_stamp() {
    // A hidden folder that exists at mount and is gone by the call: the
    // reaper cannot cover it, so the call fails `sandbox_failed` and the
    // command does not run. The stamp vouched for a probe that no longer
    // holds; it goes, so the next mount probes again.
    let outside = tempfile::tempdir().expect("tempdir");
    let vanishing = outside.path().join("vanishing");
    std::fs::create_dir(&vanishing).expect("mkdir");
    let config = format!("hidden_paths = [{:?}]", vanishing.display().to_string());
    let p = common::InProcess::bash(&config);
    let stamp = p.path().join(".toolhost/modules/bash/sandbox-probe.stamp");
    assert!(
        stamp.exists(),
        "the clean probe left no stamp at {}",
        stamp.display()
    );
    let r = p.run("true");
    assert_eq!(r["status"], "success", "{r}");
    std::fs::remove_dir(&vanishing).expect("rmdir");
    let marker = outside.path().join("ran");
    let r = p.run(&format!("touch {}", marker.display()));
    assert_eq!(r["error"]["code"], "sandbox_failed", "{r}");
    assert!(!marker.exists(), "the command ran although its sandbox failed");
    assert!(!stamp.exists(), "the stamp survived a call the sandbox failed");
}
