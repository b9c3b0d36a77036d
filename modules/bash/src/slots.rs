//! `max_concurrent`: a counter of running commands, foreground and
//! background, with a guard that frees its slot when dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The shared counter.
#[derive(Debug)]
pub struct Slots {
    used: AtomicUsize,
    max: usize,
}

/// One running command's slot; freed on drop.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
}

impl Slots {
    /// Room for `max` commands at once.
    pub fn new(max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            used: AtomicUsize::new(0),
            max,
        })
    }

    /// Takes a slot, or `None` when all are in use.
    pub fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot { slots: self.clone() })
    }

    /// Commands running now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.used.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_and_frees() {
        let s = Slots::new(2);
        let a = s.try_acquire().expect("first");
        let _b = s.try_acquire().expect("second");
        assert!(s.try_acquire().is_none());
        drop(a);
        assert!(s.try_acquire().is_some());
    }
}
