//! Captures the host-side log lines (module logs arrive through the
//! coordinator and context callbacks into `tracing`), so checks can see
//! what a module reported, such as a panicking cleanup.

use std::io::Write;
use std::sync::Mutex;

static CAPTURED: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Keeps every formatted log line in memory.
struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut captured) = CAPTURED.lock() {
            captured.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the capturing subscriber (info and above).
pub fn install() {
    let _ = tracing_subscriber::fmt()
        .with_writer(|| Capture)
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .without_time()
        .try_init();
}

/// Takes the lines captured so far.
pub fn take() -> String {
    CAPTURED
        .lock()
        .map(|mut c| String::from_utf8_lossy(&std::mem::take(&mut *c)).into_owned())
        .unwrap_or_default()
}
