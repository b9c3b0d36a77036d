//! Gives back the pages of code that only ran at start-up.
//!
//! Most of a stdio server's resident memory is not data but code: the
//! pages of the host binary (and of libraries and modules) touched while
//! parsing the plan, loading and checking modules and opening stores, plus
//! the neighbours the kernel maps around each fault. Serving calls needs
//! far fewer. Once the session is up, every private, read-only, file-backed
//! mapping that holds no private (copied-on-write) page is dropped from
//! this process with `MADV_DONTNEED`: its pages stay in the page cache, and
//! the code a later call does need comes back as a minor fault. Mappings
//! that hold private pages (relocated data, `.data.rel.ro`) are left alone:
//! dropping those would lose their contents. It is done again once, after
//! the first direct calls, for the code that ran once for them.

use std::io;

/// Releases start-up pages, logging the outcome (for the session's
/// milestones: the handshake, and the first calls).
pub fn release_once_warm() {
    match release_startup_pages() {
        Ok(bytes) => tracing::debug!(kib = bytes / 1024, "released code pages used once"),
        Err(e) => tracing::debug!("cannot release code pages used once: {e}"),
    }
}

/// Drops this process's pages of read-only file mappings that hold no
/// private page; returns how many bytes were resident in them.
pub fn release_startup_pages() -> io::Result<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut released = 0;
    for mapping in mappings(&smaps) {
        if !mapping.droppable() {
            continue;
        }
        // SAFETY: the range is one whole mapping of this process, read-only
        // (no write permission, so nothing in it can become private), file
        // backed and private with no anonymous (copied) page: dropping its
        // pages loses nothing, as the next access reads the same bytes from
        // the file. No Rust reference is invalidated: the memory stays
        // mapped, only its physical pages go.
        let dropped = unsafe {
            libc::madvise(
                mapping.start as *mut libc::c_void,
                mapping.len(),
                libc::MADV_DONTNEED,
            )
        };
        if dropped == 0 {
            released += mapping.rss_kib * 1024;
        }
    }
    Ok(released)
}

/// One mapping as `/proc/self/smaps` describes it.
#[derive(Debug, Default, PartialEq)]
struct Mapping {
    start: usize,
    end: usize,
    perms: String,
    inode: u64,
    rss_kib: u64,
    anonymous_kib: u64,
}

impl Mapping {
    fn len(&self) -> usize {
        self.end - self.start
    }

    /// Private, not writable, file-backed, resident, and without one
    /// anonymous page.
    fn droppable(&self) -> bool {
        let perms = self.perms.as_bytes();
        perms.len() == 4
            && perms[1] != b'w'
            && perms[3] == b'p'
            && self.inode != 0
            && self.rss_kib > 0
            && self.anonymous_kib == 0
    }
}

/// The mappings in the text of `/proc/self/smaps`; a mapping whose fields
/// cannot be read is skipped.
fn mappings(smaps: &str) -> Vec<Mapping> {
    let mut found = Vec::new();
    let mut current: Option<Mapping> = None;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some(field) = first.strip_suffix(':') {
            let Some(mapping) = current.as_mut() else { continue };
            let value = fields.next().and_then(|v| v.parse().ok());
            match (field, value) {
                ("Rss", Some(kib)) => mapping.rss_kib = kib,
                ("Anonymous", Some(kib)) => mapping.anonymous_kib = kib,
                // Unreadable: treat as holding private pages.
                ("Anonymous", None) => mapping.anonymous_kib = u64::MAX,
                _ => {}
            }
            continue;
        }
        found.extend(current.take());
        let Some((start, end)) = first.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
            continue;
        };
        let perms = fields.next().unwrap_or_default().to_string();
        let inode = fields.nth(2).and_then(|v| v.parse().ok()).unwrap_or(0);
        current = Some(Mapping {
            start,
            end,
            perms,
            inode,
            // Unknown until its fields are read: not droppable before.
            anonymous_kib: u64::MAX,
            ..Mapping::default()
        });
    }
    found.extend(current);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
5630aa866000-5630aaea0000 r--p 00000000 fd:01 1234 /usr/bin/toolhost
Rss:                1832 kB
Anonymous:             0 kB
5630ac0b7000-5630ac168000 r--p 01850000 fd:01 1234 /usr/bin/toolhost
Rss:                 708 kB
Anonymous:           708 kB
5630ac168000-5630ac170000 rw-p 01901000 fd:01 1234 /usr/bin/toolhost
Rss:                  32 kB
Anonymous:            32 kB
7ffd1000-7ffd3000 r-xp 00000000 00:00 0 [vdso]
Rss:                   8 kB
Anonymous:             0 kB
7f000000-7f001000 r-xp 00000000 fd:01 99 /lib/libc.so.6
Rss:                   4 kB
";

    #[test]
    fn only_clean_read_only_file_mappings_are_dropped() {
        let all = mappings(SMAPS);
        assert_eq!(all.len(), 5);
        let droppable: Vec<_> = all.iter().filter(|m| m.droppable()).map(|m| m.start).collect();
        // The relocated read-only data (private pages), the writable data,
        // the vdso and a mapping whose Anonymous line is missing stay.
        assert_eq!(droppable, vec![0x5630aa866000]);
    }

    fn resident_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    #[test]
    fn releasing_shrinks_the_resident_set_and_keeps_the_process_working() {
        let before = mappings(SMAPS);
        let resident = resident_kib();
        let released = release_startup_pages().expect("smaps");
        assert!(released > 0, "a test binary has clean code pages resident");
        assert!(resident_kib() < resident, "the resident set shrinks");
        // Code, read-only data and relocated data still work afterwards.
        assert_eq!(mappings(SMAPS), before);
    }
}
