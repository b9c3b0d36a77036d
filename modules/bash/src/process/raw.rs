//! Raw Linux system calls and a `clone` trampoline.
//!
//! The shell's child runs on the reaper's memory until `execve`
//! (`CLONE_VM | CLONE_VFORK`), so it and the reaper's supervision loop may
//! only make async-signal-safe calls: [`sys`] makes the system call directly
//! and returns `-errno`, touching no libc state (no `errno`, no locks), and
//! [`clone_on`] starts a child on a stack of our choosing, so neither child
//! ever returns into a Rust frame it shares with someone else.
//!
//! x86_64 and aarch64 get the inline-assembly versions. Elsewhere
//! [`clone_on`] falls back to a plain `fork` (and namespaces are not
//! requested), and [`syscall6`] to libc's `syscall`.

use std::ffi::c_void;

/// The entry point of a cloned child. It must never return.
pub type Entry = unsafe extern "C" fn(*mut c_void) -> !;

/// Makes system call `n` with up to six arguments. Returns the result, or
/// `-errno` on failure; never touches `errno`.
///
/// # Safety
/// The arguments must be valid for the system call.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn syscall6(n: libc::c_long, a: [usize; 6]) -> isize {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let ret: isize;
        core::arch::asm!(
            "syscall",
            inlateout("rax") n as isize => ret,
            in("rdi") a[0],
            in("rsi") a[1],
            in("rdx") a[2],
            in("r10") a[3],
            in("r8") a[4],
            in("r9") a[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
        ret
    }
}

/// Makes system call `n` with up to six arguments. Returns the result, or
/// `-errno` on failure; never touches `errno`.
///
/// # Safety
/// The arguments must be valid for the system call.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn syscall6(n: libc::c_long, a: [usize; 6]) -> isize {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let ret: isize;
        core::arch::asm!(
            "svc 0",
            in("x8") n,
            inlateout("x0") a[0] as isize => ret,
            in("x1") a[1],
            in("x2") a[2],
            in("x3") a[3],
            in("x4") a[4],
            in("x5") a[5],
            options(nostack),
        );
        ret
    }
}

/// Makes system call `n` through libc (only ever reached in a forked child,
/// see the module docs). Returns the result or `-errno`.
///
/// # Safety
/// The arguments must be valid for the system call.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub unsafe fn syscall6(n: libc::c_long, a: [usize; 6]) -> isize {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let r = libc::syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
        if r < 0 {
            -(*libc::__errno_location() as isize)
        } else {
            r as isize
        }
    }
}

/// `sys!(SYS_name, a, b, …)`: a raw system call with up to six integer or
/// pointer arguments (each cast with `as usize`, so negative numbers such as
/// `AT_FDCWD` or `-1` keep their bits).
macro_rules! sys {
    ($n:expr) => { $crate::process::raw::syscall6($n, [0; 6]) };
    ($n:expr, $a:expr) => { $crate::process::raw::syscall6($n, [($a) as usize, 0, 0, 0, 0, 0]) };
    ($n:expr, $a:expr, $b:expr) => {
        $crate::process::raw::syscall6($n, [($a) as usize, ($b) as usize, 0, 0, 0, 0])
    };
    ($n:expr, $a:expr, $b:expr, $c:expr) => {
        $crate::process::raw::syscall6($n, [($a) as usize, ($b) as usize, ($c) as usize, 0, 0, 0])
    };
    ($n:expr, $a:expr, $b:expr, $c:expr, $d:expr) => {
        $crate::process::raw::syscall6(
            $n,
            [($a) as usize, ($b) as usize, ($c) as usize, ($d) as usize, 0, 0],
        )
    };
    ($n:expr, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
        $crate::process::raw::syscall6(
            $n,
            [($a) as usize, ($b) as usize, ($c) as usize, ($d) as usize, ($e) as usize, 0],
        )
    };
}
pub(crate) use sys;

/// Starts `entry(arg)` in a new child made by `clone(flags)`, running on the
/// stack whose (16-byte aligned) top is `stack_top`. Returns the child's pid
/// to the parent, or `-errno`.
///
/// # Safety
/// `flags` must not include `CLONE_THREAD`, `CLONE_SETTLS` or the tid flags;
/// `stack_top` must be the top of a writable region no one else uses while
/// the child lives; `entry` must only make raw system calls (when `flags`
/// has `CLONE_VM`) and never return.
#[cfg(target_arch = "x86_64")]
pub unsafe fn clone_on(flags: usize, stack_top: *mut u8, entry: Entry, arg: *mut c_void) -> isize {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let ret: isize;
        core::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            // The child, on its new stack: no frame to return to.
            "xor ebp, ebp",
            "mov rdi, r13",
            "call r12",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone as isize => ret,
            in("rdi") flags,
            in("rsi") stack_top,
            in("rdx") 0usize,
            in("r10") 0usize,
            in("r8") 0usize,
            in("r12") entry,
            in("r13") arg,
            lateout("rcx") _,
            lateout("r11") _,
        );
        ret
    }
}

/// Starts `entry(arg)` in a new child made by `clone(flags)`, running on the
/// stack whose (16-byte aligned) top is `stack_top`. Returns the child's pid
/// to the parent, or `-errno`.
///
/// # Safety
/// As for the x86_64 version.
#[cfg(target_arch = "aarch64")]
pub unsafe fn clone_on(flags: usize, stack_top: *mut u8, entry: Entry, arg: *mut c_void) -> isize {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let ret: isize;
        core::arch::asm!(
            "svc 0",
            "cbnz x0, 2f",
            // The child, on its new stack: no frame to return to.
            "mov x29, xzr",
            "mov x30, xzr",
            "mov x0, x21",
            "blr x20",
            "brk #1",
            "2:",
            in("x8") libc::SYS_clone,
            inlateout("x0") flags as isize => ret,
            in("x1") stack_top,
            in("x2") 0usize,
            in("x3") 0usize,
            in("x4") 0usize,
            in("x20") entry,
            in("x21") arg,
        );
        ret
    }
}

/// Portable fallback: a plain `fork`, the child calling `entry(arg)` on its
/// copy of the current stack. `flags` and `stack_top` are ignored.
///
/// # Safety
/// As for the x86_64 version.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub unsafe fn clone_on(_flags: usize, _stack_top: *mut u8, entry: Entry, arg: *mut c_void) -> isize {
    // SAFETY: the caller upholds this function's contract; see `# Safety`.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            entry(arg)
        }
        if pid < 0 {
            -(*libc::__errno_location() as isize)
        } else {
            pid as isize
        }
    }
}
