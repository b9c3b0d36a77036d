//! The zygote below the Launcher: a path a hostile command can only reach
//! by a lucky race (the code holding a stopped zygote unwinds), driven here
//! on purpose.

use super::Zygote;

#[test]
fn a_zygote_dropped_without_end_is_killed_and_reaped() {
    // As when the code holding it unwinds: a stopped zygote must not be
    // left behind.
    let zygote = Zygote::spawn().expect("zygote");
    let pid = zygote.pid;
    // SAFETY: kill(2) on the test's own child, not yet reaped.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    drop(zygote);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the zygote {pid} outlived its handle"
    );
}
