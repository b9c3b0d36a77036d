//! Session ids: what a call's module keys per-session state by (files read
//! before a write, background jobs). An MCP HTTP session is its own
//! session; everything else a process serves (one `toolhost call`, one
//! `batch`, one stdio MCP client) is one session: this process's.

use std::sync::OnceLock;

/// This process's session id: `proc-<pid>-<random>`, made once. The random
/// part keeps ids unique when pids are reused.
pub fn process() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut bytes = [0u8; 8];
        // Without randomness the pid alone still separates live processes.
        let _ = getrandom::fill(&mut bytes);
        let random: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("proc-{}-{random}", std::process::id())
    })
}

/// The session id of an MCP HTTP session.
pub fn http(mcp_session_id: &str) -> String {
    format!("http-{mcp_session_id}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_process_session_is_stable_and_named() {
        assert_eq!(super::process(), super::process());
        assert!(super::process().starts_with(&format!("proc-{}-", std::process::id())));
        assert_eq!(super::http("abc"), "http-abc");
    }
}
