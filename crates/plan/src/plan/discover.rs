//! Which plan to use when the command line names none.
//!
//! The order, first match wins: `--plan`, then `$TOOLHOST_PLAN`, then
//! `toolhost.toml` in the current folder or the nearest parent folder (a
//! project's own plan, as `init` writes it), then the user's plan
//! (`$XDG_CONFIG_HOME/toolhost/plan.toml`, by default
//! `~/.config/toolhost/plan.toml`), then the built-in default plan (the
//! embedded `mount-plans/default.toml`). `toolhost check` prints the
//! [`Origin`], so a surprising choice is easy to trace.
//!
//! A project plan found in a parent folder but owned by another user is
//! skipped with a warning (as git skips a repository it does not own), and
//! a found plan is used only as the user trusted it ([`super::trust`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::trust::{self, TrustState};
use super::{ready_plan, Plan, PlanError};

/// The file name a project's plan has (what `toolhost init` writes).
pub const PROJECT_FILE: &str = "toolhost.toml";

/// The name the built-in plan goes by in messages. It stands "in" the
/// current folder, so its state is the current folder's project state.
pub const BUILT_IN_NAME: &str = "(built-in default plan)";

/// Why a plan was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--plan FILE`.
    Flag,
    /// `$TOOLHOST_PLAN`.
    Env,
    /// `toolhost.toml` found searching up from this folder.
    Project {
        /// The folder the search started from (the current folder).
        from: PathBuf,
    },
    /// The user's plan in the config folder.
    User,
    /// No plan file anywhere: the default plan built into the binary.
    BuiltIn,
}

impl Origin {
    /// One line saying why, for `toolhost check`.
    pub fn why(&self) -> String {
        match self {
            Origin::Flag => "given with --plan".into(),
            Origin::Env => "from $TOOLHOST_PLAN".into(),
            Origin::Project { from } => {
                format!("the nearest {PROJECT_FILE} searching up from {}", from.display())
            }
            Origin::User => "the user's plan (no --plan, $TOOLHOST_PLAN or toolhost.toml)".into(),
            Origin::BuiltIn => format!(
                "built into the binary: no --plan, $TOOLHOST_PLAN, {PROJECT_FILE} here or above, or {}",
                user_plan_file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "user plan ($HOME unset)".into())
            ),
        }
    }
}

/// A loaded plan and why it was the one.
#[derive(Debug)]
pub struct Discovered {
    /// The plan, ready to load.
    pub plan: Plan,
    /// Why this plan.
    pub origin: Origin,
    /// Whether it may be used (an untrusted plan is refused by every
    /// command but `check` and `trust`).
    pub trust: TrustState,
    /// The trust record this exact plan needs (`None` for the built-in plan).
    pub record: Option<trust::Record>,
}

/// Finds and loads the plan to use (see the module docs for the order).
/// A plan named explicitly (`--plan`, `$TOOLHOST_PLAN`) that cannot be read
/// is an error, never a silent fall-through to the next step.
pub fn discover(flag: Option<&Path>) -> Result<Discovered, PlanError> {
    let cwd = std::env::current_dir().map_err(|e| PlanError::Invalid {
        file: PathBuf::from("."),
        message: format!("cannot read the current folder to look for a plan: {e}"),
    })?;
    let env_plan = std::env::var_os("TOOLHOST_PLAN");
    let skip_foreign = |file: &Path| {
        let ours = trust::owned_by_us(file);
        if !ours {
            eprintln!(
                "toolhost: WARNING: skipping {}: it is owned by another user, who could have planted it; \
                 pass it with --plan if you mean to use it",
                file.display()
            );
        }
        ours
    };
    let Some((file, origin)) = choose(flag, env_plan, &cwd, user_plan_file().as_deref(), &skip_foreign)
    else {
        let text = ready_plan("default").unwrap_or_default();
        let plan = Plan::parse(text, &cwd.join(BUILT_IN_NAME))?;
        return Ok(Discovered {
            plan,
            origin: Origin::BuiltIn,
            trust: TrustState::NotNeeded("the built-in plan"),
            record: None,
        });
    };
    let invalid = |message: String| PlanError::Invalid {
        file: file.clone(),
        message,
    };
    let bytes = std::fs::read(&file).map_err(|source| PlanError::Read {
        file: file.clone(),
        source,
    })?;
    if origin != Origin::User {
        trust::check_owner(&file).map_err(|e| invalid(format!("refusing to load the plan: {e}")))?;
    }
    let text = String::from_utf8(bytes.clone()).map_err(|_| invalid("the plan is not UTF-8 text".into()))?;
    let plan = Plan::parse(&text, &file)?;
    let record = trust::expected(&plan, &bytes);
    let state = match origin {
        Origin::Flag => TrustState::NotNeeded("named with --plan"),
        Origin::Env => TrustState::NotNeeded("named by $TOOLHOST_PLAN"),
        Origin::User => TrustState::NotNeeded("the user's own plan"),
        _ if under_user_config(&record.plan) => TrustState::NotNeeded("under the user's config folder"),
        _ => trust::state(&record),
    };
    Ok(Discovered {
        plan,
        origin,
        trust: state,
        record: Some(record),
    })
}

