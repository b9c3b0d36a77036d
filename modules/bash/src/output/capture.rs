//! One output stream of a command: a bounded [`HeadTail`] in memory.
//!
//! There is no spill file: a file deleted when its call ends would serve
//! nobody, and one kept would leave up to its cap of disk per
//! call. A command whose whole output matters writes it to a file in the
//! working folder itself (`cmd > out.log`), where it stays the agent's.

use super::ring::HeadTail;

/// A captured stream.
#[derive(Debug)]
pub struct Capture {
    buf: HeadTail,
}

impl Capture {
    /// A capture keeping about `cap` bytes (head and tail) in memory.
    pub fn new(cap: usize) -> Self {
        Capture {
            buf: HeadTail::new(cap),
        }
    }

    /// Appends a chunk read from the pipe.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.push(bytes);
    }

    /// The in-memory buffer.
    pub fn buffer(&self) -> &HeadTail {
        &self.buf
    }

    /// Takes the buffer for an incremental read, leaving an empty one.
    pub fn take_buffer(&mut self) -> HeadTail {
        self.buf.take()
    }
}
