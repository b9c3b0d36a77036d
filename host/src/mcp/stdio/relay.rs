//! The bytes of stdin that rmcp handles (everything but direct calls),
//! relayed from the reader threads to rmcp's transport as an `AsyncRead`.
//! rmcp frames and parses them exactly as it would read stdin itself.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc::{channel, Receiver, Sender};

/// Where the readers put rmcp's bytes; dropping every sender ends rmcp's
/// input.
pub type RelaySender = Sender<Vec<u8>>;

/// Chunks (lines, mostly) waiting for rmcp: beyond that, the reader waits,
/// and stdin with it, as if rmcp read stdin itself.
const QUEUE: usize = 256;

/// rmcp's input.
pub struct Relay {
    rx: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Relay {
    /// A relay and the sender that feeds it.
    pub fn new() -> (RelaySender, Relay) {
        let (tx, rx) = channel(QUEUE);
        let relay = Relay {
            rx,
            chunk: Vec::new(),
            at: 0,
        };
        (tx, relay)
    }
}

impl AsyncRead for Relay {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        while self.at == self.chunk.len() {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(chunk)) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                // Every sender is gone: end of input.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = buf.remaining().min(self.chunk.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.chunk[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn relays_bytes_in_order_then_ends() {
        let (tx, mut relay) = Relay::new();
        for chunk in [&b"{\"a\":1}\n"[..], b"", b"{\"b\"", b":2}\n"] {
            // An empty chunk is skipped, not taken for the end.
            tx.send(chunk.to_vec()).await.expect("send");
        }
        drop(tx);
        let mut all = String::new();
        relay.read_to_string(&mut all).await.expect("read");
        assert_eq!(all, "{\"a\":1}\n{\"b\":2}\n");
    }
}
