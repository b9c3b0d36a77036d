//! What the host hands the reaper program: the command, its environment,
//! limits and sandbox steps, as one byte string sent to the zygote.
//!
//! The format is private to one build (host and reaper come from the same
//! crate): a magic word, then fields in a fixed order, each a little-endian
//! `u32` or a `u32` length and that many bytes. It is a dozen fields of
//! byte strings, so a serialization crate would add more than it saves;
//! decoding checks every length and fails with [`SpecError`] rather than
//! panicking.

use std::ffi::{c_char, CString};

use super::reaper::{Hidden, Setup, WriteFile, MAX_HIDDEN, MAX_READ_ONLY};

const MAGIC: &[u8; 4] = b"THR1";

/// The sandbox steps, owned (the reaper program turns them into a
/// [`Setup`] of pointers into this value).
#[derive(Debug, Clone, Default)]
pub struct SetupSpec {
    /// The reaper is PID 1 of a new PID namespace.
    pub pid_ns: bool,
    /// (path, contents) of setgroups, uid_map, gid_map; empty when none.
    pub id_maps: Vec<(CString, Vec<u8>)>,
    /// Make every mount private first.
    pub mount_private: bool,
    /// Mount a fresh `/proc`.
    pub mount_proc: bool,
    /// Paths to cover, and whether each is a directory.
    pub hidden: Vec<(CString, bool)>,
    /// Files to bind read-only over themselves.
    pub read_only: Vec<CString>,
    /// Join the pids cgroup (fd slot 6).
    pub cgroup: bool,
    /// `PR_SET_NO_NEW_PRIVS`.
    pub no_new_privs: bool,
    /// Enter the Landlock domain (fd slot 5).
    pub landlock: bool,
    /// Drop every capability before `execve`.
    pub drop_caps: bool,
    /// Replace `/dev` with a minimal one.
    pub minimal_dev: bool,
    /// The seccomp program (empty: none).
    pub seccomp: Vec<libc::sock_filter>,
    /// Bring up the namespace's loopback and hand the host a socket
    /// listening on `127.0.0.1:proxy_port` there (0: none); see
    /// [`netbridge`](super::netbridge).
    pub proxy_port: u16,
}

/// Everything the reaper program needs besides its fds.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// The shell to execute.
    pub shell: CString,
    /// Its argv.
    pub argv: Vec<CString>,
    /// Its environment (`KEY=VALUE`).
    pub env: Vec<CString>,
    /// Its working directory.
    pub cwd: CString,
    /// `(RLIMIT_*, value)` pairs (at most 8 are applied).
    pub rlimits: Vec<(libc::c_int, u64)>,
    /// `CLONE_NEW*` flags for the reaper's own child, 0 for none.
    pub namespaces: libc::c_int,
    /// The sandbox steps.
    pub setup: SetupSpec,
}

/// A spec that could not be decoded (a build mismatch between host and
/// reaper, or a truncated request).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    /// The magic word is wrong: another build's reaper.
    #[error("the reaper program is from another build of toolhost-bash")]
    Magic,
    /// The bytes end inside a field.
    #[error("the spec is truncated")]
    Truncated,
    /// A string holds a NUL byte.
    #[error("a string in the spec holds a NUL byte")]
    Nul,
}

impl Spec {
    /// The bytes the reaper program reads.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(4096);
        w.extend_from_slice(MAGIC);
        put_bytes(&mut w, self.shell.as_bytes());
        put_list(&mut w, &self.argv);
        put_list(&mut w, &self.env);
        put_bytes(&mut w, self.cwd.as_bytes());
        put_u32(&mut w, self.rlimits.len() as u32);
        for (resource, value) in &self.rlimits {
            put_u32(&mut w, *resource as u32);
            w.extend_from_slice(&value.to_le_bytes());
        }
        put_u32(&mut w, self.namespaces as u32);
        let s = &self.setup;
        let flags = [
            s.pid_ns,
            s.mount_private,
            s.mount_proc,
            s.cgroup,
            s.no_new_privs,
            s.landlock,
            s.drop_caps,
            s.minimal_dev,
        ]
        .iter()
        .enumerate()
        .fold(0u32, |acc, (i, on)| acc | (u32::from(*on) << i));
        put_u32(&mut w, flags);
        put_u32(&mut w, s.id_maps.len() as u32);
        for (path, data) in &s.id_maps {
            put_bytes(&mut w, path.as_bytes());
            put_bytes(&mut w, data);
        }
        put_u32(&mut w, s.hidden.len() as u32);
        for (path, dir) in &s.hidden {
            put_bytes(&mut w, path.as_bytes());
            put_u32(&mut w, u32::from(*dir));
        }
        put_list(&mut w, &s.read_only);
        put_u32(&mut w, s.seccomp.len() as u32);
        for f in &s.seccomp {
            w.extend_from_slice(&f.code.to_le_bytes());
            w.push(f.jt);
            w.push(f.jf);
            w.extend_from_slice(&f.k.to_le_bytes());
        }
        put_u32(&mut w, u32::from(s.proxy_port));
        w
    }

    /// Reads what [`encode`](Spec::encode) wrote.
    pub fn decode(bytes: &[u8]) -> Result<Spec, SpecError> {
        let mut r = Reader { rest: bytes };
        if r.take(4)? != MAGIC {
            return Err(SpecError::Magic);
        }
        let shell = r.cstring()?;
        let argv = r.list()?;
        let env = r.list()?;
        let cwd = r.cstring()?;
        let n = r.u32()? as usize;
        let mut rlimits = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            let resource = r.u32()? as libc::c_int;
            let value = u64::from_le_bytes(r.array::<8>()?);
            rlimits.push((resource, value));
        }
        let namespaces = r.u32()? as libc::c_int;
        let flags = r.u32()?;
        let bit = |i: u32| flags & (1 << i) != 0;
        let mut setup = SetupSpec {
            pid_ns: bit(0),
            mount_private: bit(1),
            mount_proc: bit(2),
            cgroup: bit(3),
            no_new_privs: bit(4),
            landlock: bit(5),
            drop_caps: bit(6),
            minimal_dev: bit(7),
            ..SetupSpec::default()
        };
        for _ in 0..r.u32()? {
            let path = r.cstring()?;
            let data = r.bytes()?.to_vec();
            setup.id_maps.push((path, data));
        }
        for _ in 0..r.u32()? {
            let path = r.cstring()?;
            let dir = r.u32()? != 0;
            setup.hidden.push((path, dir));
        }
        setup.read_only = r.list()?;
        for _ in 0..r.u32()? {
            let code = u16::from_le_bytes(r.array::<2>()?);
            let [jt, jf] = r.array::<2>()?;
            let k = u32::from_le_bytes(r.array::<4>()?);
            setup.seccomp.push(libc::sock_filter { code, jt, jf, k });
        }
        setup.proxy_port = u16::try_from(r.u32()?).map_err(|_| SpecError::Truncated)?;
        Ok(Spec {
            shell,
            argv,
            env,
            cwd,
            rlimits,
            namespaces,
            setup,
        })
    }
}

