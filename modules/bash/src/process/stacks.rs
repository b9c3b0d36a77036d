//! The stacks a command's reaper and its shell child start on: one mapping
//! in the zygote, a guard page under each stack. The zygote maps it once;
//! each reaper it forks (without `CLONE_VM`) starts on its own copy of the
//! reaper stack, and the shell's child (`CLONE_VM | CLONE_VFORK`) runs on
//! the reaper's copy of the shell stack until `execve`.

use std::io;

const PAGE: usize = 4096;
/// The shell's child needs little: it only sets up and calls `execve`.
const SHELL_STACK: usize = 64 * 1024;
/// The reaper walks the tree with a 16 KiB queue and a 4 KiB read buffer.
const REAPER_STACK: usize = 192 * 1024;
const TOTAL: usize = PAGE + SHELL_STACK + PAGE + REAPER_STACK;

/// An anonymous mapping laid out as
/// `[guard][shell stack][guard][reaper stack]`. Unmapped on drop; the
/// zygote keeps it for its whole life (its forks have their own copies).
pub struct Stacks {
    base: *mut u8,
}

// SAFETY: the mapping is plain memory owned by this value; the raw pointer
// is only an address.
unsafe impl Send for Stacks {}
// SAFETY: as above; `Stacks` has no interior state.
unsafe impl Sync for Stacks {}

impl Stacks {
    /// Maps the stacks.
    pub fn new() -> io::Result<Stacks> {
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                TOTAL,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stacks = Stacks { base: base.cast() };
        for guard in [0, PAGE + SHELL_STACK] {
            // SAFETY: the guard page lies inside the mapping made above.
            if unsafe { libc::mprotect(stacks.base.add(guard).cast(), PAGE, libc::PROT_NONE) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(stacks)
    }

    /// The top of the shell child's stack (16-byte aligned).
    pub fn shell_top(&self) -> *mut u8 {
        // SAFETY: within the mapping (its end is one past the shell stack).
        unsafe { self.base.add(PAGE + SHELL_STACK) }
    }

    /// The top of the reaper's stack (16-byte aligned).
    pub fn reaper_top(&self) -> *mut u8 {
        // SAFETY: one past the end of the mapping, which is page aligned.
        unsafe { self.base.add(TOTAL) }
    }
}

impl Drop for Stacks {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`; the owner
        // guarantees nothing runs on it any more.
        unsafe { libc::munmap(self.base.cast(), TOTAL) };
    }
}
