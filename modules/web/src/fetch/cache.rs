//! A small in-memory cache of fetched documents, so paging through a page
//! does not download it again. Entries expire after a TTL; the oldest entry
//! goes when the cache is full.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A TTL cache keyed by string.
pub struct TtlCache<V> {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<String, (Instant, Arc<V>)>>,
}

impl<V> TtlCache<V> {
    /// A cache; a zero TTL or capacity disables it.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        TtlCache {
            ttl,
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The live entry for `key`.
    pub fn get(&self, key: &str) -> Option<Arc<V>> {
        let mut entries = self.entries.lock().ok()?;
        match entries.get(key) {
            Some((at, value)) if at.elapsed() < self.ttl => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Stores `value` under `key`.
    pub fn put(&self, key: String, value: Arc<V>) {
        if self.ttl.is_zero() || self.capacity == 0 {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let ttl = self.ttl;
        entries.retain(|_, (at, _)| at.elapsed() < ttl);
        while entries.len() >= self.capacity {
            let oldest = entries
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => entries.remove(&k),
                None => break,
            };
        }
        entries.insert(key, (Instant::now(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_capacity_holds() {
        let cache = TtlCache::new(Duration::from_millis(50), 2);
        cache.put("a".into(), Arc::new(1));
        cache.put("b".into(), Arc::new(2));
        cache.put("c".into(), Arc::new(3));
        assert!(cache.get("a").is_none(), "the oldest went");
        assert_eq!(cache.get("c").as_deref(), Some(&3));
        std::thread::sleep(Duration::from_millis(60));
        assert!(cache.get("c").is_none(), "expired");
    }

    #[test]
    fn zero_ttl_disables() {
        let cache = TtlCache::new(Duration::ZERO, 10);
        cache.put("a".into(), Arc::new(1));
        assert!(cache.get("a").is_none());
    }
}
