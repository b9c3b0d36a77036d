//! The one-job slot between callers and at most one *hot* thread: a thread
//! that has just finished a job and spins briefly for the next one, so that
//! a burst of calls does not pay a thread wake-up each (see the host's
//! `pipeline::handoff` for when a thread stays hot and for how long).
//!
//! What must hold, whatever the interleaving (checked with loom in
//! `tests/loom.rs`): at most one thread is hot; a job [`HotSlot::offer`]
//! accepts is taken by the hot thread exactly once; a job it refuses comes
//! back to the caller (who runs it elsewhere), so no job is ever lost or run
//! twice, including when the hot thread gives up at the same moment.

use std::sync::atomic::Ordering;

use crate::prim::{lock, spin, AtomicU8, Mutex};

const COLD: u8 = 0; // no thread is hot
const HOT: u8 = 1; // one thread spins, waiting for a job
const HANDING: u8 = 2; // a caller is putting a job in the slot
const HANDED: u8 = 3; // the slot holds a job for the hot thread

/// How many spins between two looks at the hot thread's clock (reading the
/// clock costs more than a spin); every spin under loom, where a spin is a
/// yield and the clock is the model's choice.
#[cfg(not(loom))]
const CLOCK_EVERY: u32 = 64;
#[cfg(loom)]
const CLOCK_EVERY: u32 = 1;

/// The slot; one per hand-off.
pub struct HotSlot<J> {
    state: AtomicU8,
    slot: Mutex<Option<J>>,
}

impl<J> Default for HotSlot<J> {
    fn default() -> Self {
        HotSlot {
            state: AtomicU8::new(COLD),
            slot: Mutex::new(None),
        }
    }
}

impl<J> HotSlot<J> {
    /// Gives `job` to the hot thread, if there is one; else hands it back.
    pub fn offer(&self, job: J) -> Result<(), J> {
        if self
            .state
            .compare_exchange(HOT, HANDING, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Err(job);
        }
        *lock(&self.slot) = Some(job);
        self.state.store(HANDED, Ordering::Release);
        Ok(())
    }

    /// Makes the calling thread the hot one; `false` when another thread
    /// is hot already (or a job is being handed to it).
    pub fn become_hot(&self) -> bool {
        self.state
            .compare_exchange(COLD, HOT, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// For the hot thread: spins until a job is handed over (returned) or,
    /// once `expired` says so, until it can go cold with no job on its way
    /// (`None`). A job already being handed is always waited for.
    pub fn wait(&self, mut expired: impl FnMut() -> bool) -> Option<J> {
        let mut spins = 0u32;
        loop {
            match self.state.load(Ordering::Acquire) {
                HANDED => {
                    let job = lock(&self.slot).take();
                    self.state.store(COLD, Ordering::Release);
                    return job;
                }
                HOT => {
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(CLOCK_EVERY)
                        && expired()
                        && self
                            .state
                            .compare_exchange(HOT, COLD, Ordering::AcqRel, Ordering::Relaxed)
                            .is_ok()
                    {
                        return None;
                    }
                }
                _ => {} // HANDING: the job is on its way
            }
            spin();
        }
    }

    /// Whether no thread is hot and no job is on its way (for tests).
    pub fn is_cold(&self) -> bool {
        self.state.load(Ordering::Acquire) == COLD
    }
}
