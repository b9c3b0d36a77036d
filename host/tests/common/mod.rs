//! Shared harness for the integration tests: a temp folder with a plan, and
//! the real `toolhost` binary pointed at the real cdylibs.
//!
//! The modules must be built first (`cargo build --workspace`, which the
//! README's test command does); the harness says so if they are missing.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub mod fs_lab;
pub mod pdf;
pub mod procs;
pub mod raw_stdio;
pub mod rss;
pub mod serve;
pub mod users;

/// The folder holding the `toolhost` binary and the module libraries.
pub fn target_dir() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_toolhost"));
    bin.parent().expect("binary has a folder").to_path_buf()
}

/// The path of a module library in the target folder, checked to exist.
pub fn module_file(crate_lib_name: &str) -> PathBuf {
    let path = target_dir().join(format!("lib{crate_lib_name}.so"));
    assert!(
        path.is_file(),
        "{} is missing: build the modules first with `cargo build --workspace` (the README's test command does)",
        path.display()
    );
    path
}

/// A scratch folder with a plan in it.
pub struct Env {
    /// Keeps the folder alive.
    pub dir: tempfile::TempDir,
    /// The plan file.
    pub plan: PathBuf,
    /// `$XDG_STATE_HOME` of every run: the host's state folder lands in it,
    /// outside the working folder and apart from other tests.
    pub state_home: tempfile::TempDir,
}

impl Env {
    /// A temp folder with `plan.toml` holding `plan`. The plan's working_dir
    /// defaults to the folder itself (the harness runs commands there).
    pub fn new(plan: &str) -> Env {
        module_file("toolhost_fixture");
        let dir = tempfile::tempdir().expect("temp dir");
        let plan_path = dir.path().join("plan.toml");
        std::fs::write(&plan_path, plan).expect("write plan");
        let state_home = tempfile::tempdir().expect("temp dir");
        Env {
            dir,
            plan: plan_path,
            state_home,
        }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The host's state folder (`$XDG_STATE_HOME/toolhost/<project id>`),
    /// which the first run made: there is exactly one.
    pub fn state_dir(&self) -> PathBuf {
        let base = self.state_home.path().join("toolhost");
        let found: Vec<PathBuf> = std::fs::read_dir(&base)
            .unwrap_or_else(|e| panic!("no state folder under {}: {e}", base.display()))
            .map(|e| e.expect("state entry").path())
            .collect();
        assert_eq!(
            found.len(),
            1,
            "one state folder under {}: {found:?}",
            base.display()
        );
        found[0].clone()
    }

    /// Rewrites the plan.
    pub fn set_plan(&self, plan: &str) {
        std::fs::write(&self.plan, plan).expect("write plan");
    }

    /// `toolhost --plan <plan>` with the module path set and logs at info.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        cmd.arg("--plan")
            .arg(&self.plan)
            .current_dir(self.dir.path())
            .env("TOOLHOST_MODULE_PATH", target_dir())
            .env("RUST_LOG", "info")
            .env("XDG_STATE_HOME", self.state_home.path())
            .env_remove("TOOLHOST_PLAN")
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `toolhost <args…>` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("run toolhost")
    }

    /// Runs `toolhost <args…>`, which must fail with a message containing
    /// `want` (on stdout or stderr); `what` names the case in a failure.
    pub fn assert_refused(&self, args: &[&str], want: &str, what: &str) {
        let out = self.run(args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "[{what}] accepted: {text}");
        assert!(text.contains(want), "[{what}] unclear, wanted {want:?}: {text}");
    }

    /// Runs `toolhost <args…>` with `input` on its stdin.
    pub fn run_with_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        let mut cmd = self.command();
        cmd.args(args);
        output_with_stdin(cmd, input)
    }

    /// `toolhost call ARGS…` (the tool, its input, flags): the parsed result.
    pub fn call_with(&self, args: &[&str]) -> Called {
        Called::from_output(self.run(&[&["call"], args].concat()))
    }

    /// `toolhost call TOOL JSON`: the parsed result and the exit code.
    pub fn call(&self, tool: &str, input: Value) -> Called {
        let out = self.run(&["call", tool, &input.to_string()]);
        Called::from_output(out)
    }
}

/// Runs `cmd` to completion with `input` on its stdin (written from a
/// thread, so an input larger than the pipe cannot stall against output the
/// child is waiting to write) and stdout and stderr captured.
pub fn output_with_stdin(mut cmd: Command, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("wait for the child");
    // A child that exits without reading all of its input is the test's
    // business (its exit code and output say so), not a harness failure.
    let _ = writer.join();
    out
}

/// What one `toolhost call` printed and returned.
pub struct Called {
    /// The ToolResult JSON.
    pub result: Value,
    /// The exit code.
    pub code: i32,
    /// Everything on stderr.
    pub stderr: String,
}

impl Called {
    /// Parses a finished `toolhost call`.
    pub fn from_output(out: Output) -> Called {
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let result = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one ToolResult ({e}):\n{stdout}\nstderr:\n{stderr}"));
        Called {
            result,
            code: out.status.code().unwrap_or(-1),
            stderr,
        }
    }

    /// The result's status.
    pub fn status(&self) -> &str {
        self.result["status"].as_str().unwrap_or("")
    }

    /// The error message, or "".
    pub fn message(&self) -> &str {
        self.result["error"]["message"].as_str().unwrap_or("")
    }

    /// Asserts the error message holds `part`, showing the message when not.
    pub fn assert_says(&self, part: &str) {
        assert!(
            self.message().contains(part),
            "the message lacks {part:?}: {}",
            self.message()
        );
    }

