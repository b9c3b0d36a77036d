//! The reaper program (`toolhost-bash-reaper`): what the host starts, with
//! `posix_spawn`, for every command.
//!
//! Why a separate program: the host is large and multi-threaded. Forking it
//! copies its page tables and takes copy-on-write faults (the sandbox-off
//! path was 1.6× a raw `bash -c true`), and running Rust code in a child
//! that shares its memory (`CLONE_VM`) risks corrupting it. `posix_spawn`
//! starts this small program without running any of our code in the host's
//! address space (glibc's own `CLONE_VM | CLONE_VFORK` child only moves fds
//! and calls `execve`); this program is then a fresh, single-threaded
//! process with its own memory, so it may use std freely until it starts
//! the shell.
//!
//! The host passes (see [`super::launch`]): fds 0–6 as the
//! [reaper's protocol](super::reaper) wants them, and fd 7, a memfd holding
//! the [`Spec`]. With namespaces asked for, the program forks itself (a
//! small process: cheap) into them, so that the child is PID 1 of the new
//! PID namespace and keeps the capabilities the user namespace gives it for
//! the setup; the parent only waits for it, outside the namespace where no
//! command can reach it.

use std::ffi::c_void;
use std::io::Read;
use std::os::fd::FromRawFd;

use super::raw::{self, sys};
use super::reaper::{self, Prepared, Step, FD_COUNT, FORK_FAILED, SETUP_FAILED};
use super::spec::{pointers, Spec};
use super::stacks::Stacks;

/// The fd the spec arrives on.
pub const SPEC_FD: libc::c_int = FD_COUNT as libc::c_int;
/// The program's file name, looked for beside the module.
pub const NAME: &str = "toolhost-bash-reaper";

/// The program's `main`. Never returns.
pub fn run() -> ! {
    let spec = match read_spec() {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            fail_status(FORK_FAILED)
        }
    };
    let argv = pointers(&spec.argv);
    let envp = pointers(&spec.env);
    let mut rlimits = [(0 as libc::c_int, 0u64); 8];
    let rlimit_count = spec.rlimits.len().min(rlimits.len());
    for (slot, pair) in rlimits.iter_mut().zip(&spec.rlimits) {
        *slot = *pair;
    }
    let stacks = match Stacks::new() {
        Ok(s) => s,
        Err(_) => fail_status(FORK_FAILED),
    };
    let setup = spec.setup.raw();
    let prepared = Prepared {
        shell: spec.shell.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: spec.cwd.as_ptr(),
        rlimits,
        rlimit_count,
        fds: [
            0,
            1,
            2,
            3,
            4,
            if spec.setup.landlock { 5 } else { -1 },
            if spec.setup.cgroup { 6 } else { -1 },
        ],
        shell_stack: stacks.shell_top(),
        setup,
        die_with_parent: spec.namespaces != 0,
    };
    block_all_signals();
    if spec.namespaces == 0 {
        // SAFETY: `prepared` points into data that lives until the process
        // ends (`main` never returns); every signal is blocked.
        unsafe { reaper::main((&prepared as *const Prepared).cast_mut().cast()) }
    }
    // SAFETY: without CLONE_VM the child gets its own copy of this
    // single-threaded process; it starts on its copy of `stacks` at
    // `reaper::main`, which never returns. The flags add only namespaces
    // and SIGCHLD.
    let pid = unsafe {
        raw::clone_on(
            (spec.namespaces | libc::SIGCHLD) as usize,
            stacks.reaper_top(),
            reaper::main,
            (&prepared as *const Prepared).cast_mut().cast::<c_void>(),
        )
    };
    if pid < 0 {
        // The probe at mount reads this as "this set of namespaces cannot
        // be made here".
        fail_status(SETUP_FAILED | Step::Clone as u32);
    }
    // The parent holds nothing of the protocol: the host must see EOF on
    // the status socket and the output pipes when the child's tree is gone.
    for fd in 0..=SPEC_FD {
        // SAFETY: closing fds this process owns and no longer uses.
        unsafe { libc::close(fd) };
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::__WALL) };
        if r >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    std::process::exit(0)
}

fn read_spec() -> Result<Spec, String> {
    // SAFETY: the host put the spec memfd at SPEC_FD; this takes ownership
    // of it (closed when `file` drops).
    let mut file = unsafe { std::fs::File::from_raw_fd(SPEC_FD) };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the spec on fd {SPEC_FD}: {e}"))?;
    Spec::decode(&bytes).map_err(|e| e.to_string())
}

fn block_all_signals() {
    // SAFETY: a signal-mask call on this (only) thread with a local set.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
    }
}

/// Writes `word` on the status socket and exits: the host reads it as "not
/// started".
fn fail_status(word: u32) -> ! {
    let bytes = word.to_ne_bytes();
    // SAFETY: a write from a local buffer to the status fd, then exit.
    unsafe {
        sys!(libc::SYS_write, 3, bytes.as_ptr(), bytes.len());
    }
    std::process::exit(0)
}
