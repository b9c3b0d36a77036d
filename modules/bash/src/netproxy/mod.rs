//! The network allowlist's proxy: with `network = ["name", …]` a command
//! runs in its own network namespace, whose only way out is a socket on
//! `127.0.0.1:PORT` there that the module (outside the sandbox) accepts on
//! (see [`netbridge`](crate::process::netbridge)). One port speaks both
//! HTTP proxying (plain `http://` requests and `CONNECT`) and SOCKS5 (told
//! apart by the first byte: SOCKS5 starts with `5`, no HTTP method does).
//!
//! For every connection the proxy takes the *name* the client asked for,
//! refuses IP literals and names not on the list, resolves the name itself
//! (or takes the `network_resolve` pin), refuses answers outside public
//! address space, and connects to what it resolved. Everything is bounded:
//! [`MAX_CONNECTIONS`] at once per command and [`MAX_LIVE_CONNECTIONS`] for
//! the whole module (background jobs included), [`MAX_HEAD_BYTES`] of request
//! head (or SOCKS5 handshake) read within [`HEAD_TIMEOUT`], connections
//! closed after `network_idle_timeout_secs` (default
//! [`DEFAULT_IDLE_TIMEOUT`]) without a byte either way; each
//! connection is one thread with one bounded head buffer and one 16 KiB
//! relay buffer. A command's connections end with it: when its call (or
//! job) ends, every one of them is shut down both ways at once, whatever
//! the upstream does.

pub mod allow;
pub mod deadline;
pub mod http;
pub mod log;
pub mod relay;
pub mod resolve;
pub mod socks;

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use allow::{Allowlist, NameRefusal};
use resolve::ResolveError;

/// The port the proxy listens on inside every command's network namespace
/// (each namespace has its own loopback, so a fixed port never clashes).
pub const PORT: u16 = 3128;
/// Connections one command may hold open through the proxy at once; more
/// are closed on accept (and logged).
pub const MAX_CONNECTIONS: usize = 32;
/// Connections the module's proxy carries at once for all commands and
/// background jobs together (each is a thread and three fds); more are
/// closed on accept (and logged). 384 fds at most: well within the 1024
/// a process commonly may open, which the host shares with everything
/// else it runs.
pub const MAX_LIVE_CONNECTIONS: usize = 128;
/// Most bytes of an HTTP request head (request line and headers, and
/// anything sent before the request line).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Most header fields in a request head.
pub const MAX_HEADERS: usize = 64;
/// Time for the whole request head or SOCKS5 handshake to arrive.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no byte either way for this long is closed, unless
/// the plan sets `network_idle_timeout_secs`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Once the command has closed its side of a connection, the time the
/// upstream has left to finish answering (a silent upstream must not hold
/// the connection for the idle timeout).
pub const UPSTREAM_GRACE: Duration = Duration::from_secs(5);
/// Time to connect to one resolved address.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Stack of a connection's thread (two 16 KiB buffers live on the heap).
const THREAD_STACK: usize = 256 * 1024;

/// What the proxy did with one request, for the log and the event.
#[derive(Debug, Clone)]
pub struct Decision<'a> {
    /// `http`, `connect` or `socks5` (`tcp` for [`Target::Unread`]).
    pub protocol: &'static str,
    /// What the client asked for.
    pub target: Target<'a>,
    /// `None`: allowed and connected.
    pub refused: Option<&'a Refusal>,
}

/// What a decided connection asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// Refused on accept, before any request was read (a connection cap).
    Unread,
    /// The host (as the client wrote it, possibly empty or malformed) and
    /// port of the request.
    Named {
        /// The host.
        host: &'a str,
        /// The port.
        port: u16,
    },
}

/// What the proxy tells its reporter.
#[derive(Debug, Clone)]
pub enum Report<'a> {
    /// One request decided.
    Decision(Decision<'a>),
    /// A command's proxy has ended (the moment to sum up what the log
    /// left out).
    CallEnded,
}

/// Receives every report (the mount logs and emits them).
pub type Reporter = Arc<dyn Fn(&Report<'_>) + Send + Sync>;

/// Why a request was not carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The name failed the allowlist.
    Name(NameRefusal),
    /// The name resolved to a non-public address.
    NotPublic(std::net::IpAddr),
    /// The name did not resolve.
    NotFound(String),
    /// No resolved address accepted the connection.
    Connect(String),
    /// The command already holds [`MAX_CONNECTIONS`].
    TooMany,
    /// The module's proxy already carries [`MAX_LIVE_CONNECTIONS`].
    Busy,
}