impl SetupSpec {
    /// The raw view the reaper's system calls take: pointers into `self`,
    /// valid while `self` lives and is not changed.
    pub fn raw(&self) -> Setup {
        let mut setup = Setup::none();
        setup.pid_ns = self.pid_ns;
        if let [a, b, c] = self.id_maps.as_slice() {
            let w = |(path, data): &(CString, Vec<u8>)| WriteFile {
                path: path.as_ptr(),
                data: data.as_ptr(),
                len: data.len(),
            };
            setup.id_maps = Some([w(a), w(b), w(c)]);
        }
        setup.mount_private = self.mount_private;
        setup.mount_proc = self.mount_proc;
        for (slot, (path, dir)) in setup.hidden.iter_mut().zip(&self.hidden) {
            *slot = Hidden {
                path: path.as_ptr(),
                dir: *dir,
            };
        }
        setup.hidden_count = self.hidden.len().min(MAX_HIDDEN);
        for (slot, path) in setup.read_only.iter_mut().zip(&self.read_only) {
            *slot = path.as_ptr();
        }
        setup.read_only_count = self.read_only.len().min(MAX_READ_ONLY);
        setup.cgroup = self.cgroup;
        setup.no_new_privs = self.no_new_privs;
        setup.landlock = self.landlock;
        setup.drop_caps = self.drop_caps;
        setup.minimal_dev = self.minimal_dev;
        if !self.seccomp.is_empty() {
            setup.seccomp = self.seccomp.as_ptr();
            setup.seccomp_len = self.seccomp.len().min(u16::MAX as usize) as u16;
        }
        setup.proxy_port = self.proxy_port;
        setup
    }
}

/// A NULL-terminated array of pointers into `strings` (valid while they
/// live).
pub fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    let mut v: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
    v.push(std::ptr::null());
    v
}

fn put_u32(w: &mut Vec<u8>, v: u32) {
    w.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(w: &mut Vec<u8>, b: &[u8]) {
    put_u32(w, b.len() as u32);
    w.extend_from_slice(b);
}

fn put_list(w: &mut Vec<u8>, list: &[CString]) {
    put_u32(w, list.len() as u32);
    for s in list {
        put_bytes(w, s.as_bytes());
    }
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], SpecError> {
        if self.rest.len() < n {
            return Err(SpecError::Truncated);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], SpecError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u32(&mut self) -> Result<u32, SpecError> {
        Ok(u32::from_le_bytes(self.array::<4>()?))
    }

    fn bytes(&mut self) -> Result<&'a [u8], SpecError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn cstring(&mut self) -> Result<CString, SpecError> {
        CString::new(self.bytes()?).map_err(|_| SpecError::Nul)
    }

    fn list(&mut self) -> Result<Vec<CString>, SpecError> {
        let n = self.u32()? as usize;
        // Each entry takes at least 4 bytes: a bound before allocating.
        if n > self.rest.len() / 4 {
            return Err(SpecError::Truncated);
        }
        (0..n).map(|_| self.cstring()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let spec = Spec {
            shell: c"/bin/bash".into(),
            argv: vec![c"bash".into(), c"-c".into(), c"echo hi".into()],
            env: vec![c"PATH=/bin".into()],
            cwd: c"/tmp".into(),
            rlimits: vec![(libc::RLIMIT_NOFILE as libc::c_int, 64)],
            namespaces: libc::CLONE_NEWPID,
            setup: SetupSpec {
                pid_ns: true,
                hidden: vec![(c"/root/.ssh".into(), true)],
                drop_caps: true,
                seccomp: vec![libc::sock_filter {
                    code: 6,
                    jt: 1,
                    jf: 2,
                    k: 0x7fff_0000,
                }],
                proxy_port: 3128,
                ..SetupSpec::default()
            },
        };
        let bytes = spec.encode();
        let back = Spec::decode(&bytes).expect("decodes");
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.argv, spec.argv);
        assert_eq!(back.setup.seccomp[0].k, 0x7fff_0000);
        assert_eq!(back.setup.proxy_port, 3128);
        for cut in 0..bytes.len() {
            assert!(
                Spec::decode(&bytes[..cut]).is_err(),
                "decoded a spec cut at {cut}"
            );
        }
        assert_eq!(Spec::decode(b"XXXX").err(), Some(SpecError::Magic));
    }
}
