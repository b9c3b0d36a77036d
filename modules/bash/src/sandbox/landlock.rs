//! The filesystem wall: a Landlock ruleset built in the host (allocation
//! and path opening happen here), entered by the shell's child with one
//! `landlock_restrict_self` before `execve`.
//!
//! Reads and execution are allowed everywhere; every write-like right
//! (write, create, remove, rename, link, truncate, device ioctl) only under
//! the writable folders and a few harmless devices. The signal and
//! abstract-socket scopes keep the command from signalling or connecting to
//! anything outside its own domain, the reaper and the host included.
//! Landlock also confines ptrace (and so `/proc/<pid>/mem`, `/proc/<pid>/fd`)
//! to processes of the same or a nested domain.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use landlock::{
    path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, Scope, ABI,
};

/// The newest Landlock ABI these rules were written and tested for: newer
/// kernels are used at this level, older ones in best-effort mode (fewer
/// rights handled, reported by the probe).
const TESTED_ABI: ABI = ABI::V6;

/// Devices a command may write to wherever it runs.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Builds the ruleset; `None` when the kernel has no Landlock.
pub fn ruleset(writable: &[PathBuf]) -> Result<Option<OwnedFd>, RulesetError> {
    let created = Ruleset::default()
        .handle_access(AccessFs::from_all(TESTED_ABI))?
        .scope(Scope::from_all(TESTED_ABI))?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(TESTED_ABI)))?
        .add_rules(path_beneath_rules(writable, writable_rights()))?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_file(TESTED_ABI)))?;
    Ok(created.into())
}

/// Every right under the writable folders but making device nodes: a root
/// command could otherwise `mknod` the host's disk there and write it raw.
/// (Both rights stay handled, so they are refused everywhere.)
fn writable_rights() -> landlock::BitFlags<AccessFs> {
    AccessFs::from_all(TESTED_ABI) & !(AccessFs::MakeBlock | AccessFs::MakeChar)
}

/// The kernel's `struct landlock_path_beneath_attr` (packed).
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

/// Lets the command open and use ptys under `pts`, the private `devpts`
/// the reaper mounted in the command's own mount namespace (it did not
/// exist when the host built the ruleset, so no host path can name it):
/// reads, writes and device ioctls (`TIOCGPTN`, `TIOCSPTLCK`) of the files
/// beneath it. Called by the reaper on the call's own ruleset (`ruleset`)
/// before the shell's child enters it. On a kernel whose Landlock does not
/// handle device ioctls, the rule is retried without them.
pub fn allow_ptys(ruleset: RawFd, pts: &OwnedFd) -> std::io::Result<()> {
    let rw = AccessFs::ReadFile | AccessFs::WriteFile;
    let mut last = std::io::Error::from_raw_os_error(libc::EINVAL);
    for access in [rw | AccessFs::IoctlDev, rw] {
        let attr = PathBeneath {
            allowed_access: access.bits(),
            parent_fd: pts.as_raw_fd(),
        };
        // SAFETY: landlock_add_rule reads `attr` (a live, packed struct of
        // the kernel's layout) and the two fds; it changes only the ruleset.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                RULE_PATH_BENEATH,
                &attr as *const PathBeneath,
                0,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        last = std::io::Error::last_os_error();
    }
    Err(last)
}
