//! Access tokens already verified, so a client that sends the same token on
//! every call pays for one signature check, not one per call. An entry is
//! the principal a token was found to be, kept until the token's `exp` (plus
//! the leeway, the same rule the check applies); every entry is forgotten
//! when the issuer's key set changes, so a withdrawn key's tokens are
//! checked again (and refused) as soon as the host has the new set.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// Entries kept at most; at the cap, expired ones go, and if none had
/// expired, all go (a flood of distinct valid tokens costs checks, not
/// memory).
const MAX_ENTRIES: usize = 4096;

/// The cache.
#[derive(Default)]
pub struct Verified {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The key set generation the entries were verified under.
    generation: u64,
    /// SHA-256 of the token → (principal, last second it is valid).
    entries: HashMap<[u8; 32], (String, u64)>,
}

impl Verified {
    /// The cache, emptied first when the key set is no longer `generation`
    /// (a withdrawn key's tokens must be checked again); whether it was.
    fn at(&self, generation: u64) -> (std::sync::MutexGuard<'_, Inner>, bool) {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fresh = inner.generation != generation;
        if fresh {
            inner.entries.clear();
            inner.generation = generation;
        }
        (inner, fresh)
    }

    /// The principal of a token verified before under key set `generation`
    /// and still unexpired at `now` (seconds since the epoch).
    pub fn get(&self, token: &str, generation: u64, now: u64) -> Option<String> {
        let digest = digest(token);
        let (mut inner, fresh) = self.at(generation);
        if fresh {
            return None;
        }
        match inner.entries.get(&digest) {
            Some((principal, until)) if now <= *until => Some(principal.clone()),
            Some(_) => {
                inner.entries.remove(&digest);
                None
            }
            None => None,
        }
    }

    /// Remembers that `token` is `principal`'s until `until`.
    pub fn put(&self, token: &str, generation: u64, principal: &str, until: u64, now: u64) {
        let digest = digest(token);
        let (mut inner, _) = self.at(generation);
        if inner.entries.len() >= MAX_ENTRIES {
            inner.entries.retain(|_, (_, valid)| now <= *valid);
            if inner.entries.len() >= MAX_ENTRIES {
                inner.entries.clear();
            }
        }
        inner.entries.insert(digest, (principal.to_string(), until));
    }

    /// Entries held (tests).
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entries
            .len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_a_new_key_set_forgets_them() {
        let v = Verified::default();
        v.put("t", 1, "alice", 100, 50);
        assert_eq!(v.get("t", 1, 100).as_deref(), Some("alice"));
        assert_eq!(v.get("t", 1, 101), None, "past exp + leeway");
        v.put("t", 1, "alice", 100, 50);
        assert_eq!(v.get("u", 1, 60), None);
        assert_eq!(v.get("t", 2, 60), None, "the key set changed");
        assert!(v.is_empty());
    }

    #[test]
    fn the_cache_is_bounded() {
        let v = Verified::default();
        for i in 0..MAX_ENTRIES + 10 {
            v.put(&i.to_string(), 1, "p", 100, 50);
        }
        assert!(v.len() <= MAX_ENTRIES);
    }
}
