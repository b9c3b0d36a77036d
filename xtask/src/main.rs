//! `cargo xtask …`: the project's own tasks.
//!
//! - `test`: build every crate (the tests load the real cdylibs), run the
//!   Rust tests, then the MCP client tests when Python is available.
//! - `loom`: the model checks of the hand-off and the cancel token.
//! - `bench`: build in release and print the benchmark table.
//! - `validate-module`: check a module library (or crate) in child processes.
//! - `new-module`: scaffold a standalone module crate.
//! - `dist`, `install`: the installable tree (binary, modules, plans).
//! - `docs`: the README's and the book's snippets run and compile.

#![forbid(unsafe_code)]

mod book;
mod dist;
mod loom;
mod scaffold;
mod tasks;
mod validate;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "toolhost's project tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Build the workspace, run all tests (Rust, then the MCP client tests).
    Test {
        /// Extra arguments for `cargo test`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Model-check the hand-off slot and the cancel token (loom), in a
    /// target folder of their own.
    Loom,
    /// Build in release and print the benchmark table.
    Bench {
        /// Fewer samples.
        #[arg(long)]
        quick: bool,
        /// Only these areas (host, filesystem, bash, web, pipeline, mcp).
        areas: Vec<String>,
    },
    /// Check a module library (or a crate folder, built in release first):
    /// loading, mount, names, descriptions, schemas, spec fields and
    /// behaviour, each in a child process. Exit 0 when nothing fails.
    ValidateModule {
        /// A module library (`.so`) or a crate folder.
        target: PathBuf,
        /// Config handed to mount: JSON text, or a `.json` / `.toml` file.
        #[arg(long)]
        config: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t)]
        format: validate::report::Format,
        /// Warnings fail too.
        #[arg(long)]
        strict: bool,
        /// Deadline of each behaviour call, in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        call_timeout_ms: u64,
        /// How soon a cancelled call must return, in milliseconds.
        #[arg(long, default_value_t = 2_000)]
        cancel_bound_ms: u64,
        /// Worker processes at once (default: the number of CPUs).
        #[arg(long)]
        jobs: Option<usize>,
        /// Skip the behaviour checks of this tool (repeatable).
        #[arg(long = "skip-tool", value_name = "TOOL")]
        skip_tools: Vec<String>,
    },
    /// Scaffold a standalone module crate (one sample tool, tests, README,
    /// a mount-plan snippet and a CI snippet).
    NewModule {
        /// The module's name (lower-case letters, digits, `-` or `_`).
        name: String,
        /// Where to create it (default: `./toolhost-NAME`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Build toolhost and its modules and pack them as a tarball
    /// (bin/, lib/toolhost/, share/toolhost/mount-plans/, share/doc/toolhost/).
    Dist {
        #[command(flatten)]
        build: dist::Build,
        /// Where to write the tarball (default: target/dist).
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
    /// Build toolhost and its modules and install them under a prefix.
    Install {
        #[command(flatten)]
        build: dist::Build,
        /// Where to install (default: ~/.local): PREFIX/bin/toolhost,
        /// PREFIX/lib/toolhost/*.so, PREFIX/share/toolhost/…
        #[arg(long)]
        prefix: Option<PathBuf>,
    },
    /// Check the README and the book (docs/): SUMMARY.md's chapters exist,
    /// every ```sh block runs against the built binaries, every ```rust
    /// block compiles against toolhost-core alone.
    Docs {
        /// Where the built `toolhost` and modules are (default: the debug build).
        #[arg(long)]
        bin_dir: Option<PathBuf>,
    },
    /// Internal: runs one group of validate-module checks in this process.
    #[command(name = "__validate-worker", hide = true)]
    ValidateWorker {
        /// The job file.
        job: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.task {
        Task::Test { args } => tasks::test(&args),
        Task::Loom => loom::loom(),
        Task::Bench { quick, areas } => tasks::bench(quick, &areas),
        Task::ValidateModule {
            target,
            config,
            format,
            strict,
            call_timeout_ms,
            cancel_bound_ms,
            jobs,
            skip_tools,
        } => {
            let opts = validate::Options {
                target,
                config,
                format,
                strict,
                call_timeout: Duration::from_millis(call_timeout_ms),
                cancel_bound: Duration::from_millis(cancel_bound_ms),
                jobs: jobs
                    .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
                    .unwrap_or(2),
                skip_tools,
            };
            return match validate::run(&opts) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("validate-module: {e:#}");
                    ExitCode::from(2)
                }
            };
        }
        Task::NewModule { name, dir } => scaffold::new_module(&name, dir.as_deref()),
        Task::Dist { build, out_dir } => dist::dist(&build, out_dir.as_deref()).map(|_| ()),
        Task::Install { build, prefix } => dist::install(&build, prefix.as_deref()),
        Task::Docs { bin_dir } => book::check(&bin_dir.unwrap_or_else(|| tasks::target_dir().join("debug"))),
        Task::ValidateWorker { job } => return validate::worker::main(&job),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
