//! First use outside the repository: which plan is found (each step of the
//! order, through the real binary), modules found beside the binary with no
//! `module_path`, `toolhost init`, and results that cannot reach stdout.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::target_dir;

/// A home, a project with a sub-folder, and a clean environment.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        common::module_file("toolhost_fixture");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("project/src/deep")).unwrap();
        World { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes a plan mounting the fixture under `prefix`, so the listing
    /// tells which plan was used.
    fn plan(&self, rel: &str, prefix: &str) -> PathBuf {
        let file = self.path(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            format!("[[tools]]\nmodule = \"fixture\"\nprefix = \"{prefix}\"\n"),
        )
        .unwrap();
        file
    }

    /// `toolhost ARGS` in `cwd` with nothing from the caller's environment
    /// but PATH, and HOME pointing into the world. No TOOLHOST_MODULE_PATH:
    /// modules must be found beside the binary.
    fn toolhost(&self, cwd: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        cmd.args(args)
            .current_dir(self.path(cwd))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, cwd: &str, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut cmd = self.toolhost(cwd, args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// `toolhost trust` in `cwd`: the plan discovery finds there is trusted.
    fn trust(&self, cwd: &str) {
        let out = self.run(cwd, &["trust"], &[]);
        assert!(
            out.status.success(),
            "trust failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `check`'s "plan:" and "why:" lines, asserting it passed.
    fn check(&self, cwd: &str, args: &[&str], env: &[(&str, &Path)]) -> (String, String) {
        let mut all = args.to_vec();
        all.push("check");
        let out = self.run(cwd, &all, env);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "check failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = |key: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("no '{key}' line in:\n{stdout}"))
                .to_string()
        };
        (line("plan: "), line("why: "))
    }

    /// The tool names `list --json` shows.
    fn tools(&self, cwd: &str, env: &[(&str, &Path)]) -> Vec<String> {
        let out = self.run(cwd, &["list", "--json"], env);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut names: Vec<String> = listed
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }
}

/// Every tool listed carries `prefix` (and the fixture's echo is there):
/// the listing came from the plan that set it.
fn assert_prefix(tools: &[String], prefix: &str) {
    assert!(tools.contains(&format!("{prefix}echo")), "{tools:?}");
    assert!(tools.iter().all(|t| t.starts_with(prefix)), "{tools:?}");
}

#[test]
fn with_no_plan_anywhere_the_built_in_default_is_used_with_modules_beside_the_binary() {
    let world = World::new();
    for module in ["filesystem", "bash", "web"] {
        common::module_file(&format!("toolhost_{module}"));
    }
    let (plan, why) = world.check("project/src/deep", &[], &[]);
    assert!(plan.starts_with("built-in default plan"), "{plan}");
    assert!(why.starts_with("built into the binary"), "{why}");
    let tools = world.tools("project/src/deep", &[]);
    for tool in ["read_file", "bash", "web_fetch"] {
        assert!(tools.iter().any(|t| t == tool), "{tool} missing from {tools:?}");
    }
    // And a call works there, in that folder.
    std::fs::write(world.path("project/src/deep/note.txt"), "hello from a project\n").unwrap();
    let out = world.run(
        "project/src/deep",
        &["call", "read_file", r#"{"file_path": "note.txt"}"#],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("hello from a project"), "{stdout}");
}

#[test]
fn the_users_plan_beats_the_built_in_one() {
    let world = World::new();
    let user = world.plan("home/.config/toolhost/plan.toml", "user_");
    let (plan, why) = world.check("project", &[], &[]);
    assert_eq!(plan, user.display().to_string());
    assert!(why.starts_with("the user's plan"), "{why}");
    assert_prefix(&world.tools("project", &[]), "user_");
    // $XDG_CONFIG_HOME moves the user's plan.
    let xdg = world.plan("xdg/toolhost/plan.toml", "xdg_");
    let (plan, _) = world.check("project", &[], &[("XDG_CONFIG_HOME", &world.path("xdg"))]);
    assert_eq!(plan, xdg.display().to_string());
}

#[test]
fn the_nearest_project_plan_beats_the_users() {
    let world = World::new();
    world.plan("home/.config/toolhost/plan.toml", "user_");
    let outer = world.plan("project/toolhost.toml", "outer_");
    world.trust("project/src/deep");
    let (plan, why) = world.check("project/src/deep", &[], &[]);
    assert_eq!(plan, outer.display().to_string());
    assert!(why.contains("nearest toolhost.toml"), "{why}");
    assert_prefix(&world.tools("project/src/deep", &[]), "outer_");
    let inner = world.plan("project/src/toolhost.toml", "inner_");
    world.trust("project/src/deep");
    let (plan, _) = world.check("project/src/deep", &[], &[]);
    assert_eq!(plan, inner.display().to_string());
}

#[test]
fn toolhost_plan_beats_the_project_and_plan_beats_both() {
    let world = World::new();
    world.plan("project/toolhost.toml", "proj_");
    let env_plan = world.plan("elsewhere/env.toml", "env_");
    let flag_plan = world.plan("elsewhere/flag.toml", "flag_");
    let env = [("TOOLHOST_PLAN", env_plan.as_path())];
    let (plan, why) = world.check("project", &[], &env);
    assert_eq!(plan, env_plan.display().to_string());
    assert_eq!(why, "from $TOOLHOST_PLAN");
    assert_prefix(&world.tools("project", &env), "env_");
    let flag = flag_plan.to_str().unwrap();
    let (plan, why) = world.check("project", &["--plan", flag], &env);
    assert_eq!(plan, flag_plan.display().to_string());
    assert_eq!(why, "given with --plan");
}

#[test]
fn a_named_plan_that_is_missing_is_an_error_not_a_fall_through() {
    let world = World::new();
    world.plan("project/toolhost.toml", "proj_");
    let missing = world.path("nowhere/plan.toml");
    for (args, env) in [
        (vec!["--plan", missing.to_str().unwrap(), "list"], vec![]),
        (vec!["list"], vec![("TOOLHOST_PLAN", missing.as_path())]),
    ] {
        let out = world.run("project", &args, &env);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("cannot read plan") && stderr.contains("nowhere/plan.toml"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn init_writes_a_plan_that_is_then_found_and_never_overwrites() {
    let world = World::new();
    let out = world.run("project", &["init", "--template", "readonly"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file = world.path("project/toolhost.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# toolhost.toml: this project's mount plan"),
        "{text}"
    );
    assert!(text.ends_with(common::ready_plan_text("readonly").as_str()));
    // Found from below, and it is the read-only plan: no write tools.
    let (plan, _) = world.check("project/src/deep", &[], &[]);
    assert_eq!(plan, file.display().to_string());
    let tools = world.tools("project/src/deep", &[]);
    assert!(tools.iter().any(|t| t == "read_file"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "bash"), "{tools:?}");

    // A second init refuses and leaves the file as it was.
    std::fs::write(&file, "# mine\n").unwrap();
    let out = world.run("project", &["init"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# mine\n");

    // An unknown template names the ones there are, and writes nothing.
    let out = world.run("project/src", &["init", "--template", "nope"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("default, readonly"), "{stderr}");
    assert!(!world.path("project/src/toolhost.toml").exists());
}

#[test]
fn every_template_init_writes_passes_check() {
    let world = World::new();
    for name in common::ready_plan_names() {
        let dir = format!("t-{name}");
        std::fs::create_dir_all(world.path(&dir)).unwrap();
        let out = world.run(&dir, &["init", "--template", &name], &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut cmd = world.toolhost(&dir, &["check"]);
        let out = cmd.env("TOOLHOST_MODULE_PATH", target_dir()).output().unwrap();
        assert!(
            out.status.success(),
            "template {name} fails check:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// `call` and `batch` whose stdout cannot be written: a clear message and a
/// non-zero exit, whatever the call's own status.
#[test]
fn a_result_that_cannot_be_written_is_an_error() {
    let world = World::new();
    world.plan("project/toolhost.toml", "");
    world.trust("project");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = world
        .toolhost("project", &["call", "echo", r#"{"message": "hi"}"#])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot write the result to stdout"), "{stderr}");

    // stdout a pipe whose reader is gone (EPIPE), for batch.
    let batch = world.path("project/calls.jsonl");
    std::fs::write(&batch, "{\"name\": \"echo\", \"input\": {\"message\": \"a\"}}\n").unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = world
        .toolhost("project", &["batch", batch.to_str().unwrap()])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot write the result to stdout"), "{stderr}");
}
