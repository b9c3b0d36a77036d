//! `cargo xtask …`: the project's own tasks.
//!
//! - `test`: build every crate (the tests load the real cdylibs), run the
//!   Rust tests, then the MCP client tests when Python is available.
//! - `bench`: build in release and print the benchmark table.

mod tasks;

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
    /// Build in release and print the benchmark table.
    Bench {
        /// Fewer samples.
        #[arg(long)]
        quick: bool,
        /// Only these areas (host, filesystem, bash, web, pipeline, mcp).
        areas: Vec<String>,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.task {
        Task::Test { args } => tasks::test(&args),
        Task::Bench { quick, areas } => tasks::bench(quick, &areas),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