    /// Panics with context unless the call succeeded.
    pub fn assert_success(&self) -> &Value {
        assert_eq!(
            self.status(),
            "success",
            "call failed: {}\nstderr:\n{}",
            self.result,
            self.stderr
        );
        assert_eq!(self.code, 0);
        &self.result["output"]
    }
}

/// A plan that mounts the fixture module (plus `extra` TOML after it).
pub fn fixture_plan(extra: &str) -> String {
    format!("[host]\ndefault_timeout_secs = 30\ncancel_grace_ms = 1500\n\n[[tools]]\nmodule = \"fixture\"\n\n{extra}")
}

impl Env {
    /// `toolhost batch -` with `lines` on stdin (plus `extra` arguments):
    /// the parsed JSONL results and the exit code.
    pub fn batch(&self, lines: &[Value], extra: &[&str]) -> (Vec<Value>, i32) {
        use std::io::Write;
        let mut child = self
            .command()
            .arg("batch")
            .arg("-")
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run toolhost batch");
        let mut stdin = child.stdin.take().expect("stdin");
        for line in lines {
            writeln!(stdin, "{line}").expect("write a batch line");
        }
        drop(stdin);
        let out = child.wait_with_output().expect("wait for toolhost batch");
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let results = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{stderr}")))
            .collect();
        (results, out.status.code().unwrap_or(-1))
    }
}

/// A host loaded in this test process from the real cdylibs, for flows that
/// need several calls in one host (guards, jobs, events) or must reach what
/// a subprocess host would hide (a job's reaper to kill, the mount's state
/// folder to search, the moment the mount ends).
pub struct InProcess {
    /// The loaded host.
    pub host: std::sync::Arc<toolhost::host::Host>,
    /// Its pipeline.
    pub pipeline: std::sync::Arc<toolhost::pipeline::Pipeline>,
    /// The runtime calls run on.
    pub runtime: tokio::runtime::Runtime,
    /// The folder holding the plan, its working folder, when the host has
    /// one of its own ([`InProcess::bash`]); removed after the host ends.
    folder: Option<tempfile::TempDir>,
}

impl InProcess {
    /// Loads `plan` (module_path is set to the target folder for it).
    pub fn new(plan: &str) -> InProcess {
        InProcess::with_host("", plan)
    }

    /// Loads `plan` with more `[host]` keys (`host`, TOML lines).
    pub fn with_host(host: &str, plan: &str) -> InProcess {
        InProcess::load(&InProcess::text(host, plan), Path::new("inprocess.toml"))
    }

    /// The bash module alone (`config` is its `[tools.config]` body), its
    /// plan written into a fresh folder that is its working folder.
    pub fn bash(config: &str) -> InProcess {
        module_file("toolhost_bash");
        let folder = tempfile::tempdir().expect("tempdir");
        // A state folder named by the plan, inside its folder: tests look
        // into it, and it is removed with the folder.
        let text = InProcess::text(
            "working_dir = \".\"\nstate_dir = \".toolhost\"",
            &format!("[[tools]]\nmodule = \"bash\"\n[tools.config]\n{config}\n"),
        );
        let file = folder.path().join("plan.toml");
        std::fs::write(&file, &text).expect("write plan");
        let mut loaded = InProcess::load(&text, &file);
        loaded.folder = Some(folder);
        loaded
    }

    fn text(host: &str, plan: &str) -> String {
        format!(
            "[host]\nmodule_path = [{:?}]\n{host}\n{plan}",
            target_dir().display().to_string()
        )
    }

    fn load(text: &str, file: &Path) -> InProcess {
        let plan = toolhost::plan::Plan::parse(text, file).expect("plan parses");
        let host = std::sync::Arc::new(toolhost::host::Host::open(plan).expect("plan loads"));
        let pipeline = std::sync::Arc::new(toolhost::pipeline::Pipeline::new(
            host.clone(),
            toolhost::cancel::CancelToken::new(),
        ));
        InProcess {
            host,
            pipeline,
            runtime: tokio::runtime::Runtime::new().expect("runtime"),
            folder: None,
        }
    }

    /// The plan's folder ([`InProcess::bash`] only).
    pub fn path(&self) -> &Path {
        self.folder
            .as_ref()
            .expect("a host with a folder of its own")
            .path()
    }

    /// One call through the pipeline.
    pub fn call(&self, name: &str, input: Value) -> toolhost_core::ToolResult {
        self.runtime
            .block_on(self.pipeline.call(toolhost::pipeline::Call {
                name: name.into(),
                input,
                ..Default::default()
            }))
    }

    /// One call through the pipeline, its result as JSON.
    pub fn call_json(&self, name: &str, input: Value) -> Value {
        serde_json::to_value(self.call(name, input)).expect("json")
    }

    /// `command` run by the bash tool in the foreground, as JSON.
    pub fn run(&self, command: &str) -> Value {
        self.call_json("bash", serde_json::json!({ "command": command }))
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.host.shutdown();
    }
}

/// The ready plans in `mount-plans/`, by template name (file stem).
pub fn ready_plan_names() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mount-plans");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("mount-plans/")
        .filter_map(|e| {
            let path = e.ok()?.path();
            if path.extension()? != "toml" {
                return None;
            }
            Some(path.file_stem()?.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

/// The text of `mount-plans/<name>.toml`.
pub fn ready_plan_text(name: &str) -> String {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../mount-plans/{name}.toml"));
    std::fs::read_to_string(file).expect("ready plan")
}

/// Whether process `pid` is gone (or a zombie) within `within`: watched
/// through /proc, the state the test is waiting for, not a fixed pause.
pub fn process_ends(pid: u32, within: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + within;
    loop {
        let alive = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the parenthesised command name.
            Ok(stat) => stat
                .rsplit_once(") ")
                .map(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
                .unwrap_or(false),
            Err(_) => false,
        };
        if !alive {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::yield_now();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