impl Refusal {
    /// A stable code (the `X-Toolhost-Refused` header and the event).
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Name(NameRefusal::Syntax) => "bad_name",
            Refusal::Name(NameRefusal::IpLiteral) => "ip_literal",
            Refusal::Name(NameRefusal::NotListed) => "not_listed",
            Refusal::NotPublic(_) => "private_address",
            Refusal::NotFound(_) => "not_found",
            Refusal::Connect(_) => "connect_failed",
            Refusal::TooMany => "too_many_connections",
            Refusal::Busy => "proxy_busy",
        }
    }

    /// Refused by the plan (rather than failed).
    pub fn is_policy(&self) -> bool {
        matches!(self, Refusal::Name(_) | Refusal::NotPublic(_))
    }

    /// What to tell the command, naming what to change.
    pub fn explain(&self, host: &str, port: u16, list: &Allowlist) -> String {
        match self {
            Refusal::Name(NameRefusal::Syntax) => format!("`{host}` is not a host name"),
            Refusal::Name(NameRefusal::IpLiteral) => format!(
                "{host} is an IP address; the network allowlist admits host names only (allowed: {})",
                list.describe()
            ),
            Refusal::Name(NameRefusal::NotListed) => format!(
                "{host}:{port} is not on the bash module's network list (allowed: {}); add it to `network` in \
                 the plan if commands need it",
                list.describe()
            ),
            Refusal::NotPublic(ip) => format!(
                "{host} resolves to {ip}, a loopback, private or link-local address, which a DNS answer may not \
                 point at; pin the name with network_resolve if it is meant to be local"
            ),
            Refusal::NotFound(why) => format!("{host} does not resolve: {why}"),
            Refusal::Connect(why) => format!("cannot connect to {host}:{port}: {why}"),
            Refusal::TooMany => format!("this command already has {MAX_CONNECTIONS} connections open"),
            Refusal::Busy => format!(
                "the bash module's proxy already carries {MAX_LIVE_CONNECTIONS} connections for all commands"
            ),
        }
    }
}

/// The mount's proxy: the list and where decisions go.
#[derive(Clone)]
pub struct Proxy {
    list: Arc<Allowlist>,
    idle: Duration,
    reporter: Reporter,
    /// Connections open through this mount's proxy, every call together.
    live: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("list", &self.list)
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// A proxy for `list` closing connections idle for `idle`; decisions
    /// are dropped until [`Proxy::report_to`].
    pub fn new(list: Allowlist, idle: Duration) -> Proxy {
        Proxy {
            list: Arc::new(list),
            idle,
            reporter: Arc::new(|_| {}),
            live: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// How long a connection may stay without traffic.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// Sends every decision to `reporter`.
    pub fn report_to(&mut self, reporter: Reporter) {
        self.reporter = reporter;
    }

    /// The list, for messages.
    pub fn list(&self) -> &Allowlist {
        &self.list
    }

    /// The environment that points a command's tools at the proxy.
    pub fn env() -> Vec<(String, String)> {
        let http = format!("http://127.0.0.1:{PORT}");
        let socks = format!("socks5h://127.0.0.1:{PORT}");
        let mut env = Vec::new();
        for (name, value) in [
            ("HTTP_PROXY", &http),
            ("HTTPS_PROXY", &http),
            ("ALL_PROXY", &socks),
        ] {
            env.push((name.to_string(), value.clone()));
            env.push((name.to_ascii_lowercase(), value.clone()));
        }
        env
    }

    /// Serves one command's connections on `listener` (the socket the
    /// reaper handed over) until the returned handle is dropped, which
    /// ends them all.
    pub fn serve(&self, listener: OwnedFd) -> io::Result<CallProxy> {
        let listener = TcpListener::from(listener);
        listener.set_nonblocking(true)?;
        let (stop_rx, stop_tx) = UnixStream::pair()?;
        let conns = Arc::new(CallConns {
            stop: stop_rx,
            open: Mutex::new(Open::default()),
        });
        let proxy = self.clone();
        let serving = conns.clone();
        let thread = std::thread::Builder::new()
            .name("bash-netproxy".into())
            .stack_size(THREAD_STACK)
            .spawn(move || proxy.accept_loop(&listener, &serving))?;
        Ok(CallProxy {
            stop: Some(stop_tx),
            conns,
            reporter: self.reporter.clone(),
            thread: Some(thread),
        })
    }

    fn accept_loop(&self, listener: &TcpListener, conns: &Arc<CallConns>) {
        let stop = &conns.stop;
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: stop.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: polling two fds this function borrows.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return;
            }
            if fds[1].revents != 0 {
                return;
            }
            let stream = match listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {
                    continue
                }
                Err(_) => {
                    // Out of fds or memory: back off rather than spin.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            let guard = match self.admit(conns, &stream) {
                Ok(guard) => guard,
                Err(refusal) => {
                    self.decided("tcp", Target::Unread, Some(&refusal));
                    let _ = stream.shutdown(Shutdown::Both);
                    continue;
                }
            };
            let proxy = self.clone();
            let spawned = std::thread::Builder::new()
                .name("bash-netproxy-conn".into())
                .stack_size(THREAD_STACK)
                .spawn(move || {
                    let stop = guard.conns.stop.as_fd();
                    proxy.handle(stream, stop);
                    drop(guard);
                });
            // A thread that cannot start drops the connection (and the
            // guard with the closure).
            drop(spawned);
        }
    }

