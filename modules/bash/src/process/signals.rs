//! Signal names for results, from `nix`'s `Signal` table (the one the
//! isolation code can share instead of a hand-kept copy).

use nix::sys::signal::Signal;

/// `SIGTERM` for 15 and so on (`Signal::as_str`); `SIG<n>` for numbers
/// with no name (real-time signals).
pub fn name(sig: i32) -> String {
    match Signal::try_from(sig) {
        Ok(s) => s.as_str().to_string(),
        Err(_) => format!("SIG{sig}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_fallback() {
        assert_eq!(name(libc::SIGKILL), "SIGKILL");
        assert_eq!(name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(name(libc::SIGWINCH), "SIGWINCH");
        assert_eq!(name(libc::SIGRTMIN() + 2), format!("SIG{}", libc::SIGRTMIN() + 2));
    }
}
