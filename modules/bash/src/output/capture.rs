//! One output stream of a command: a bounded [`HeadTail`] in memory plus an
//! optional spill file that receives the whole stream once it overflows.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use super::ring::HeadTail;

/// Where and how much to spill.
#[derive(Debug, Clone)]
pub struct SpillTo {
    /// The file to create when the stream first overflows.
    pub path: PathBuf,
    /// Stop writing past this many bytes (the disk is finite too).
    pub max_bytes: u64,
}

/// A captured stream.
#[derive(Debug)]
pub struct Capture {
    buf: HeadTail,
    spill: Option<SpillTo>,
    file: Option<File>,
    spilled: u64,
    spill_error: Option<String>,
}

impl Capture {
    /// A capture keeping `cap` bytes in memory, spilling to `spill` if set.
    pub fn new(cap: usize, spill: Option<SpillTo>) -> Self {
        Capture {
            buf: HeadTail::new(cap),
            spill,
            file: None,
            spilled: 0,
            spill_error: None,
        }
    }

    /// Appends a chunk read from the pipe.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.file.is_none()
            && self.spill.is_some()
            && self.spill_error.is_none()
            && self.buf.would_drop(bytes.len())
        {
            self.open_spill();
        }
        if self.file.is_some() {
            self.write_spill(bytes);
        }
        self.buf.push(bytes);
    }

    fn open_spill(&mut self) {
        let Some(spill) = &self.spill else { return };
        let opened = spill
            .path
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|_| File::create(&spill.path));
        match opened {
            Ok(file) => {
                self.file = Some(file);
                // Nothing has been dropped yet: the buffer holds it all.
                let sofar = self.buf.contiguous();
                self.write_spill(&sofar);
            }
            Err(e) => self.spill_error = Some(format!("cannot create {}: {e}", spill.path.display())),
        }
    }

    fn write_spill(&mut self, bytes: &[u8]) {
        let (Some(file), Some(spill)) = (self.file.as_mut(), self.spill.as_ref()) else {
            return;
        };
        let room = spill.max_bytes.saturating_sub(self.spilled);
        let n = (bytes.len() as u64).min(room) as usize;
        if n == 0 {
            return;
        }
        match file.write_all(&bytes[..n]) {
            Ok(()) => self.spilled += n as u64,
            Err(e) => {
                self.spill_error = Some(format!("writing {}: {e}", spill.path.display()));
                self.file = None;
            }
        }
    }

    /// The in-memory buffer.
    pub fn buffer(&self) -> &HeadTail {
        &self.buf
    }

    /// Takes the buffer for an incremental read, leaving an empty one.
    pub fn take_buffer(&mut self) -> HeadTail {
        self.buf.take()
    }

    /// The spill file, if one was written, and whether it is complete.
    pub fn spill_file(&self) -> Option<(PathBuf, bool)> {
        let spill = self.spill.as_ref()?;
        self.file.as_ref()?;
        Some((spill.path.clone(), self.spilled >= self.buf.total()))
    }

    /// Why spilling failed, if it did.
    pub fn spill_error(&self) -> Option<&str> {
        self.spill_error.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spills_the_whole_stream_once_it_overflows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out");
        let mut c = Capture::new(
            10,
            Some(SpillTo {
                path: path.clone(),
                max_bytes: 1 << 20,
            }),
        );
        c.push(b"01234");
        assert!(c.spill_file().is_none(), "no spill before the cap");
        c.push(b"56789abcdef");
        c.push(b"ghij");
        let (file, complete) = c.spill_file().expect("spilled");
        assert!(complete);
        assert_eq!(std::fs::read(file).expect("read"), b"0123456789abcdefghij");
        assert_eq!(c.buffer().contiguous(), b"01234fghij");
    }

    #[test]
    fn spill_stops_at_its_own_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out");
        let mut c = Capture::new(
            4,
            Some(SpillTo {
                path: path.clone(),
                max_bytes: 6,
            }),
        );
        c.push(b"0123456789");
        let (_, complete) = c.spill_file().expect("spilled");
        assert!(!complete);
        assert_eq!(std::fs::read(path).expect("read"), b"012345");
    }
}