    /// Counts `stream` against both caps and keeps a handle on it for
    /// [`CallProxy`]'s drop to shut down.
    fn admit(&self, conns: &Arc<CallConns>, stream: &TcpStream) -> Result<ConnGuard, Refusal> {
        let handle = stream.try_clone().map_err(|e| Refusal::Connect(e.to_string()))?;
        let mut open = conns.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.ended || open.clients.len() >= MAX_CONNECTIONS {
            return Err(Refusal::TooMany);
        }
        if self.live.fetch_add(1, Ordering::AcqRel) >= MAX_LIVE_CONNECTIONS {
            self.live.fetch_sub(1, Ordering::AcqRel);
            return Err(Refusal::Busy);
        }
        let id = open.next;
        open.next += 1;
        open.clients.insert(id, handle);
        Ok(ConnGuard {
            conns: conns.clone(),
            live: self.live.clone(),
            id,
        })
    }

    fn handle(&self, stream: TcpStream, stop: BorrowedFd<'_>) {
        if stream.set_read_timeout(Some(HEAD_TIMEOUT)).is_err()
            || stream.set_write_timeout(Some(self.idle)).is_err()
        {
            return;
        }
        let mut first = [0u8; 1];
        match stream.peek(&mut first) {
            Ok(1) if first[0] == socks::VERSION => socks::serve(self, stream, stop),
            Ok(1) => http::serve(self, stream, stop),
            _ => {}
        }
    }

    /// Checks, resolves and connects to `host:port`, reporting the
    /// decision; the connection has the idle timeout set.
    pub fn open(&self, protocol: &'static str, host: &str, port: u16) -> Result<TcpStream, Refusal> {
        let result = self.decide(host, port);
        self.report(protocol, host, port, result.as_ref().err());
        result
    }

    /// Hands the decision on a request for `host:port` to the reporter.
    pub fn report(&self, protocol: &'static str, host: &str, port: u16, refused: Option<&Refusal>) {
        self.decided(protocol, Target::Named { host, port }, refused);
    }

    fn decided(&self, protocol: &'static str, target: Target<'_>, refused: Option<&Refusal>) {
        (self.reporter)(&Report::Decision(Decision {
            protocol,
            target,
            refused,
        }));
    }

    fn decide(&self, host: &str, port: u16) -> Result<TcpStream, Refusal> {
        let name = self.list.check(host, port).map_err(Refusal::Name)?;
        let addrs = resolve::addresses(&name, port, self.list.pinned(&name, port)).map_err(|e| match e {
            ResolveError::NotFound(why) => Refusal::NotFound(why),
            ResolveError::NotPublic(ip) => Refusal::NotPublic(ip),
        })?;
        let mut last = String::from("no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(s) => {
                    s.set_write_timeout(Some(self.idle))
                        .map_err(|e| Refusal::Connect(e.to_string()))?;
                    return Ok(s);
                }
                Err(e) => last = format!("{addr}: {e}"),
            }
        }
        Err(Refusal::Connect(last))
    }
}

