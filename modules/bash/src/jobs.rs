//! Background jobs: started by `bash` with `run_in_background`, read with
//! `bash_output`, ended by `bash_kill`, by their timeout, or at cleanup.
//! Each job has a thread that drives it and fills its output buffers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::output::capture::Capture;
use crate::output::ring::HeadTail;
use crate::process::spawn::Spawned;
use crate::runner::{self, Limits, Outcome, Stop, Stream};
use crate::shared_job::{Spool, SPOOL_EVERY};
use crate::slots::Slot;

const RUNNING: u8 = 0;
const KILL: u8 = 1;
const SHUTDOWN: u8 = 2;

/// What a job printed and how it ended, guarded by the job's lock.
#[derive(Debug)]
pub struct JobState {
    /// Unread stdout.
    pub stdout: Capture,
    /// Unread stderr.
    pub stderr: Capture,
    /// Set once the job is over.
    pub outcome: Option<Outcome>,
}

/// One background job.
#[derive(Debug)]
pub struct Job {
    /// Its id (`job-3`).
    pub id: String,
    /// The command it runs.
    pub command: String,
    /// When it started.
    pub started: Instant,
    /// The session that started it (the host's session id): only that
    /// session can read or kill it.
    pub session: String,
    /// For a job the fleet shares (see [`crate::shared_job`]): the
    /// principal that started it, and where its output goes. Such a job is
    /// read through the store, never from `state` directly.
    shared: Option<(String, Mutex<Spool>)>,
    state: Mutex<JobState>,
    stop: AtomicU8,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// A shared job's spool thread (see [`Job::spool`]).
    spool_thread: Mutex<Option<JoinHandle<()>>>,
}

impl Job {
    /// Locks the job's output and outcome.
    pub fn state(&self) -> MutexGuard<'_, JobState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the job is still running.
    pub fn is_running(&self) -> bool {
        self.state().outcome.is_none()
    }

    /// Whether the fleet shares this job.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// A shared job: writes what it holds to the store now, so a read
    /// through the store (on this host) sees it.
    pub fn flush(&self) {
        if let Some((_, spool)) = &self.shared {
            spool
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .flush(self);
        }
    }

    /// Asks the job to end (SIGTERM, then SIGKILL) and waits for it.
    pub fn kill(&self) {
        let _ = self
            .stop
            .compare_exchange(RUNNING, KILL, Ordering::AcqRel, Ordering::Acquire);
        self.join();
    }

    /// A shared job that never started: its status leaves the store.
    fn abandon(&self) {
        if let Some((_, spool)) = &self.shared {
            spool.lock().unwrap_or_else(|p| p.into_inner()).abandon();
        }
    }

    /// Waits for the job's thread, then for its spool thread (which writes
    /// the end once the job's thread set it).
    fn join(&self) {
        for thread in [&self.thread, &self.spool_thread] {
            let handle = thread.lock().ok().and_then(|mut h| h.take());
            if let Some(handle) = handle {
                let _ = handle.join();
            }
        }
    }

    /// A shared job's spool thread: every [`SPOOL_EVERY`] it writes new
    /// output and looks for a kill; once the job ended (it is woken then),
    /// it writes the rest and the end, and returns.
    fn spool(&self) {
        let Some((_, spool)) = &self.shared else { return };
        let lock = || spool.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let outcome = self.state().outcome.clone();
            if let Some(outcome) = outcome {
                lock().finish(self, &outcome);
                return;
            }
            if lock().tick(self) {
                let _ = self
                    .stop
                    .compare_exchange(RUNNING, KILL, Ordering::AcqRel, Ordering::Acquire);
            }
            std::thread::park_timeout(SPOOL_EVERY);
        }
    }
}

impl crate::shared_job::Output for Job {
    fn has_output(&self) -> bool {
        let state = self.state();
        !state.stdout.buffer().is_empty() || !state.stderr.buffer().is_empty()
    }

    fn take(&self) -> (HeadTail, HeadTail) {
        let mut state = self.state();
        (state.stdout.take_buffer(), state.stderr.take_buffer())
    }
}

/// The registry of a mount's background jobs.
#[derive(Debug, Default)]
pub struct Jobs {
    map: Mutex<BTreeMap<String, Arc<Job>>>,
    next: AtomicU64,
    closed: AtomicBool,
}

