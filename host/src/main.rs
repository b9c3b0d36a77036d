//! The `toolhost` binary: see [`toolhost::cli`].

fn main() -> std::process::ExitCode {
    toolhost::cli::output::finish(toolhost::cli::main())
}

/// Opens each standard descriptor (0–2) that is closed on `/dev/null`, and
/// tells [`toolhost::cli::output`] which were, before anything else runs.
///
/// Why before `main`: a closed descriptor 1 would be the number the next
/// `open` returns, so a file the host opened (a tool's, the audit log)
/// would receive the results; and Rust's runtime, which fills the gap on
/// its own before `main`, leaves no way to tell afterwards that stdout was
/// closed, whose results must then count as lost, not as written.
extern "C" fn standard_descriptors() {
    let mut closed = 0u8;
    for fd in 0..3 {
        // SAFETY: F_GETFD on any integer reads no memory of ours.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1 {
            continue;
        }
        closed |= 1 << fd;
        // SAFETY: a NUL-terminated literal path; `open` returns the lowest
        // free number, which is `fd` (the lower ones are open by now).
        let opened = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        if opened >= 0 && opened != fd {
            // SAFETY: both are descriptors of this process; `opened` is ours.
            unsafe {
                libc::dup2(opened, fd);
                libc::close(opened);
            }
        }
    }
    toolhost::cli::output::standard_fds_were_closed(closed);
}

/// Runs [`standard_descriptors`] from the ELF initialisers, before Rust's
/// runtime starts.
///
/// # Safety
///
/// It runs single-threaded, before `main`: it calls only `fcntl`, `open`,
/// `dup2` and `close` and stores one atomic, touching no Rust runtime state
/// (no allocation, no stdio, no thread-locals).
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static STANDARD_DESCRIPTORS: extern "C" fn() = standard_descriptors;