/// Whether `real` lies in the user's toolhost config folder (the user's
/// own plans: trusted).
fn under_user_config(real: &Path) -> bool {
    user_config_dir()
        .map(|d| toolhost_core::protected::real_location(&d))
        .is_some_and(|d| real.starts_with(d))
}

/// The plan file to load and why, or `None` for the built-in plan.
fn choose(
    flag: Option<&Path>,
    env_plan: Option<OsString>,
    cwd: &Path,
    user_plan: Option<&Path>,
    owned: &dyn Fn(&Path) -> bool,
) -> Option<(PathBuf, Origin)> {
    if let Some(file) = flag {
        return Some((file.to_path_buf(), Origin::Flag));
    }
    if let Some(file) = env_plan.filter(|v| !v.is_empty()) {
        return Some((PathBuf::from(file), Origin::Env));
    }
    // The current folder's own plan is taken whoever owns it (and then
    // refused by the owner check, loudly); a parent folder's is skipped
    // when another user owns it.
    if let Some(file) = cwd
        .ancestors()
        .map(|dir| dir.join(PROJECT_FILE))
        .find(|file| file.is_file() && (file.parent() == Some(cwd) || owned(file)))
    {
        return Some((
            file,
            Origin::Project {
                from: cwd.to_path_buf(),
            },
        ));
    }
    user_plan
        .filter(|file| file.is_file())
        .map(|file| (file.to_path_buf(), Origin::User))
}

/// `$XDG_CONFIG_HOME/toolhost/plan.toml` when that variable holds an
/// absolute path (as the XDG spec asks), else `~/.config/toolhost/plan.toml`.
pub fn user_plan_file() -> Option<PathBuf> {
    Some(user_config_dir()?.join("plan.toml"))
}

/// `$XDG_CONFIG_HOME/toolhost` (absolute only), else `~/.config/toolhost`:
/// the user's plan and trust records.
pub fn user_config_dir() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(config.join("toolhost"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_wins_over_the_later_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        let deep = project.join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        let user = tmp.path().join("user.toml");
        std::fs::write(&user, "").unwrap();

        // Nothing anywhere (the user file missing): built in.
        let missing = tmp.path().join("missing.toml");
        assert_eq!(choose(None, None, &deep, Some(&missing), &|_| true), None);
        // The user's plan.
        assert_eq!(
            choose(None, None, &deep, Some(&user), &|_| true),
            Some((user.clone(), Origin::User))
        );
        // A project plan two folders up beats the user's plan.
        std::fs::write(project.join(PROJECT_FILE), "").unwrap();
        assert_eq!(
            choose(None, None, &deep, Some(&user), &|_| true),
            Some((project.join(PROJECT_FILE), Origin::Project { from: deep.clone() }))
        );
        // The nearest one wins.
        std::fs::write(deep.join(PROJECT_FILE), "").unwrap();
        assert_eq!(
            choose(None, None, &deep, Some(&user), &|_| true).map(|c| c.0),
            Some(deep.join(PROJECT_FILE))
        );
        // $TOOLHOST_PLAN beats the project (an empty one is unset).
        assert_eq!(
            choose(None, Some("".into()), &deep, Some(&user), &|_| true).map(|c| c.1),
            Some(Origin::Project { from: deep.clone() })
        );
        assert_eq!(
            choose(None, Some("e.toml".into()), &deep, Some(&user), &|_| true),
            Some((PathBuf::from("e.toml"), Origin::Env))
        );
        // --plan beats everything, even a file that does not exist.
        assert_eq!(
            choose(
                Some(Path::new("f.toml")),
                Some("e.toml".into()),
                &deep,
                Some(&user),
                &|_| true
            ),
            Some((PathBuf::from("f.toml"), Origin::Flag))
        );
    }

    #[test]
    fn a_folder_named_like_the_plan_is_not_a_plan() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(PROJECT_FILE)).unwrap();
        assert_eq!(choose(None, None, tmp.path(), None, &|_| true), None);
    }
}
