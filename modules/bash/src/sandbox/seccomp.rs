//! The system-call wall: a seccomp BPF program compiled once at mount (by
//! `seccompiler`), installed by the shell's child with one `seccomp` call
//! after `no_new_privs`. Refused calls fail with EPERM.
//!
//! seccompiler checks the architecture (another one kills the process) and
//! matches arguments, but cannot match on the syscall number's x32 bit nor
//! give one call a different errno; [`PREFIX`] does both in five
//! instructions run before seccompiler's program: any number with
//! `__X32_SYSCALL_BIT` set is refused (x32 calls are a second table the
//! rules below would not see), and `clone3` fails with ENOSYS — its flags
//! sit in memory where no filter can read them, and ENOSYS makes glibc fall
//! back to `clone`, whose flags the rules do check (as Chrome and Docker do).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

/// Calls no shell command needs and that would let it reach past its
/// walls: debugging other processes or taking their fds, changing mounts or namespaces, kernel
/// keyrings, BPF, perf, modules, kexec, swap, reboot.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_bpf,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    // io_uring performs I/O outside the syscall filter's view.
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
];

/// `clone` flags that make new namespaces: refused (a namespace of the
/// command's own could undo the sandbox's, e.g. a user namespace with
/// every capability in it).
const CLONE_NAMESPACES: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// The syscall-number bit of the x32 ABI (x86_64's `__X32_SYSCALL_BIT`).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// `SECCOMP_RET_ERRNO | errno`.
const fn ret_errno(errno: libc::c_int) -> u32 {
    libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)
}

const fn insn(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// Run before seccompiler's program (see the module docs): load the
/// number; x32 bit set → EPERM; `clone3` → ENOSYS; else go on.
pub const PREFIX: [libc::sock_filter; 5] = [
    // A = seccomp_data.nr (offset 0)
    insn(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
    insn(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, 0, 1, X32_SYSCALL_BIT),
    insn(libc::BPF_RET | libc::BPF_K, 0, 0, ret_errno(libc::EPERM)),
    insn(
        libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
        0,
        1,
        libc::SYS_clone3 as u32,
    ),
    insn(libc::BPF_RET | libc::BPF_K, 0, 0, ret_errno(libc::ENOSYS)),
];

/// Socket families a sandboxed command may always make: Unix sockets and
/// netlink (glibc's resolver and `ip` ask the kernel about interfaces).
const LOCAL_FAMILIES: [libc::c_int; 2] = [libc::AF_UNIX, libc::AF_NETLINK];
/// Socket families a network namespace confines (its interfaces, routes
/// and ports are its own).
const INET_FAMILIES: [libc::c_int; 2] = [libc::AF_INET, libc::AF_INET6];

/// Which `socket`/`socketpair` families the filter lets through. A network
/// namespace confines only the inet families: others, AF_VSOCK (the
/// hypervisor's transport, whose ports are shared with the host) and
/// AF_PACKET among them, reach past it, so whenever the host's network is
/// not granted they are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sockets {
    /// `network = true`: any family.
    Any,
    /// In a network namespace: [`LOCAL_FAMILIES`] and [`INET_FAMILIES`].
    LocalAndInet,
    /// Network off without a namespace: [`LOCAL_FAMILIES`] only.
    LocalOnly,
}

impl Sockets {
    /// The families allowed, or `None` for any.
    fn allowed(self) -> Option<Vec<libc::c_int>> {
        match self {
            Sockets::Any => None,
            Sockets::LocalAndInet => Some(LOCAL_FAMILIES.iter().chain(&INET_FAMILIES).copied().collect()),
            Sockets::LocalOnly => Some(LOCAL_FAMILIES.to_vec()),
        }
    }
}

/// Why the filter could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// This architecture is not one seccompiler knows.
    #[error("seccomp filters are not built for the {0} architecture")]
    Arch(&'static str),
    /// The compiler refused the rules.
    #[error("building the seccomp filter: {0}")]
    Build(#[from] seccompiler::BackendError),
}

/// The program; `socket` and `socketpair` of a family `sockets` does not
/// allow are refused too.
pub fn program(sockets: Sockets) -> Result<BpfProgram, SeccompError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| SeccompError::Arch(std::env::consts::ARCH))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = REFUSED.iter().map(|n| (*n, Vec::new())).collect();
    if let Some(allowed) = sockets.allowed() {
        // One rule whose conditions all hold (refused) when the family is
        // none of the allowed ones.
        let not_allowed = allowed
            .iter()
            .map(|family| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *family as u64))
            .collect::<Result<Vec<_>, _>>()?;
        let rule = SeccompRule::new(not_allowed)?;
        rules.insert(libc::SYS_socket, vec![rule.clone()]);
        rules.insert(libc::SYS_socketpair, vec![rule]);
    }
    let per_flag = CLONE_NAMESPACES
        .iter()
        .map(|flag| {
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(*flag as u64),
                *flag as u64,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, per_flag);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}
