//! Reading a response body under a byte cap, decompressing as it streams.
//!
//! The cap bounds the *decompressed* bytes: a gzip bomb stops at the cap
//! like any other large body, and the download stops there too (the rest is
//! never read). Compressed bytes read are bounded by the same cap.

use std::io::Write;

use flate2::write::{GzDecoder, ZlibDecoder};

/// Why a body stopped short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// The decompressed body passed the cap.
    Decoded,
    /// The bytes on the wire passed the cap.
    Wire,
}

/// A body read so far, and whether it was cut.
#[derive(Debug)]
pub struct Body {
    /// Decompressed bytes, at most the cap.
    pub bytes: Vec<u8>,
    /// Bytes read from the network.
    pub wire_bytes: usize,
    /// Set when the cap stopped the read.
    pub cut: Option<Cut>,
}

/// A writer that keeps at most `cap` bytes and then refuses more.
struct Capped {
    buf: Vec<u8>,
    cap: usize,
    full: bool,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = self.cap - self.buf.len();
        if data.len() > room {
            self.buf.extend_from_slice(&data[..room]);
            self.full = true;
            return Err(std::io::Error::other("byte cap reached"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum Sink {
    Identity(Capped),
    Gzip(GzDecoder<Capped>),
    Zlib(ZlibDecoder<Capped>),
}

/// Why a body could not be decoded; web_fetch answers each with the code
/// `bad_encoding`.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// A `Content-Encoding` the module does not decode (it advertises only
    /// gzip and deflate).
    #[error("the server sent an unsupported Content-Encoding: {0}")]
    Unsupported(String),
    /// The decoder refused a chunk.
    #[error("the response body could not be decoded: {0}")]
    Chunk(std::io::Error),
    /// The compressed stream ended corrupt (`gzip` or `deflate`).
    #[error("the {format} body is corrupt: {error}")]
    Corrupt {
        /// `gzip` or `deflate`.
        format: &'static str,
        /// What the decoder said.
        error: std::io::Error,
    },
}

/// Feeds body chunks in and collects the decoded bytes under the cap.
pub struct Decoder {
    sink: Sink,
    wire_bytes: usize,
    cap: usize,
    cut: Option<Cut>,
}

impl Decoder {
    /// A decoder for a `Content-Encoding` value; `Err` names an encoding the
    /// module cannot decode (it only advertises gzip and deflate).
    pub fn new(content_encoding: Option<&str>, cap: usize) -> Result<Decoder, DecodeError> {
        let capped = Capped {
            buf: Vec::with_capacity(cap.min(64 * 1024)),
            cap,
            full: false,
        };
        let encoding = content_encoding.unwrap_or("").trim().to_ascii_lowercase();
        let sink = match encoding.as_str() {
            "" | "identity" => Sink::Identity(capped),
            "gzip" | "x-gzip" => Sink::Gzip(GzDecoder::new(capped)),
            "deflate" => Sink::Zlib(ZlibDecoder::new(capped)),
            other => return Err(DecodeError::Unsupported(other.to_string())),
        };
        Ok(Decoder {
            sink,
            wire_bytes: 0,
            cap,
            cut: None,
        })
    }

    /// Feeds one chunk; returns false once the cap is reached (stop reading).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<bool, DecodeError> {
        if self.cut.is_some() {
            return Ok(false);
        }
        self.wire_bytes += chunk.len();
        let written = match &mut self.sink {
            Sink::Identity(w) => w.write_all(chunk),
            Sink::Gzip(w) => w.write_all(chunk),
            Sink::Zlib(w) => w.write_all(chunk),
        };
        if self.capped().full {
            self.cut = Some(Cut::Decoded);
            return Ok(false);
        }
        written.map_err(DecodeError::Chunk)?;
        if self.wire_bytes > self.cap {
            self.cut = Some(Cut::Wire);
            return Ok(false);
        }
        Ok(true)
    }

    fn capped(&self) -> &Capped {
        match &self.sink {
            Sink::Identity(w) => w,
            Sink::Gzip(w) => w.get_ref(),
            Sink::Zlib(w) => w.get_ref(),
        }
    }

    /// Ends the body. A cut compressed stream keeps what decoded so far.
    pub fn finish(self) -> Result<Body, DecodeError> {
        let (wire_bytes, mut cut) = (self.wire_bytes, self.cut);
        let mut capped = match self.sink {
            Sink::Identity(w) => w,
            Sink::Gzip(mut w) => {
                if cut.is_none() {
                    let finished = w.try_finish();
                    if !w.get_ref().full {
                        finished.map_err(|error| DecodeError::Corrupt {
                            format: "gzip",
                            error,
                        })?;
                    }
                }
                take(w.get_mut())
            }
            Sink::Zlib(mut w) => {
                if cut.is_none() {
                    let finished = w.try_finish();
                    if !w.get_ref().full {
                        finished.map_err(|error| DecodeError::Corrupt {
                            format: "deflate",
                            error,
                        })?;
                    }
                }
                take(w.get_mut())
            }
        };
        if capped.full && cut.is_none() {
            cut = Some(Cut::Decoded);
        }
        Ok(Body {
            bytes: std::mem::take(&mut capped.buf),
            wire_bytes,
            cut,
        })
    }
}

/// Moves the collected bytes out of a decoder's writer.
fn take(w: &mut Capped) -> Capped {
    Capped {
        buf: std::mem::take(&mut w.buf),
        cap: w.cap,
        full: w.full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn identity_body_under_cap_is_whole() {
        let mut d = Decoder::new(None, 100).unwrap();
        assert!(d.feed(b"hello ").unwrap());
        assert!(d.feed(b"world").unwrap());
        let body = d.finish().unwrap();
        assert_eq!(body.bytes, b"hello world");
        assert_eq!(body.cut, None);
    }

    #[test]
    fn identity_body_over_cap_is_cut_at_cap() {
        let mut d = Decoder::new(Some("identity"), 10).unwrap();
        assert!(!d.feed(&[b'x'; 25]).unwrap());
        let body = d.finish().unwrap();
        assert_eq!(body.bytes.len(), 10);
        assert_eq!(body.cut, Some(Cut::Decoded));
    }

    #[test]
    fn gzip_round_trips() {
        let data = b"some text that compresses, some text that compresses".repeat(20);
        let mut d = Decoder::new(Some("gzip"), 1 << 20).unwrap();
        for chunk in gzip(&data).chunks(7) {
            assert!(d.feed(chunk).unwrap());
        }
        let body = d.finish().unwrap();
        assert_eq!(body.bytes, data);
        assert_eq!(body.cut, None);
    }

    #[test]
    fn gzip_bomb_stops_at_the_cap() {
        // 64 MiB of zeros compress to about 64 KiB.
        let bomb = gzip(&vec![0u8; 64 << 20]);
        assert!(bomb.len() < 1 << 20);
        let cap = 1 << 20;
        let mut d = Decoder::new(Some("gzip"), cap).unwrap();
        let mut fed = 0;
        for chunk in bomb.chunks(16 * 1024) {
            fed += chunk.len();
            if !d.feed(chunk).unwrap() {
                break;
            }
        }
        let body = d.finish().unwrap();
        assert_eq!(body.bytes.len(), cap);
        assert_eq!(body.cut, Some(Cut::Decoded));
        assert!(fed < bomb.len(), "reading stopped early: {fed} of {}", bomb.len());
    }

    #[test]
    fn unknown_encoding_is_named() {
        let err = Decoder::new(Some("br"), 10).err().unwrap();
        assert!(
            matches!(&err, DecodeError::Unsupported(name) if name == "br"),
            "{err}"
        );
        assert!(err.to_string().contains("br"));
    }

    #[test]
    fn corrupt_gzip_is_reported() {
        let mut d = Decoder::new(Some("gzip"), 1000).unwrap();
        let fed = d.feed(b"\x1f\x8b\x08\x00garbage-garbage-garbage");
        let outcome = fed.and_then(|_| d.finish().map(|_| ()));
        assert!(outcome.is_err());
    }
}
