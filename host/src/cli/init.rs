//! `toolhost init [--template NAME]`: writes `./toolhost.toml` from one of
//! the ready plans, with a header saying where it came from and how toolhost
//! finds it, so a project gets its own plan without copying files out of the
//! repository. It never overwrites an existing plan.

use std::io::Write;
use std::process::ExitCode;

use super::{EXIT_FAILED, EXIT_USAGE};
use crate::plan::{ready_plan, PROJECT_FILE, READY_PLANS};

#[derive(clap::Args, Debug)]
pub(super) struct InitArgs {
    /// The ready plan to start from (default, readonly, …).
    #[arg(long, default_value = "default", value_name = "NAME")]
    template: String,
}

pub(super) fn run(args: &InitArgs) -> ExitCode {
    let Some(body) = ready_plan(&args.template) else {
        let names: Vec<&str> = READY_PLANS.iter().map(|(n, _)| *n).collect();
        eprintln!(
            "error: no ready plan called '{}'; choose one of: {}",
            args.template,
            names.join(", ")
        );
        return ExitCode::from(EXIT_USAGE);
    };
    let text = format!(
        "# toolhost.toml: this project's mount plan, written by `toolhost init --template {}`.\n\
         #\n\
         # toolhost uses it when started in this folder or any folder below it\n\
         # (unless --plan or $TOOLHOST_PLAN names another); `toolhost check` says\n\
         # which plan it used and why. Every key is documented in toolhost's README.\n\
         #\n\
         {body}",
        args.template
    );
    // `create_new` is the refusal: it fails if the file exists (a link
    // included), so a plan someone edited is never replaced, even by a race.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(PROJECT_FILE);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            eprintln!(
                "error: {PROJECT_FILE} already exists here; toolhost init never overwrites a plan \
                 (move it away first to start over)"
            );
            return ExitCode::from(EXIT_USAGE);
        }
        Err(e) => {
            eprintln!("error: cannot create {PROJECT_FILE}: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.sync_all()) {
        // Leave no half-written plan behind for discovery to pick up.
        let _ = std::fs::remove_file(PROJECT_FILE);
        eprintln!("error: cannot write {PROJECT_FILE}: {e}");
        return ExitCode::from(EXIT_FAILED);
    }
    // What init wrote is what the user asked for: trusted as written.
    let trusted = std::path::absolute(PROJECT_FILE)
        .map_err(|e| e.to_string())
        .and_then(|file| {
            let plan = crate::plan::Plan::parse(&text, &file).map_err(|e| e.to_string())?;
            crate::plan::trust::store(&crate::plan::trust::expected(&plan, text.as_bytes()))
                .map_err(|e| e.to_string())
        });
    if let Err(e) = trusted {
        eprintln!(
            "warning: cannot record trust for {PROJECT_FILE} ({e}); run `toolhost trust` before using it"
        );
    }
    super::print_stdout(&format!(
        "wrote {PROJECT_FILE} from the '{}' plan (trusted as written); run `toolhost check` to load it",
        args.template
    ));
    ExitCode::SUCCESS
}
