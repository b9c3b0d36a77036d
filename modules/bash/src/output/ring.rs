//! A head-and-tail byte buffer: keeps the first and the last bytes of a
//! stream under a fixed memory cap, counting what falls in between.

use std::collections::VecDeque;

/// Keeps up to `head_cap` leading and `tail_cap` trailing bytes of a stream.
///
/// Memory never exceeds the two caps, however much is pushed: a command that
/// prints forever costs the host a constant amount.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl HeadTail {
    /// A buffer keeping at most `cap` bytes: half head, half tail.
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        HeadTail {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    /// Appends bytes, dropping the oldest tail bytes past the cap.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = bytes.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() || self.tail_cap == 0 {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// Bytes pushed so far, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes currently kept.
    pub fn kept(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Bytes dropped between head and tail.
    pub fn dropped(&self) -> u64 {
        self.total - self.kept() as u64
    }

    /// Whether nothing has been pushed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Whether the next `n` bytes would drop something.
    pub fn would_drop(&self, n: usize) -> bool {
        self.kept() + n > self.head_cap + self.tail_cap
    }

    /// The kept bytes in order, head first (no marker between them).
    pub fn contiguous(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.kept());
        out.extend_from_slice(&self.head);
        out.extend(self.tail.iter());
        out
    }

    /// Empties the buffer, returning it as it was (for incremental reads).
    pub fn take(&mut self) -> HeadTail {
        let empty = HeadTail {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap: self.head_cap,
            tail_cap: self.tail_cap,
            total: 0,
        };
        std::mem::replace(self, empty)
    }

    /// Renders the kept text, at most `budget` bytes of it, with a line
    /// saying how much was cut in the middle. Invalid UTF-8 is replaced.
    pub fn render(&self, budget: usize) -> Rendered {
        let mut head: &[u8] = &self.head;
        let tail_vec: Vec<u8> = self.tail.iter().copied().collect();
        let mut tail: &[u8] = &tail_vec;
        if head.len() + tail.len() > budget {
            let head_budget = (budget / 2).min(head.len());
            let tail_budget = (budget - head_budget).min(tail.len());
            head = &head[..head_budget];
            tail = &tail[tail.len() - tail_budget..];
        }
        let cut = self.total - (head.len() + tail.len()) as u64;
        if cut == 0 {
            let (text, lossy) = decode(&self.contiguous());
            return Rendered { text, cut: 0, lossy };
        }
        let head = trim_head(head);
        let tail = trim_tail(tail);
        let cut = self.total - (head.len() + tail.len()) as u64;
        let (h, lossy_h) = decode(head);
        let (t, lossy_t) = decode(tail);
        let text = format!(
            "{h}\n\n[… {cut} bytes cut; showing the first {} and last {} bytes …]\n\n{t}",
            head.len(),
            tail.len()
        );
        Rendered {
            text,
            cut,
            lossy: lossy_h || lossy_t,
        }
    }
}

/// Kept text ready for a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The text (head, a cut marker, tail).
    pub text: String,
    /// Bytes left out.
    pub cut: u64,
    /// Whether invalid UTF-8 was replaced with U+FFFD.
    pub lossy: bool,
}

fn decode(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), false),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), true),
    }
}

/// Drops a UTF-8 sequence cut short at the end of the head.
fn trim_head(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    // Walk back over at most 3 continuation bytes to the lead byte.
    for back in 1..=4.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => return bytes,
            };
            if need > back {
                end = bytes.len() - back;
            }
            break;
        }
    }
    &bytes[..end]
}

/// Drops continuation bytes at the start of the tail.
fn trim_tail(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take(3).take_while(|b| **b & 0xC0 == 0x80).count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_under_the_cap() {
        let mut b = HeadTail::new(100);
        b.push(b"hello ");
        b.push(b"world");
        assert_eq!(b.contiguous(), b"hello world");
        assert_eq!(b.dropped(), 0);
        let r = b.render(100);
        assert_eq!(r.text, "hello world");
        assert_eq!(r.cut, 0);
    }

    #[test]
    fn keeps_head_and_tail_of_a_flood() {
        let mut b = HeadTail::new(20);
        b.push(b"0123456789");
        for _ in 0..1000 {
            b.push(b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        }
        b.push(b"abcdefghij");
        assert_eq!(b.kept(), 20);
        assert_eq!(b.total(), 30_020);
        assert_eq!(b.contiguous(), b"0123456789abcdefghij");
        let r = b.render(20);
        assert!(r.text.starts_with("0123456789"));
        assert!(r.text.ends_with("abcdefghij"));
        assert!(r.text.contains("30000 bytes cut"), "{}", r.text);
    }

    #[test]
    fn one_big_push_keeps_its_end() {
        let mut b = HeadTail::new(4);
        b.push(b"abcdefgh");
        assert_eq!(b.contiguous(), b"abgh");
    }

    #[test]
    fn render_respects_a_smaller_budget() {
        let mut b = HeadTail::new(100);
        b.push(&[b'a'; 50]);
        b.push(&[b'z'; 50]);
        let r = b.render(10);
        assert_eq!(r.cut, 90);
        assert!(r.text.starts_with("aaaaa\n"));
        assert!(r.text.ends_with("\nzzzzz"));
    }

    #[test]
    fn cuts_do_not_split_characters() {
        let mut b = HeadTail::new(8);
        b.push("ééééééééééé".as_bytes());
        let r = b.render(7);
        assert!(!r.lossy, "{:?}", r.text);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_flagged() {
        let mut b = HeadTail::new(100);
        b.push(b"ok \xff\xfe end");
        let r = b.render(100);
        assert!(r.lossy);
        assert_eq!(r.text, "ok \u{fffd}\u{fffd} end");
    }

    #[test]
    fn take_resets() {
        let mut b = HeadTail::new(10);
        b.push(b"abc");
        let old = b.take();
        assert_eq!(old.contiguous(), b"abc");
        assert!(b.is_empty());
    }
}
