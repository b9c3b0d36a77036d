//! The SOCKS5 side of the proxy (RFC 1928): no authentication, `CONNECT`
//! only, to a *domain name* (`socks5h://`, `curl --socks5-hostname`);
//! IPv4/IPv6 address requests are refused like IP literals over HTTP.
//!
//! Hand-written rather than a crate: the field's SOCKS5 server crates
//! (`fast-socks5`, `socks5-server`) are tokio servers, and this module runs
//! no async runtime (one thread per connection, see [`super`]); what is
//! needed here is two fixed-layout messages read with `read_exact` (every
//! length is a single byte, so nothing can grow) and one reply.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::BorrowedFd;
use std::time::Instant;

use super::allow::NameRefusal;
use super::deadline::Deadline;
use super::{Proxy, Refusal, HEAD_TIMEOUT};

/// The protocol version byte every SOCKS5 message starts with.
pub const VERSION: u8 = 5;
const NO_AUTH: u8 = 0;
const NO_METHOD: u8 = 0xFF;
const CMD_CONNECT: u8 = 1;
const ATYP_V4: u8 = 1;
const ATYP_DOMAIN: u8 = 3;
const ATYP_V6: u8 = 4;

/// Reply codes (RFC 1928 section 6).
mod reply {
    pub const OK: u8 = 0;
    pub const GENERAL_FAILURE: u8 = 1;
    pub const NOT_ALLOWED: u8 = 2;
    pub const HOST_UNREACHABLE: u8 = 4;
    pub const REFUSED: u8 = 5;
    pub const COMMAND_NOT_SUPPORTED: u8 = 7;
    pub const ADDRESS_NOT_SUPPORTED: u8 = 8;
}

/// The reply code for a refusal.
pub fn reply_code(refusal: &Refusal) -> u8 {
    match refusal {
        Refusal::Name(_) | Refusal::NotPublic(_) => reply::NOT_ALLOWED,
        Refusal::NotFound(_) => reply::HOST_UNREACHABLE,
        Refusal::Connect(_) => reply::REFUSED,
        Refusal::TooMany | Refusal::Busy => reply::GENERAL_FAILURE,
    }
}

/// Serves one SOCKS5 connection.
pub fn serve(proxy: &Proxy, mut client: TcpStream, stop: BorrowedFd<'_>) {
    let _ = handshake(proxy, &mut client, stop);
}

fn handshake(proxy: &Proxy, client: &mut TcpStream, stop: BorrowedFd<'_>) -> std::io::Result<()> {
    let reader = &mut Deadline::new(&*client, Instant::now() + HEAD_TIMEOUT);
    let [_version, count] = read::<2>(reader)?;
    let mut methods = [0u8; 255];
    let methods = &mut methods[..usize::from(count)];
    reader.read_exact(methods)?;
    if !methods.contains(&NO_AUTH) {
        return client.write_all(&[VERSION, NO_METHOD]);
    }
    (&*client).write_all(&[VERSION, NO_AUTH])?;
    let [version, command, _reserved, atyp] = read::<4>(reader)?;
    if version != VERSION {
        return send_reply(client, reply::GENERAL_FAILURE);
    }
    let host = match atyp {
        ATYP_DOMAIN => {
            let [len] = read::<1>(reader)?;
            let mut name = [0u8; 255];
            let name = &mut name[..usize::from(len)];
            reader.read_exact(name)?;
            String::from_utf8_lossy(name).into_owned()
        }
        ATYP_V4 => std::net::Ipv4Addr::from(read::<4>(reader)?).to_string(),
        ATYP_V6 => std::net::Ipv6Addr::from(read::<16>(reader)?).to_string(),
        _ => return send_reply(client, reply::ADDRESS_NOT_SUPPORTED),
    };
    let port = u16::from_be_bytes(read::<2>(reader)?);
    if command != CMD_CONNECT {
        return send_reply(client, reply::COMMAND_NOT_SUPPORTED);
    }
    if atyp != ATYP_DOMAIN {
        // Reported like any refusal, so the log names the address.
        let refusal = Refusal::Name(NameRefusal::IpLiteral);
        proxy.report("socks5", &host, port, Some(&refusal));
        return send_reply(client, reply_code(&refusal));
    }
    match proxy.open("socks5", &host, port) {
        Ok(mut upstream) => {
            send_reply(client, reply::OK)?;
            super::relay::pump(client, &mut upstream, &[], proxy.idle(), stop, None);
            Ok(())
        }
        Err(refusal) => send_reply(client, reply_code(&refusal)),
    }
}

fn read<const N: usize>(reader: &mut Deadline<'_>) -> std::io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    reader.read_exact(&mut buf)?;
    Ok(buf)
}

/// A reply with an all-zero IPv4 bound address (clients ignore it).
fn send_reply(client: &mut TcpStream, code: u8) -> std::io::Result<()> {
    client.write_all(&[VERSION, code, 0, ATYP_V4, 0, 0, 0, 0, 0, 0])
}
