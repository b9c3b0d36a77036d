//! A small pool of threads that take turns reading one input
//! (leader/followers), as the MCP stdio server reads stdin.
//!
//! The input is a [`Source`] that hands itself to one waiting reader at a
//! time (in the host: an epoll set with stdin registered `EPOLLONESHOT`).
//! The reader it wakes reads what is there, hands it on, gives the input
//! back ([`Source::rearm`]) and only then runs the one job the read may
//! have produced (a tool call), so the thread that was woken by a request
//! is the thread that runs it: one wake-up per call. Meanwhile another
//! reader is always waiting: one is started when none is idle, and an idle
//! reader beyond [`Readers::start`]'s `keep` retires only while another is
//! idle too, so the input is never left without one.
//!
//! What must hold, whatever the interleaving (checked with loom in
//! `tests/loom.rs`, against a model of the one-shot source):
//! - only one reader reads at a time, so what is read is handed on exactly
//!   once and in order;
//! - [`Source::end`] is called once, after the last read;
//! - no lost wake-up: input that arrives while a reader runs a job is read
//!   by another, whatever the idle readers decide about retiring;
//! - at the end every reader leaves, including those blocked in a wait.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::prim::{thread, AtomicBool, AtomicUsize};

/// Work a read wants done on the reading thread once the input is given
/// back. A job may be dropped unrun (no thread could be started for it): it
/// must then settle its own business, as a direct call does by answering.
pub type Job = Box<dyn FnOnce() + Send>;

/// What a wait on the [`Source`] brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Input is ready, and this reader alone owns it until it rearms.
    Input,
    /// The readers are stopping ([`Source::stop`] was called): leave.
    Stop,
    /// Nothing came for a while: an extra reader may retire.
    Idle,
    /// The wait itself failed: treated as the end of input.
    Broken,
}

/// What one read brought.
pub enum Read {
    /// Input (perhaps nothing yet), and maybe a job for this thread.
    More(Option<Job>),
    /// The input is closed (or failed).
    End,
}

/// The input the readers share.
pub trait Source: Send + Sync + 'static {
    /// Blocks until input is ready (handed to this caller alone), the
    /// readers are stopped, or it idled long enough.
    fn wait(&self) -> Event;
    /// Reads what is there and hands it on. Called only by the reader
    /// that owns the input (after [`Event::Input`], before
    /// [`Source::rearm`]).
    fn read(&self) -> Read;
    /// Gives the input back for the next reader.
    fn rearm(&self) -> io::Result<()>;
    /// Makes every wait, now and later, return [`Event::Stop`].
    fn stop(&self);
    /// The input has ended: nothing more will be read. Called once.
    fn end(&self);
}

/// What woke a reader that stays.
enum Woken {
    Input,
    Stop,
    Broken,
}

/// The readers of one [`Source`].
pub struct Readers<S> {
    source: S,
    /// Readers kept when idle.
    keep: usize,
    /// Readers waiting on the input right now.
    idle: AtomicUsize,
    /// Readers alive.
    threads: AtomicUsize,
    /// [`Source::end`] has been called.
    ended: AtomicBool,
}

impl<S: Source> Readers<S> {
    /// Starts `keep` (at least one) readers on `source`.
    pub fn start(source: S, keep: usize) -> io::Result<Arc<Self>> {
        let readers = Arc::new(Readers {
            source,
            keep: keep.max(1),
            idle: AtomicUsize::new(0),
            threads: AtomicUsize::new(0),
            ended: AtomicBool::new(false),
        });
        for _ in 0..readers.keep {
            readers.spawn()?;
        }
        Ok(readers)
    }

    /// The source they read.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Readers alive now.
    pub fn threads(&self) -> usize {
        self.threads.load(Ordering::SeqCst)
    }

    fn spawn(self: &Arc<Self>) -> io::Result<()> {
        self.threads.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        thread::Builder::new()
            .name("toolhost-mcp-io".into())
            .spawn(move || me.serve())
            .map(drop)
            .inspect_err(|_| {
                self.threads.fetch_sub(1, Ordering::SeqCst);
            })
    }

    /// One reader: wait for input (or the stop), read, rearm, run the job.
    fn serve(self: Arc<Self>) {
        loop {
            match self.wait() {
                None => return, // retired
                Some(Woken::Stop) => return self.leave(),
                Some(Woken::Broken) => return self.finish(),
                Some(Woken::Input) => {}
            }
            // This thread alone owns the input until it rearms it.
            let job = match self.source.read() {
                Read::End => return self.finish(),
                Read::More(job) => job,
            };
            if let Err(e) = self.source.rearm() {
                tracing::error!("cannot watch the input again: {e}");
                if let Some(job) = job {
                    run(job);
                }
                return self.finish();
            }
            if let Some(job) = job {
                // Someone must read while this thread works.
                if self.idle.load(Ordering::SeqCst) == 0 {
                    if let Err(e) = self.spawn() {
                        tracing::warn!("cannot start another reader: {e}");
                    }
                }
                run(job);
            }
        }
    }

    /// Waits, counted as idle, for an event; `None` when this reader
    /// retires instead: after idling, only while more than `keep` readers
    /// live and another is idle too, so the input is never left without a
    /// reader.
    fn wait(&self) -> Option<Woken> {
        self.idle.fetch_add(1, Ordering::SeqCst);
        loop {
            match self.source.wait() {
                Event::Idle => {
                    if self.threads.load(Ordering::SeqCst) > self.keep && self.leave_idle_if_not_last() {
                        self.threads.fetch_sub(1, Ordering::SeqCst);
                        return None;
                    }
                }
                event => {
                    self.idle.fetch_sub(1, Ordering::SeqCst);
                    return Some(match event {
                        Event::Input => Woken::Input,
                        Event::Stop => Woken::Stop,
                        _ => Woken::Broken,
                    });
                }
            }
        }
    }

    /// Stops counting this reader as idle, unless it is the only idle one.
    fn leave_idle_if_not_last(&self) -> bool {
        let mut idle = self.idle.load(Ordering::SeqCst);
        while idle >= 2 {
            match self
                .idle
                .compare_exchange(idle, idle - 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(now) => idle = now,
            }
        }
        false
    }

    /// The input ended (or failed): tell the source, once, and every other
    /// reader to leave.
    fn finish(&self) {
        if !self.ended.swap(true, Ordering::SeqCst) {
            self.source.end();
        }
        self.source.stop();
        self.leave();
    }

    fn leave(&self) {
        self.threads.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads `source` to its end on the calling thread (an input that cannot
/// be waited on, such as a regular file); each job runs on a thread of its
/// own, so a long call does not hold up the input behind it.
pub fn read_plainly<S: Source>(source: &S) {
    loop {
        match source.read() {
            Read::End => return source.end(),
            Read::More(None) => {}
            Read::More(Some(job)) => {
                if let Err(e) = thread::Builder::new().name("toolhost-call".into()).spawn(job) {
                    tracing::error!("cannot start a thread for a call: {e}");
                }
            }
        }
    }
}

/// Runs a job; a panic in it is logged, and the reader goes on.
fn run(job: Job) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
        tracing::error!("a call panicked in the host");
    }
}