/// One command's connections: what ends them when the command ends.
#[derive(Debug)]
struct CallConns {
    /// Becomes readable (hung up) when [`CallProxy`] drops its other end:
    /// the accept loop and every relay poll it.
    stop: UnixStream,
    open: Mutex<Open>,
}

/// The connections a command holds open, by id.
#[derive(Debug, Default)]
struct Open {
    /// The command has ended: admit nothing more.
    ended: bool,
    next: u64,
    /// A second handle on each client socket, to shut it down from
    /// outside its thread (which may be blocked reading a request head).
    clients: HashMap<u64, TcpStream>,
}

/// Counts a connection, for its command and the module, until its thread
/// ends.
struct ConnGuard {
    conns: Arc<CallConns>,
    live: Arc<AtomicUsize>,
    id: u64,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        let mut open = self.conns.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.clients.remove(&self.id);
        self.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One command's proxy; dropping it (when the command or job ends) stops
/// accepting, closes the listener and ends every connection the command
/// opened: relays wake on the closed stop socket, and each client socket
/// is shut down both ways (which also ends a thread still reading a
/// request head). A thread still connecting upstream ends when that
/// attempt does (at most [`CONNECT_TIMEOUT`] per address).
pub struct CallProxy {
    stop: Option<UnixStream>,
    conns: Arc<CallConns>,
    reporter: Reporter,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for CallProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallProxy")
            .field("conns", &self.conns)
            .finish_non_exhaustive()
    }
}

impl Drop for CallProxy {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut open = self.conns.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.ended = true;
        for client in open.clients.values() {
            let _ = client.shutdown(Shutdown::Both);
        }
        drop(open);
        (self.reporter)(&Report::CallEnded);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::sync::Mutex;

    use super::*;

    /// A proxy serving a loopback listener, and the refusal codes it
    /// reported.
    fn serving() -> (
        Proxy,
        CallProxy,
        std::net::SocketAddr,
        Arc<Mutex<Vec<&'static str>>>,
    ) {
        let mut proxy = Proxy::new(Allowlist::default(), DEFAULT_IDLE_TIMEOUT);
        let codes = Arc::new(Mutex::new(Vec::new()));
        let seen = codes.clone();
        proxy.report_to(Arc::new(move |r: &Report<'_>| {
            if let Report::Decision(Decision {
                refused: Some(refusal),
                ..
            }) = r
            {
                seen.lock().unwrap().push(refusal.code());
            }
        }));
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let call = proxy.serve(OwnedFd::from(listener)).expect("serve");
        (proxy, call, addr, codes)
    }

    /// Reads until EOF (or a reset); `false` when nothing ended within 5 s.
    fn ends(mut s: TcpStream) -> bool {
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let mut buf = [0u8; 64];
        loop {
            match s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) => return e.kind() == io::ErrorKind::ConnectionReset,
            }
        }
    }

    #[test]
    fn ending_the_call_ends_a_connection_still_sending_its_head() {
        let (_proxy, call, addr, _) = serving();
        let client = TcpStream::connect(addr).expect("connect");
        (&client)
            .write_all(b"GET http://a.test/ HTTP/1.1\r\n")
            .expect("write");
        std::thread::sleep(Duration::from_millis(200));
        let started = std::time::Instant::now();
        drop(call);
        assert!(ends(client), "the connection outlived its call");
        assert!(
            started.elapsed() < HEAD_TIMEOUT / 2,
            "ended by the head deadline, not the call"
        );
    }

    #[test]
    fn the_module_wide_cap_refuses_on_accept() {
        let (proxy, _call, addr, codes) = serving();
        proxy.live.store(MAX_LIVE_CONNECTIONS, Ordering::Release);
        let client = TcpStream::connect(addr).expect("connect");
        assert!(ends(client), "a connection past the module's cap was held");
        assert_eq!(*codes.lock().unwrap(), ["proxy_busy"]);
        assert_eq!(proxy.live.load(Ordering::Acquire), MAX_LIVE_CONNECTIONS);
    }
}
