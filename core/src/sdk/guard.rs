//! The panic guard around every entry point a module exposes.
//!
//! A panic that unwinds into an `extern "C"` function or a sabi_trait
//! trampoline aborts the whole host, so the SDK catches it here, once, for
//! every author.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A panic caught at an entry point, as its (bounded) message. Crate
/// private: every caller words its own sentence around it ("tool 'x'
/// panicked: …", "mount panicked: …"), so it only needs to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Panicked(pub(crate) String);

impl std::fmt::Display for Panicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Panicked {}

/// Runs `f`, turning a panic into its message.
pub(crate) fn guard<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let message = panic_message(payload.as_ref());
        // Dropping a payload can itself panic (a payload whose Drop panics);
        // forget it rather than risk unwinding out of the guard.
        std::mem::forget(payload);
        Panicked(message)
    })
}

/// Longest panic message kept: a panic that quotes a huge input must not
/// turn into a huge result or log line.
const MAX_MESSAGE: usize = 500;

/// The text of a panic payload (`&str` or `String`), or a placeholder,
/// cut to a readable length. The host uses it too, for panics on its own
/// threads, so both sides word a panic the same way.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "a panic with a non-text payload"
    };
    if text.len() <= MAX_MESSAGE {
        return text.to_string();
    }
    let mut cut = MAX_MESSAGE;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..cut], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catches_str_and_string_panics() {
        assert_eq!(guard(|| 5), Ok(5));
        assert_eq!(guard(|| -> i32 { panic!("boom") }), Err(Panicked("boom".into())));
        let n = 3;
        assert_eq!(
            guard(|| -> i32 { panic!("boom {n}") }),
            Err(Panicked("boom 3".into()))
        );
    }
}
