//! Two real users for the control-plane tests: root (the suite's user) and
//! uid 65534 (`nobody`, through `setpriv`). The binary, the modules and the
//! bash reaper are copied into a folder both can reach, wherever the
//! checkout lives; every run gets a clean environment with its own HOME,
//! config and state folders inside the lab.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::{module_file, target_dir};

/// Who runs a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// The suite's own user (root).
    Root,
    /// uid/gid 65534.
    Nobody,
}

impl User {
    /// The uid.
    pub fn uid(self) -> u32 {
        match self {
            User::Root => 0,
            User::Nobody => 65534,
        }
    }

    fn name(self) -> &'static str {
        match self {
            User::Root => "root",
            User::Nobody => "nobody",
        }
    }
}

/// A folder with the binaries and a home per user.
pub struct Lab {
    /// Keeps the folder alive.
    pub dir: tempfile::TempDir,
}

impl Lab {
    /// Asserts the suite runs as root (switching users needs it: a setup
    /// failure, never a skip), then builds the lab.
    pub fn new() -> Lab {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "the control-plane tests run as two real users: run the suite as root (CI does)"
        );
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("lab");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        for (from, name) in [
            (PathBuf::from(env!("CARGO_BIN_EXE_toolhost")), "toolhost"),
            (module_file("toolhost_filesystem"), "libtoolhost_filesystem.so"),
            (module_file("toolhost_bash"), "libtoolhost_bash.so"),
            (module_file("toolhost_web"), "libtoolhost_web.so"),
            (target_dir().join("toolhost-bash-reaper"), "toolhost-bash-reaper"),
        ] {
            std::fs::copy(&from, bin.join(name)).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
            std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        for p in [dir.path(), bin.as_path()] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let lab = Lab { dir };
        for user in [User::Root, User::Nobody] {
            let home = lab.home(user);
            std::fs::create_dir(&home).expect("home");
            lab.give(&home, user);
        }
        lab
    }

    /// `rel` inside the lab.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The user's HOME (its config and state folders are the XDG defaults
    /// below it).
    pub fn home(&self, user: User) -> PathBuf {
        self.path(&format!("home-{}", user.name()))
    }

    /// Makes `path` the user's (owner, group) with mode 0755 for a folder,
    /// 0644 for a file.
    pub fn give(&self, path: &Path, user: User) {
        use std::os::unix::fs::PermissionsExt;
        std::os::unix::fs::chown(path, Some(user.uid()), Some(user.uid())).expect("chown");
        let mode = if path.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    /// Creates folder `rel` (and parents) owned by `user`.
    pub fn folder(&self, rel: &str, user: User) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(&path).expect("mkdir");
        self.give(&path, user);
        path
    }

    /// Writes file `rel` owned by `user` (mode 0644).
    pub fn file(&self, rel: &str, text: &str, user: User) -> PathBuf {
        let path = self.path(rel);
        std::fs::write(&path, text).expect("write");
        self.give(&path, user);
        path
    }

    /// Writes `rel` as an executable hook script of `user`'s (mode 0755,
    /// its folder made) that allows every call.
    pub fn allow_hook(&self, rel: &str, user: User) -> PathBuf {
        if let Some(dir) = Path::new(rel).parent() {
            self.folder(&dir.to_string_lossy(), user);
        }
        let hook = self.file(rel, "#!/bin/sh\necho '{\"decision\": \"allow\"}'\n", user);
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        hook
    }

    /// `toolhost ARGS` as `user` in `cwd` (inside the lab), with only PATH,
    /// HOME and the module path in its environment.
    pub fn command(&self, user: User, cwd: &str, args: &[&str]) -> Command {
        let toolhost = self.path("bin/toolhost");
        let mut cmd = match user {
            User::Root => Command::new(&toolhost),
            User::Nobody => {
                let mut c = Command::new("setpriv");
                c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
                    .arg(&toolhost);
                c
            }
        };
        cmd.args(args)
            .current_dir(self.path(cwd))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home(user))
            .env("TOOLHOST_MODULE_PATH", self.path("bin"))
            .stdin(std::process::Stdio::null());
        cmd
    }

    /// Runs [`Lab::command`] to completion.
    pub fn run(&self, user: User, cwd: &str, args: &[&str]) -> Output {
        self.command(user, cwd, args).output().expect("run toolhost")
    }

    /// Runs `toolhost batch -` with `calls` (`(tool, input)`) as `user` in
    /// `cwd`: the results (parsed) and stderr.
    pub fn batch(
        &self,
        user: User,
        cwd: &str,
        extra: &[&str],
        calls: &[(&str, serde_json::Value)],
    ) -> (Vec<serde_json::Value>, String) {
        let mut input = String::new();
        for (name, call) in calls {
            input.push_str(&serde_json::json!({"name": name, "input": call}).to_string());
            input.push('\n');
        }
        let mut args = extra.to_vec();
        args.extend(["batch", "-"]);
        let out = super::output_with_stdin(self.command(user, cwd, &args), input.as_bytes());
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let results = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{stderr}")))
            .collect();
        (results, stderr)
    }
}

impl Lab {
    /// `toolhost ARGS serve` (MCP on stdio) as `user` in `cwd`, the `calls`
    /// made one after another in that one process, each after `before(i)`
    /// ran: their results (the error text for a failed one) as
    /// `(is_error, text)`.
    pub fn serve_calls(
        &self,
        user: User,
        cwd: &str,
        args: &[&str],
        calls: &[(&str, serde_json::Value)],
    ) -> Vec<(bool, String)> {
        use rmcp::ServiceExt;
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        runtime.block_on(async {
            let (transport, _) =
                super::serve::transport(self.command(user, cwd, args), std::process::Stdio::null());
            let client = ().serve(transport).await.expect("initialize");
            let mut out = Vec::new();
            for (name, input) in calls {
                let result = super::serve::call(&client, name, input.clone()).await;
                out.push((result.is_error == Some(true), super::serve::all_text(&result)));
            }
            let _ = client.cancel().await;
            out
        })
    }
}

/// stdout and stderr of a finished run, for messages.
pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
