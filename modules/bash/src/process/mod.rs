//! Processes: starting a command under a subreaper and ending its whole tree.

pub mod reaper;
pub mod signals;
pub mod spawn;
pub mod tree;
