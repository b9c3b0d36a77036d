//! Starting child processes from one long-lived thread.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child ends,
//! not the process. Children are often started from short-lived threads
//! (a blocking thread that restarts a worker, a runtime thread that is
//! retired), so every spawn goes through this one thread, which lives as
//! long as the process.

use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type Job = (Command, mpsc::Sender<std::io::Result<Child>>);

static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();

/// Spawns `command` from the spawner thread.
pub fn spawn(command: Command) -> std::io::Result<Child> {
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("toolhost-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            });
        if let Err(e) = started {
            tracing::error!("cannot start the spawner thread: {e}");
        }
        Mutex::new(tx)
    });
    let (reply, answer) = mpsc::channel();
    sender
        .lock()
        .map_err(|_| std::io::Error::other("the spawner's lock is poisoned"))?
        .send((command, reply))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}