impl Jobs {
    fn map(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Job>>> {
        self.map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts a thread driving `spawned` as a new job of `session` and
    /// returns it; with `shared` (its spool), a job the fleet shares, under
    /// the spool's handle.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &self,
        session: Option<&str>,
        shared: Option<Spool>,
        command: &str,
        spawned: Spawned,
        captures: (Capture, Capture),
        timeout: Option<Duration>,
        limits: Limits,
        slot: Slot,
    ) -> std::io::Result<Arc<Job>> {
        self.forget_spooled();
        let (id, shared) = match shared {
            Some(spool) => (
                spool.handle().to_string(),
                Some((spool.principal().to_string(), Mutex::new(spool))),
            ),
            None => (
                format!("job-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1),
                None,
            ),
        };
        let job = Arc::new(Job {
            id,
            command: command.to_string(),
            started: Instant::now(),
            session: session.unwrap_or_default().to_string(),
            shared,
            state: Mutex::new(JobState {
                stdout: captures.0,
                stderr: captures.1,
                outcome: None,
            }),
            stop: AtomicU8::new(RUNNING),
            thread: Mutex::new(None),
            spool_thread: Mutex::new(None),
        });
        let spooler = match job.shared {
            Some(_) => {
                let spool_job = job.clone();
                let started = std::thread::Builder::new()
                    .name(format!("toolhost-bash-spool-{}", job.id))
                    .spawn(move || spool_job.spool());
                match started {
                    Ok(handle) => Some(handle),
                    Err(e) => {
                        job.abandon();
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        let waker = spooler.as_ref().map(|h| h.thread().clone());
        let runner_job = job.clone();
        let deadline = timeout.map(|t| job.started + t);
        let handle = std::thread::Builder::new()
            .name(format!("toolhost-bash-{}", job.id))
            .spawn(move || {
                let _slot = slot;
                let job = runner_job;
                let mut sink = |stream: Stream, bytes: &[u8]| {
                    let mut state = job.state();
                    match stream {
                        Stream::Stdout => state.stdout.push(bytes),
                        Stream::Stderr => state.stderr.push(bytes),
                    }
                };
                let should_stop = || match job.stop.load(Ordering::Acquire) {
                    KILL => Some(Stop::Killed),
                    SHUTDOWN => Some(Stop::Shutdown),
                    _ => deadline.filter(|d| Instant::now() >= *d).map(|_| Stop::Timeout),
                };
                let outcome = runner::drive(spawned, &mut sink, &should_stop, limits);
                job.state().outcome = Some(outcome);
                if let Some(spooler) = waker {
                    spooler.unpark();
                }
            });
        let handle = match handle {
            Ok(handle) => handle,
            Err(e) => {
                // The spool thread would wait for an end that never comes.
                job.abandon();
                job.state().outcome = Some(Outcome {
                    exit: Some(crate::process::tree::Exit::NotStarted),
                    stopped: None,
                    duration: Duration::ZERO,
                    ended_leftovers: false,
                    notes: Vec::new(),
                });
                if let Some(spooler) = spooler {
                    spooler.thread().unpark();
                    let _ = spooler.join();
                }
                return Err(e);
            }
        };
        if let Ok(mut slot) = job.spool_thread.lock() {
            *slot = spooler;
        }
        if let Ok(mut slot) = job.thread.lock() {
            *slot = Some(handle);
        }
        self.map().insert(job.id.clone(), job.clone());
        if self.closed.load(Ordering::Acquire) {
            // Cleanup ran meanwhile: this job must not outlive it.
            job.stop.store(SHUTDOWN, Ordering::Release);
            job.join();
        }
        Ok(job)
    }

    /// The job with this id, if `session` started it (another session's
    /// job is as unknown as a job that never was). Never a shared job.
    pub fn get(&self, session: Option<&str>, id: &str) -> Option<Arc<Job>> {
        let session = session.unwrap_or_default();
        self.map()
            .get(id)
            .filter(|job| job.session == session && !job.is_shared())
            .cloned()
    }

    /// The shared job under `handle` running here, if `principal` started
    /// it.
    pub fn get_shared(&self, principal: Option<&str>, handle: &str) -> Option<Arc<Job>> {
        let principal = principal?;
        self.map()
            .get(handle)
            .filter(|job| job.shared.as_ref().is_some_and(|(p, _)| p == principal))
            .cloned()
    }

    /// Forgets shared jobs that ended: their end is in the store, and that
    /// is where they are read.
    fn forget_spooled(&self) {
        self.map().retain(|_, job| !job.is_shared() || job.is_running());
    }

    /// `id (state): command` of `session`'s jobs, for messages to it.
    pub fn describe_for(&self, session: Option<&str>) -> Vec<String> {
        let session = session.unwrap_or_default();
        self.map()
            .values()
            .filter(|j| j.session == session && !j.is_shared())
            .map(|j| {
                let state = if j.is_running() { "running" } else { "finished" };
                format!("{} ({state}): {}", j.id, crate::policy::parse::short(&j.command))
            })
            .collect()
    }

    /// Every job `session` started, running or not.
    pub fn of_session(&self, session: &str) -> Vec<Arc<Job>> {
        self.map()
            .values()
            .filter(|j| j.session == session && !j.is_shared())
            .cloned()
            .collect()
    }

    /// Forgets a job (after its end was reported).
    pub fn remove(&self, id: &str) {
        self.map().remove(id);
    }

    /// `id: command` of every job, for messages.
    pub fn describe(&self) -> Vec<String> {
        self.map()
            .values()
            .map(|j| {
                let state = if j.is_running() { "running" } else { "finished" };
                format!("{} ({state}): {}", j.id, crate::policy::parse::short(&j.command))
            })
            .collect()
    }

    /// Ends every job and waits for them: the module's cleanup.
    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        let jobs: Vec<Arc<Job>> = std::mem::take(&mut *self.map()).into_values().collect();
        for job in &jobs {
            let _ = job
                .stop
                .compare_exchange(RUNNING, SHUTDOWN, Ordering::AcqRel, Ordering::Acquire);
        }
        for job in &jobs {
            job.join();
        }
    }
}
