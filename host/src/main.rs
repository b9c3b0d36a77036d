//! The `toolhost` binary: see [`toolhost::cli`].

fn main() -> std::process::ExitCode {
    toolhost::cli::main()
}
