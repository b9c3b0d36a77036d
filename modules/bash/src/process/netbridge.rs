//! The command's one way out of its network namespace, under a network
//! allowlist: the reaper (in the new namespace, still holding its
//! capabilities there) brings the loopback interface up, binds a TCP socket
//! to `127.0.0.1:PORT` *in the namespace*, and sends that listening socket
//! to the host with `SCM_RIGHTS` over the control socket. The host's proxy
//! then `accept`s the command's connections itself.
//!
//! Why not the usual Unix-socket bridge (a forwarder such as socat inside
//! the namespace relaying to a proxy socket file outside, as Claude Code's
//! sandbox-runtime does on Linux): a socket file would have to be reachable
//! from the command's mount namespace, and a forwarder would run beside the
//! command. Handing over the listening socket needs neither: nothing the
//! command can reach but `127.0.0.1:PORT`, no file, no extra process, no
//! change to the seccomp or Landlock rules (the command never needs an
//! `AF_UNIX` socket for the network), and one copy less per byte.
//!
//! Runs in the reaper before capabilities are dropped; ordinary code (the
//! reaper is its own process), but no allocation is needed either.

use std::ffi::c_int;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};

/// The byte sent with the listening socket.
pub const HANDOVER: u8 = b'L';

/// Brings `lo` up, listens on `127.0.0.1:port` and sends the socket on
/// `control` (the reaper's control socket). The reaper's copy is closed
/// when this returns: only the host holds the listener.
pub fn hand_over(port: u16, control: c_int) -> io::Result<()> {
    loopback_up()?;
    let listener = listen(port)?;
    let fds = [listener.as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    let sent = sendmsg::<()>(
        control,
        &[io::IoSlice::new(&[HANDOVER])],
        &cmsg,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    if sent != 1 {
        return Err(io::Error::other("short send of the proxy socket"));
    }
    Ok(())
}

/// `SIOCSIFFLAGS lo IFF_UP`: a fresh network namespace's loopback is down
/// and has no address until it is up.
fn loopback_up() -> io::Result<()> {
    let sock = socket(libc::AF_INET, libc::SOCK_DGRAM)?;
    // SAFETY: an all-zero ifreq is valid (name and a union of integers).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write `req`, a live ifreq.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) != 0 {
            return Err(io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn listen(port: u16) -> io::Result<OwnedFd> {
    let sock = socket(libc::AF_INET, libc::SOCK_STREAM)?;
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: bind and listen on a socket this function owns, with a live
    // sockaddr_in of the size given.
    unsafe {
        if libc::bind(
            sock.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if libc::listen(sock.as_raw_fd(), 64) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(sock)
}

fn socket(family: c_int, kind: c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket takes no pointers.
    let fd = unsafe { libc::socket(family, kind | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd this function owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
