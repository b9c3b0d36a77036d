//! Background jobs: started by `bash` with `run_in_background`, read with
//! `bash_output`, ended by `bash_kill`, by their timeout, or at cleanup.
//! Each job has a thread that drives it and fills its output buffers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::output::capture::Capture;
use crate::process::spawn::Spawned;
use crate::runner::{self, Limits, Outcome, Stop, Stream};
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
    state: Mutex<JobState>,
    stop: AtomicU8,
    thread: Mutex<Option<JoinHandle<()>>>,
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

    /// Asks the job to end (SIGTERM, then SIGKILL) and waits for it.
    pub fn kill(&self) {
        let _ = self
            .stop
            .compare_exchange(RUNNING, KILL, Ordering::AcqRel, Ordering::Acquire);
        self.join();
    }

    fn join(&self) {
        let handle = self.thread.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            let _ = handle.join();
        }
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
    /// returns it.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &self,
        session: Option<&str>,
        command: &str,
        spawned: Spawned,
        captures: (Capture, Capture),
        timeout: Option<Duration>,
        limits: Limits,
        slot: Slot,
    ) -> std::io::Result<Arc<Job>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let job = Arc::new(Job {
            id: format!("job-{n}"),
            command: command.to_string(),
            started: Instant::now(),
            session: session.unwrap_or_default().to_string(),
            state: Mutex::new(JobState {
                stdout: captures.0,
                stderr: captures.1,
                outcome: None,
            }),
            stop: AtomicU8::new(RUNNING),
            thread: Mutex::new(None),
        });
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
            })?;
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
    /// job is as unknown as a job that never was).
    pub fn get(&self, session: Option<&str>, id: &str) -> Option<Arc<Job>> {
        let session = session.unwrap_or_default();
        self.map().get(id).filter(|job| job.session == session).cloned()
    }

    /// `id (state): command` of `session`'s jobs, for messages to it.
    pub fn describe_for(&self, session: Option<&str>) -> Vec<String> {
        let session = session.unwrap_or_default();
        self.map()
            .values()
            .filter(|j| j.session == session)
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
            .filter(|j| j.session == session)
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
